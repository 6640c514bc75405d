"""The Reference pages, written from the code at every build: nothing in them is typed twice.

- ``api``: :data:`ordercube.__all__`, each name documented from its docstring (autodoc + numpydoc);
- ``plugin``: :data:`ordercube.plugin.__all__`, the same way;
- ``cli``: every command, argument and flag of the parser the ``ordercube`` command runs;
- ``config``: every key of a config file, from the sets and declared ranges the config reader checks against;
- ``algorithms``, ``criteria``, ``predictors``, ``datasets``, ``schemes``: every record of the registries (with what
  installed plug-ins register), its capabilities, its parameters and their declared ranges, and the docstring that
  cites it.

Each ``render_*`` function returns a page's reStructuredText; :func:`write_pages` writes them into
``docs/reference/`` when Sphinx starts (``builder-inited``), beside the committed ``index.md``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parent.parent / "reference"


# --------------------------------------------------------------------------------------------------- helpers
def _title(text: str, mark: str = "=") -> list[str]:
    return [text, mark * max(len(text), 3), ""]


def _literal(value: Any) -> str:
    """A default as a config writes it (``null``, ``true``, ``"rows"``, ``[1, 2]``), else as Python shows it."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return f"``{text}``"


def _list_table(header: list[str] | None, rows: Iterable[list[str]], widths: str = "auto") -> list[str]:
    rows = list(rows)
    if not rows:
        return []
    lines = [".. list-table::", f"   :header-rows: {0 if header is None else 1}", f"   :widths: {widths}", ""]
    if header is None:
        lines.insert(2, "   :stub-columns: 1")
    for row in ([] if header is None else [header]) + rows:
        lines.append(f"   * - {_cell(row[0])}")
        lines.extend(f"     - {_cell(cell)}" for cell in row[1:])
    return lines + [""]


def _cell(text: str) -> str:
    return " ".join(str(text).split()) or "\\-"


def _resolve(function: Any) -> Any:
    """The function a registry holds, or for a kernel imported on first use (``Deferred``) the one it names."""
    target = getattr(function, "target", None)
    if isinstance(target, str) and ":" in target:
        module, _, name = target.partition(":")
        try:
            return getattr(import_module(module), name)
        except Exception:  # a kernel whose module does not import here: its docstring is not shown
            return None
    return getattr(function, "func", function)  # functools.partial


def _first_paragraph(function: Any) -> str:
    """The first paragraph of a function's docstring (where the registered kernels cite their paper)."""
    resolved = _resolve(function)
    doc = inspect.getdoc(resolved) if resolved is not None else None
    if not doc or resolved is None or getattr(resolved, "__doc__", None) is None:
        return ""
    if inspect.getdoc(type(resolved)) == doc:  # an instance without a docstring of its own
        return ""
    return _pipes(doc.split("\n\n", 1)[0].strip())


def _pipes(text: str) -> str:
    """A docstring's ``|`` outside inline literals escaped: plain text there (``|t|``), not a substitution."""
    parts = text.split("``")
    return "``".join(part if i % 2 else part.replace("|", "\\|") for i, part in enumerate(parts))


def _escape(text: str) -> str:
    return text.replace("*", "\\*").replace("|", "\\|").replace("`", "\\`")


def _param_rows(defaults: Mapping[str, Any], ranges: Mapping[str, Any]) -> list[list[str]]:
    names = list(defaults) + [name for name in ranges if name not in defaults]
    return [[f"``{name}``", _literal(defaults[name]) if name in defaults else "(required)",
             _escape(ranges[name].describe()) if name in ranges else "(checked by the record itself)"]
            for name in names]


def _label(kind: str, name: str) -> str:
    return f"{kind}-{name}".lower().replace("_", "-").replace(".", "-")


def _record_head(kind: str, name: str, underline: str) -> list[str]:
    """A record's anchor (``kind-name``), its title and, for a plug-in's record, the plug-in that added it."""
    return [f".. _{_label(kind, name)}:", "", *_title(name, underline), *_added_by(kind, name)]


def _added_by(kind: str, name: str) -> list[str]:
    """``Added by <plug-in>.`` for a record an installed plug-in registered, else nothing."""
    from ordercube.tasks import plugins

    owners = [plugin for plugin in plugins.loaded() if f"{kind} {name}" in plugin.registered]
    return [f"Added by the {_escape(str(owners[0]))}.", ""] if owners else []


def load_plugins() -> None:
    """Register what installed plug-ins add (entry-point group ``ordercube.plugins`` and ``ORDERCUBE_PLUGINS``)."""
    from ordercube.pipeline.data import formats  # noqa: F401  (ordercube's own readers, before any plug-in's)
    from ordercube.tasks import plugins

    plugins.load()


# --------------------------------------------------------------------------------------------------- API
def render_api(module_name: str = "ordercube", title: str = "Python API") -> str:
    """One autodoc entry per name of ``module.__all__``, in its order."""
    module = import_module(module_name)
    lines = _title(title)
    lines += [f".. module:: {module_name}", "   :no-index:", "",
              f"Every name of ``{module_name}.__all__``, documented from its docstring. The module's own introduction:",
              ""]
    intro = inspect.getdoc(module) or ""
    lines += [*intro.splitlines(), "", ".. currentmodule:: " + module_name, ""]
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value):
            directive = "autoexception" if issubclass(value, BaseException) else "autoclass"
            options = ["   :members:"] if not issubclass(value, BaseException) else []
        elif callable(value):
            directive, options = "autofunction", []
        else:
            directive, options = "autodata", ["   :annotation:"]
        lines += [f".. {directive}:: {name}", *options, ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------- CLI
def cli_parser() -> argparse.ArgumentParser:
    """The parser the ``ordercube`` command runs."""
    from ordercube.pipeline import cli

    return cli._parser()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return {}


def _arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [action for action in parser._actions
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))]


def _option_text(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest.upper()
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar or action.dest.upper()
    return ", ".join(f"{option} {metavar}" for option in action.option_strings)


def _describe(action: argparse.Action) -> str:
    text = action.help or ""
    if action.choices is not None and not isinstance(action.choices, dict):
        text += f" (one of: {', '.join(map(str, action.choices))})"
    if action.required and action.option_strings:
        text += " (required)"
    if action.nargs == 0 or action.default in (None, [], argparse.SUPPRESS) or "default" in text:
        return text
    return text + f" (default: {action.default})"


def render_cli(parser: argparse.ArgumentParser | None = None) -> str:
    """Every command of the parser with its usage, arguments and flags."""
    parser = parser or cli_parser()
    lines = _title("Command line")
    from ordercube.pipeline import cli

    exits = [paragraph for paragraph in (inspect.getdoc(cli) or "").split("\n\n") if paragraph.startswith("Exit codes")]
    lines += [_escape(parser.description or ""), "", *exits, "",
              f"How to use them is in :doc:`the guide <../guide/cli>`. Run ``{parser.prog} COMMAND --help`` for "
              "the same text in a terminal.", ""]
    top = [action for action in _arguments(parser) if action.option_strings]
    if top:
        lines += [".. program:: " + parser.prog, ""]
        for action in top:
            lines += [f".. option:: {_option_text(action)}", "", f"   {_escape(_describe(action))}", ""]
    for name, (sub, help_text) in _subcommands(parser).items():
        prog = f"{parser.prog} {name}"
        lines += [f".. _cli-{name}:", "", *_title(prog, "-")]
        lines += [_escape(help_text).rstrip(".") + ".", "", ".. code-block:: text", ""]
        lines += ["   " + line for line in sub.format_usage().strip().splitlines()] + [""]
        lines += [f".. program:: {prog}", ""]
        for action in _arguments(sub):
            lines += [f".. option:: {_option_text(action)}", "", f"   {_escape(_describe(action)) or '(positional)'}", ""]
            exclusive = [group for group in sub._mutually_exclusive_groups if action in group._group_actions]
            if exclusive:
                others = [other.option_strings[0] for other in exclusive[0]._group_actions if other is not action]
                lines += [f"   Not with {', '.join(f'``{other}``' for other in others)}.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------- config
def config_schema() -> dict[str, Any]:
    """The keys a config accepts, where they go and the values declared for them, read from the config reader."""
    from ordercube.pipeline.config import adaptive, study
    from ordercube.pipeline.config import dataspec
    from ordercube.tasks.adaptive import MODES
    from ordercube.tasks.criteria.base import ADJUSTABLE, DECISION_RANGES
    from ordercube.tasks.preprocess import STEPS

    dataset_keys = _dataset_keys(dataspec)
    return {
        "steps": dict(STEPS),
        "modes": list(MODES),
        "decision": dict(DECISION_RANGES),
        "adjustable": dict(ADJUSTABLE),
        "top": sorted(study.TOP_KEYS),
        "methods": sorted(study.METHOD_KEYS),
        "datasets": dataset_keys,
        "table": sorted(dataspec.TABLE_KEYS),
        "execution": dict(study.EXECUTION),
        "adaptive": list(adaptive.KEYS),
    }


def _dataset_keys(dataspec: Any) -> list[str]:
    """The keys a dataset entry accepts: the set ``dataset_spec`` checks an entry against, read from the
    error it raises for a key no entry may have (so this list follows the reader, whatever its form)."""
    from pathlib import Path as _Path

    from ordercube.pipeline.errors import ConfigError

    try:
        dataspec.dataset_spec({"name": "probe", "\u0000": 1}, 0, None, _Path("."), (2,))
    except ConfigError as error:  # one error, or several at once (one line each)
        found = re.search(r"unknown key; expected one of \[([^\]]*)\]", str(error))
        if found:
            return [item.strip().strip("'\"") for item in found.group(1).split(",") if item.strip()]
    return sorted({"name", "kind", "params", "n", "true_k", "learning", "sweep", "nodes", "format",
                   *dataspec.TABLE_KEYS})


def _config_defaults() -> list[str] | None:
    """What a config that omits a key gets, from the module that fills it in (its docstring and values)."""
    try:
        defaults = import_module("ordercube.pipeline.config.defaults")
    except ImportError:  # a version of the reader without defaults: every key is required
        return None
    lines = (inspect.getdoc(defaults) or "").splitlines()
    values = [(name, getattr(defaults, name)) for name in ("RESAMPLES", "CLUSTERING_CRITERIA")
              if hasattr(defaults, name)]
    if values:
        lines += ["", *_list_table(["value", "is"], [[f"``{name}``", _literal(value)] for name, value in values])]
    return lines


def render_config() -> str:
    schema = config_schema()
    lines = _title("Config file")
    lines += ["Every key a config (YAML, or a dict given to :func:`ordercube.sweep`) may hold, read from the sets and",
              "declared ranges the config reader checks against; an unknown key is refused with the list below.",
              "What each key means, with examples, is in :doc:`the guide <../guide/config>`.", ""]
    sections = [
        ("Top level", "config-top", schema["top"], ""),
        ("Each entry of ``datasets``", "config-datasets", schema["datasets"],
         "``kind`` is a registered dataset kind (:doc:`datasets`), ``file`` or ``memory``; the reading options "
         f"({', '.join(f'``{key}``' for key in schema['table'])}) apply to files and arrays."),
        ("Each entry of ``methods``", "config-methods", schema["methods"],
         "``algorithm`` names a registered algorithm (:doc:`algorithms`) whose ``params`` are checked against its "
         "declared ranges; ``predictor`` one of :doc:`predictors`; ``criteria`` a list of :doc:`criteria` names, "
         "each optionally with its options (``{gap: {references: 50}}``)."),
        ("``adaptive`` (top level or per method)", "config-adaptive", schema["adaptive"],
         "The adaptive resampling rule; see :doc:`the guide <../guide/adaptive>`."),
    ]
    for heading, label, keys, note in sections:
        lines += [f".. _{label}:", "", *_title(heading, "-")]
        if note:
            lines += [note, ""]
        lines += [", ".join(f"``{key}``" for key in keys), ""]
    lines += [".. _config-execution:", "", *_title("``execution``", "-"),
              "How the work is cut up (it changes no value of the cube).", ""]
    lines += _list_table(["key", "accepts"], [[f"``{name}``", _escape(param.describe())]
                                              for name, param in schema["execution"].items()])
    defaults = _config_defaults()
    if defaults is not None:
        lines += [".. _config-defaults:", "", *_title("Keys a config may omit", "-"), *defaults, ""]
    lines += [f"``adaptive.mode`` is one of {', '.join(f'``{mode}``' for mode in schema['modes'])}.", ""]
    lines += [".. _config-preprocess:", "", *_title("``preprocess`` steps", "-"),
              "The steps a dataset's ``preprocess`` list may name, in order, each with its parameters' declared ranges.",
              ""]
    rows = []
    for name, step in schema["steps"].items():
        defaults = step.defaults
        for parameter, param in step.ranges.items():
            default = "(required)" if parameter in step.required else \
                (_literal(defaults[parameter]) if parameter in defaults else "\\-")
            rows.append([f"``{name}``", f"``{parameter}``", default, _escape(param.describe())])
        if not step.ranges:
            rows.append([f"``{name}``", "\\-", "\\-", "takes no parameters"])
    lines += _list_table(["step", "parameter", "default", "accepts"], rows)
    lines += [".. _config-decision:", "", *_title("Decision rules", "-"),
              "The fields of a criterion's decision rule that ``ordercube report --decide CRITERION.FIELD=VALUE`` "
              "(and the reducers' ``decide``) may change, per rule, and the values each accepts.", ""]
    lines += _list_table(["rule", "fields"], [[f"``{rule}``", ", ".join(f"``{field}``" for field in fields) or "\\-"]
                                              for rule, fields in schema["adjustable"].items()])
    lines += _list_table(["field", "accepts"], [[f"``{field}``", _escape(param.describe())]
                                                for field, param in schema["decision"].items()])
    lines += ["The parameters of each algorithm, criterion and dataset kind are on their own pages: "
              ":doc:`algorithms`, :doc:`criteria`, :doc:`datasets`.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------- registries
def registries() -> dict[str, dict[str, Any]]:
    """The registries, after the installed plug-ins have registered."""
    load_plugins()
    from ordercube.tasks.plugins import registries as _registries

    return _registries()


def _kernels(record: Any) -> list[Any]:
    """The callables of a record that carry its docstrings, the kernel first."""
    names = ["cluster", "fit", "cluster_many", "classify", "fit_orders", "evaluate", "evaluate_trial", "sample"]
    found = [getattr(record, name, None) for name in names]
    found += [value for key, value in sorted(vars(record).items()) if key not in names and key != "check"
              and callable(value) and not isinstance(value, type)] if hasattr(record, "__dict__") else []
    return [value for value in found if value is not None]


YEAR = re.compile(r"\b(19|20)\d\d\b")


def _paragraphs(doc: str | None) -> list[str]:
    """A docstring's plain paragraphs (no section headings, examples or literal blocks), dedented."""
    found = []
    for paragraph in (doc or "").split("\n\n"):
        paragraph = textwrap.dedent(paragraph).strip()
        lines = paragraph.splitlines()
        if not paragraph or any(set(line.strip()) <= set("-=~^") and line.strip() for line in lines) or \
                any(line.lstrip().startswith(">>>") for line in lines) or paragraph.endswith("::"):
            continue
        found.append(_pipes(paragraph))
    return found


def _citation(record: Any) -> list[str]:
    """What a record's kernel does (the first paragraph of its docstring) and the paragraph that cites its paper:
    the first one with a year in the kernels' docstrings, then their modules', then the record type's."""
    kernels = [_resolve(kernel) for kernel in _kernels(record)]
    kernels += [_resolve(function) for function in getattr(record, "computations", {}).values()]
    kernels = [kernel for kernel in kernels if kernel is not None]
    first = next((text for text in map(_first_paragraph, kernels) if text), "")
    sources = [kernel.__doc__ for kernel in kernels]
    sources += [getattr(sys.modules.get(getattr(kernel, "__module__", "") or ""), "__doc__", None) for kernel in kernels]
    sources.append(type(record).__doc__)
    cited = next((paragraph for doc in sources for paragraph in _paragraphs(inspect.cleandoc(doc) if doc else "")
                  if YEAR.search(paragraph)), "")
    return [text for text in dict.fromkeys([first, cited]) if text]


def render_algorithms(records: Mapping[str, Any] | None = None) -> str:
    records = records if records is not None else registries()["algorithm"]
    lines = _title("Algorithms")
    lines += ["Every registered algorithm (``methods[].algorithm``), with what it takes, needs and gives and its",
              "parameters' declared ranges (``methods[].params``).", ""]
    lines += _list_table(["algorithm", "kind", "takes", "gives"],
                         [[f":ref:`{name} <{_label('algorithm', name)}>`", _escape(record.kind), record.takes,
                           ", ".join(record.gives) or "\\-"] for name, record in records.items()])
    for name, record in records.items():
        lines += _record_head("algorithm", name, "-")
        for paragraph in _citation(record):
            lines += [paragraph, ""]
        facts = [["kind", _escape(record.kind)], ["takes", f"``{record.takes}``"],
                 ["needs", ", ".join(f"``{need}``" for need in record.needs) or "\\-"],
                 ["gives", ", ".join(f"``{give}``" for give in record.gives) or "\\-"],
                 ["needs a predictor", "yes" if record.needs_predictor else "no"]]
        matched = getattr(record, "predictor", None)  # the predictor a method gets when its config names none
        if matched:
            facts.append(["matched predictor", f":ref:`{matched} <{_label('predictor', matched)}>`"])
        if record.max_features is not None:
            facts.append(["at most features", str(record.max_features)])
        if record.variants:
            facts.append(["variants (objects)", ", ".join(f"``{objects}``" for objects in record.variants)])
        lines += _list_table(None, facts)
        rows = _param_rows(record.defaults, record.ranges)
        lines += ["Parameters:", "", *_list_table(["parameter", "default", "accepts"], rows)] if rows else \
            ["It takes no parameters.", ""]
    return "\n".join(lines)


def render_criteria(records: Mapping[str, Any] | None = None) -> str:
    records = records if records is not None else registries()["criterion"]
    lines = _title("Criteria")
    lines += ["Every registered criterion (``methods[].criteria``), with what it reads and needs, its decision rule,",
              "the cube variables it stores and its options' declared ranges.", ""]
    lines += _list_table(["criterion", "reads", "decision", "description"],
                         [[f":ref:`{name} <{_label('criterion', name)}>`", record.reads, record.decision.rule,
                           _escape(record.description)] for name, record in records.items()])
    for name, record in records.items():
        lines += [*_record_head("criterion", name, "-"),
                  _escape(record.description), ""]
        for paragraph in _citation(record):
            lines += [paragraph, ""]
        decision = record.decision
        rule = decision.rule + "".join(f", {field} {getattr(decision, field)}" for field in
                                       ("threshold", "method", "se_factor", "p_max", "d_min")
                                       if getattr(decision, field) is not None)
        facts = [["reads", f"``{record.reads}``"], ["decision", _escape(rule)], ["smallest k", str(record.min_k)],
                 ["stores", ", ".join(f"``{variable}``" for variable in record.variables)]]
        if record.algorithms:
            facts.append(["only for", ", ".join(f"``{algorithm}``" for algorithm in record.algorithms)])
        if record.computations:
            facts.append(["computed for", ", ".join(f"``{algorithm}``" for algorithm in record.computations)])
        if record.models:
            facts.append(["reads models", ", ".join(f"``{model}``" for model in record.models)])
        if record.needs_data:
            facts.append(["needs of the data", ", ".join(f"``{need}``" for need in record.needs_data)])
        flags = [flag for flag in ("needs_evaluation_sample", "normalised_by_random_labels", "needs_paired_halves",
                                   "oracle", "needs_coordinates", "sqrt_n_scaling") if getattr(record, flag, False)]
        if flags:
            facts.append(["declares", ", ".join(f"``{flag}``" for flag in flags)])
        lines += _list_table(None, facts)
        rows = _param_rows(record.options, record.ranges)
        lines += ["Options:", "", *_list_table(["option", "default", "accepts"], rows)] if rows else \
            ["It takes no options.", ""]
    return "\n".join(lines)


def render_predictors(records: Mapping[str, Any] | None = None) -> str:
    from ordercube.tasks.predictors import predictor_takes

    records = records if records is not None else registries()["predictor"]
    lines = _title("Predictors")
    lines += ["Every registered predictor (``methods[].predictor``): the extension operator that transfers a",
              "clustering solution to new objects, and the objects it reads.", ""]
    for name, predictor in records.items():
        lines += [*_record_head("predictor", name, "-"),
                  f"Reads: ``{predictor_takes(name)}``.", ""]
        text = _first_paragraph(predictor)
        if text:
            lines += [text, ""]
    return "\n".join(lines)


def _opens(name: str, reader: Any) -> str:
    """What a reader opens, for the readers' table: its suffixes and whether its first bytes are recognised."""
    if not reader.suffixes:
        return f"``kind: {name}``, or ``reader: {name}``"
    suffixes = ", ".join(f"``{suffix}``" for suffix in reader.suffixes)
    return f"{suffixes}, or by its first bytes" if reader.sniff is not None else suffixes


def render_datasets(records: Mapping[str, Any] | None = None, objects: Mapping[str, Any] | None = None) -> str:
    from ordercube.pipeline.data.catalog import registry as catalog
    from ordercube.pipeline.config.dataspec import TABLE_KINDS
    from ordercube.tasks.datasets.matrices import MATRIX_KINDS, MATRIX_PROVIDES

    every = registries()
    records = records if records is not None else every["dataset"]
    objects = objects if objects is not None else every["objects"]
    lines = _title("Datasets")
    lines += ["The dataset kinds a config's ``datasets[].kind`` may name: the registered generators, the matrix",
              f"kinds ({', '.join(f'``{kind}``' for kind in MATRIX_KINDS)}), and data read from a table "
              f"({', '.join(f'``{kind}``' for kind in TABLE_KINDS)}); then the kinds of objects and the catalog",
              "of the papers' datasets.", ""]
    lines += [".. _datasets-generators:", "", *_title("Generators", "-")]
    for name, record in records.items():
        lines += _record_head("dataset", name, "~")
        for paragraph in _citation(record):
            lines += [paragraph, ""]
        try:
            provides = ", ".join(f"``{item}``" for item in record.provides(dict(record.defaults))) or "\\-"
        except Exception:  # provisions that need a required parameter
            provides = "(depends on its parameters)"
        lines += _list_table(None, [["objects", f"``{record.objects}``"], ["provides (defaults)", provides],
                                         ["required", ", ".join(f"``{p}``" for p in record.required) or "\\-"],
                                         ["optional", ", ".join(f"``{p}``" for p in record.optional) or "\\-"]])
        if record.defaults:
            lines += ["Parameters:", ""]
            lines += _list_table(["parameter", "default"], [[f"``{key}``", _literal(value)]
                                                            for key, value in record.defaults.items()])
    lines += [".. _datasets-matrices:", "", *_title("Matrix kinds", "-")]
    lines += _list_table(["kind", "provides"], [[f"``{kind}``", ", ".join(f"``{p}``" for p in MATRIX_PROVIDES.get(kind, ()))
                                                 or "\\-"] for kind in MATRIX_KINDS])
    lines += [".. _datasets-readers:", "", *_title("File readers", "-"),
              "The readers a ``kind: file`` dataset is read with: the entry's ``reader:``, else the one claiming the",
              "file's suffix, else the one recognising its first bytes; a reader without suffixes reads the kind of",
              "its name. The options are the dataset-entry keys each reads.", ""]
    readers = every["reader"]
    lines += _list_table(["reader", "opens", "options", "objects", "needs", "what"],
                         [[f"``{name}``", _opens(name, reader),
                           ", ".join(f"``{option}``" for option in reader.options) or "\\-", f"``{reader.objects}``",
                           _escape(reader.requires), _escape(reader.description)]
                          for name, reader in sorted(readers.items())])
    lines += [".. _datasets-objects:", "", *_title("Kinds of objects", "-")]
    lines += _list_table(["objects", "a dataset of them", "comes from"],
                         [[f"``{name}``", _escape(kind.dataset), _escape(kind.source)] for name, kind in objects.items()])
    lines += [".. _datasets-catalog:", "", *_title("Catalog", "-"),
              "The papers' datasets, named in a config as ``path: catalog:DATASET/FILE``.", ""]
    for name, entry in catalog().items():
        lines += [f".. _{_label('catalog', name)}:", "", *_title(name, "~"), _escape(str(entry.get("title", ""))), ""]
        if entry.get("citation"):
            lines += [_escape(" ".join(str(entry["citation"]).split())), ""]
        files = entry.get("files") or {}
        if files:
            lines += ["Files: " + ", ".join(f"``{file}``" for file in files), ""]
    return "\n".join(lines)


def _module_paragraphs(function: Any) -> list[str]:
    """The plain paragraphs of the docstring of the module a (deferred) function lives in: a scheme's module
    describes its draws and streams there."""
    resolved = _resolve(function)
    module = sys.modules.get(getattr(resolved, "__module__", "") or "") if resolved is not None else None
    return [" ".join(paragraph.split()) for paragraph in (_paragraphs(inspect.getdoc(module)) if module else [])]


def render_schemes(records: Mapping[str, Any] | None = None) -> str:
    records = records if records is not None else registries()["scheme"]
    lines = _title("Schemes")
    lines += ["Every registered resampling scheme of clusterers (``methods[].scheme``; the default is ``halves``): how a",
              "trial draws its items and fits them, what its trials give the criteria, the clusterings (parts) each",
              "trial stores per k, and its parameters' declared ranges (``methods[].scheme_params``).", ""]
    lines += _list_table(["scheme", "gives", "description"],
                         [[f":ref:`{name} <{_label('scheme', name)}>`", ", ".join(record.gives) or "\\-",
                           _escape(record.description)] for name, record in records.items()])
    for name, record in records.items():
        lines += [*_record_head("scheme", name, "-"), _escape(record.description), ""]
        for paragraph in dict.fromkeys([*_module_paragraphs(record.runner), _first_paragraph(record.runner)]):
            if paragraph:
                lines += [paragraph, ""]
        defaults = dict(record.defaults)
        facts = [["gives", ", ".join(f"``{give}``" for give in record.gives) or "\\-"],
                 ["parts (with its defaults)", ", ".join(f"``{role}``" for role in record.part_roles(defaults))],
                 ["fits per trial and k (with its defaults)", f"{record.fits(defaults):g} x one fit of n points"]]
        if record.citation:
            facts.append(["citation", _escape(record.citation)])
        lines += _list_table(None, facts)
        rows = _param_rows(record.defaults, record.ranges)
        lines += ["Parameters:", "", *_list_table(["parameter", "default", "accepts"], rows)] if rows else \
            ["It takes no parameters.", ""]
    return "\n".join(lines)


PAGES: dict[str, Callable[[], str]] = {
    "api": render_api,
    "plugin": lambda: render_api("ordercube.plugin", "Plug-in API"),
    "cli": render_cli,
    "config": render_config,
    "algorithms": render_algorithms,
    "criteria": render_criteria,
    "predictors": render_predictors,
    "datasets": render_datasets,
    "schemes": render_schemes,
}


def write_pages(folder: Path = FOLDER) -> list[Path]:
    """Every generated page written into ``folder`` (only when its text changed, so Sphinx rebuilds what did)."""
    written = []
    for name, render in PAGES.items():
        path = folder / f"{name}.rst"
        text = render().rstrip() + "\n"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


def _on_builder_inited(app: Any) -> None:
    write_pages(Path(app.srcdir) / "reference")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
