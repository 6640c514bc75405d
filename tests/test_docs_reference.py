"""The documentation's Reference is generated from the code, and docs/check_site.py catches a broken site.

The generator's functions (``docs/_ext/ordercube_reference.py``) are rendered directly, without a Sphinx
build (``.ci/run`` builds the whole site): each page must name exactly what the code holds at test time:
the registries (with a plug-in's registrations), the parser's commands and flags, ``__all__``, the config
reader's keys and every declared range.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import ordercube_reference as reference  # noqa: E402


def _sections(page: str, kind: str) -> dict[str, str]:
    """Each record's section of a generated page, by the name in its title."""
    parts = re.split(rf"^\.\. _{kind}-[^:]+:$", page, flags=re.M)[1:]
    sections = {}
    for part in parts:
        title = part.strip().splitlines()[0]
        sections[title] = part
    return sections


def test_the_registry_pages_list_exactly_the_registries_with_their_ranges():
    every = reference.registries()
    pages = {"algorithm": reference.render_algorithms(), "criterion": reference.render_criteria(),
             "predictor": reference.render_predictors(), "dataset": reference.render_datasets(),
             "scheme": reference.render_schemes()}
    for kind, page in pages.items():
        assert sorted(_sections(page, kind)) == sorted(every[kind]), kind
    algorithms = _sections(pages["algorithm"], "algorithm")
    for name, record in every["algorithm"].items():
        for parameter, declared in record.ranges.items():
            assert f"``{parameter}``" in algorithms[name] and reference._escape(declared.describe()) in algorithms[name]
        for capability in (record.takes, *record.gives, *record.needs):
            assert f"``{capability}``" in algorithms[name], (name, capability)
    criteria = _sections(pages["criterion"], "criterion")
    for name, record in every["criterion"].items():
        assert reference._escape(record.description) in criteria[name]
        assert f"``{record.reads}``" in criteria[name] and record.decision.rule in criteria[name]
        for option, declared in record.ranges.items():
            assert f"``{option}``" in criteria[name] and reference._escape(declared.describe()) in criteria[name]
    schemes = _sections(pages["scheme"], "scheme")
    assert {"halves", "consensus"} <= set(schemes)
    for name, record in every["scheme"].items():
        assert reference._escape(record.description) in schemes[name] and reference._escape(record.citation) in schemes[name]
        for give in record.gives:
            assert f"``{give}``" in schemes[name], (name, give)
        roles = ", ".join(f"``{role}``" for role in record.part_roles(dict(record.defaults)))
        assert re.search(rf"- parts \(with its defaults\)\n\s+- {re.escape(roles)}\n", schemes[name]), name
        for parameter, declared in record.ranges.items():
            assert f"``{parameter}``" in schemes[name] and reference._escape(declared.describe()) in schemes[name]
    assert "Monti, Tamayo, Mesirov & Golub 2003, Sec. 3" in schemes["consensus"]
    assert "- 0.8 x one fit of n points" in schemes["consensus"]
    # the citation comes from the docstrings: the kernel's (Lange et al.'s criterion), else its module's
    assert "Lange et al. (2002)" in criteria["lange"]
    assert "Tibshirani & Walther 2005" in criteria["prediction_strength"]
    from ordercube.tasks import plugins

    added = {entry.split(" ", 1)[1] for plugin in plugins.loaded() for entry in plugin.registered}  # not ours to cite
    uncited = [name for name, section in algorithms.items() if not reference.YEAR.search(section) and name not in added]
    assert uncited == [], f"algorithms whose docstrings cite no paper: {uncited}"


def test_the_datasets_page_lists_every_registered_reader_with_its_options():
    page = reference.render_datasets()
    table = page[page.index("File readers"):page.index(".. _datasets-objects:")]
    readers = reference.registries()["reader"]
    assert {"csv", "npy", "parquet", "mtx", "h5ad", "edge_list"} <= set(readers)
    for name, reader in readers.items():
        row = table[table.index(f"   * - ``{name}``"):]
        row = row[:row.index("   * - ", 5)] if "   * - " in row[5:] else row
        for suffix in reader.suffixes:
            assert f"``{suffix}``" in row, (name, suffix)
        for option in reader.options:
            assert f"``{option}``" in row, (name, option)


def test_a_plugins_registrations_appear_in_the_reference(tmp_path):
    (tmp_path / "demo_reference_plugin.py").write_text(textwrap.dedent('''
        import numpy as np
        from ordercube.plugin import Criterion, Scheme, number, register_criterion, register_predictor, register_scheme


        def first_label(X_train, labels, k, X_new):
            """Every new point gets the first training point's label (Nobody & Someone 2031, eq. 1)."""
            return np.full(len(X_new), labels[0])


        def constant(fits, *, weight=0.5):
            """A constant score, for the reference's test (Nobody & Someone 2031, eq. 2)."""
            return weight


        register_predictor("demo_first_label", first_label)
        register_criterion(Criterion(name="demo_constant", min_k=2, description="a constant for the test",
                                     evaluate=constant, options={"weight": 0.5},
                                     ranges={"weight": number(0.0, 1.0, low_open=True)}))
        register_scheme(Scheme(name="demo_jackknife", description="every item but one", runner=lambda *a: None,
                               gives=("assignments",), defaults={"share": 0.5},
                               ranges={"share": number(0.0, 1.0, low_open=True)},
                               part_roles=lambda params: ("data",) * 3, citation="Nobody & Someone (2031), eq. 3"))
    '''))
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import ordercube_reference as r; "
              "print(r.render_criteria()); print('@@'); print(r.render_predictors()); print('@@'); "
              "print(r.render_schemes())")
    env = {**__import__("os").environ, "ORDERCUBE_PLUGINS": "demo_reference_plugin",
           "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script, str(ROOT / "docs" / "_ext")], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    criteria, predictors, schemes = done.stdout.split("@@")
    section = _sections(criteria, "criterion")["demo_constant"]
    assert "a constant for the test" in section and "Nobody & Someone 2031, eq. 2" in section
    assert "Added by the plug-in module 'demo_reference_plugin' (named in ORDERCUBE_PLUGINS)" in section
    assert "``weight``" in section and "a finite number > 0 and <= 1" in section
    assert "Nobody & Someone 2031, eq. 1" in _sections(predictors, "predictor")["demo_first_label"]
    scheme = _sections(schemes, "scheme")["demo_jackknife"]
    assert "every item but one" in scheme and "Nobody & Someone (2031), eq. 3" in scheme
    assert "Added by the plug-in module 'demo_reference_plugin' (named in ORDERCUBE_PLUGINS)" in scheme
    assert "``data``, ``data``, ``data``" in scheme and "``share``" in scheme
    # and not in this process, where no plug-in is named
    assert "demo_constant" not in reference.render_criteria()
    assert "demo_jackknife" not in reference.render_schemes()


def _options_by_program(page: str) -> dict[str, set[str]]:
    programs: dict[str, set[str]] = {}
    current = None
    for line in page.splitlines():
        if line.startswith(".. program:: "):
            current = line.split(":: ", 1)[1]
            programs.setdefault(current, set())
        elif line.startswith(".. option:: ") and current is not None:
            for item in line.split(":: ", 1)[1].split(", "):
                programs[current].add(item.split(" ")[0])
    return programs


def test_the_cli_page_lists_every_command_argument_and_flag_of_the_parser():
    parser = reference.cli_parser()
    page = reference.render_cli(parser)
    documented = _options_by_program(page)
    expected = {"ordercube": {option for action in parser._actions if action.option_strings
                              and not isinstance(action, argparse._HelpAction) for option in action.option_strings}}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                expected[f"ordercube {name}"] = {
                    option for a in sub._actions if not isinstance(a, argparse._HelpAction)
                    for option in (a.option_strings or [a.metavar or a.dest.upper()])}
    assert len(expected) >= 6 and {"ordercube run", "ordercube report", "ordercube validate"} <= set(expected)
    assert {"ordercube": set(), **documented} == expected
    # a flag's help text is the parser's
    run = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    workers = next(a for a in run._actions if "--workers" in a.option_strings)
    assert " ".join(workers.help.split()) in page


def test_the_api_pages_document_every_name_of_all():
    import ordercube
    import ordercube.plugin

    for module in (ordercube, ordercube.plugin):
        page = reference.render_api(module.__name__)
        documented = re.findall(r"^\.\. auto(?:function|class|exception|data):: (\S+)$", page, flags=re.M)
        assert documented == list(module.__all__)


def test_the_config_page_lists_the_keys_the_reader_accepts_and_their_ranges():
    from ordercube.pipeline.config import dataspec, study
    from ordercube.pipeline.errors import ConfigError
    from ordercube.tasks.preprocess import STEPS

    schema = reference.config_schema()
    page = reference.render_config()
    assert set(schema["top"]) == study.TOP_KEYS and set(schema["methods"]) == study.METHOD_KEYS
    # the dataset keys are read from the reader's own refusal: each of them is accepted, a key beside them is not
    assert set(dataspec.TABLE_KEYS) < set(schema["datasets"])
    for key in [*schema["datasets"], "no_such_key"]:
        try:
            dataspec.dataset_spec({"name": "probe", key: None}, 0, None, Path("."), (2,))
        except ConfigError as error:
            assert (str(error).startswith(f"datasets[0].{key}: unknown key")) == (key == "no_such_key"), str(error)
    for key in (*schema["top"], *schema["datasets"], *schema["methods"], *schema["adaptive"]):
        assert f"``{key}``" in page
    for name, declared in study.EXECUTION.items():
        assert f"``{name}``" in page and reference._escape(declared.describe()) in page
    for name, step in STEPS.items():
        for parameter, declared in step.ranges.items():
            accepts = re.escape(reference._escape(declared.describe()))
            assert re.search(rf"``{name}``\n\s+- ``{parameter}``\n\s+- [^\n]+\n\s+- {accepts}", page), (name, parameter)


# ----------------------------------------------------------------------------------------- docs/check_site.py
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _site(folder: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<!doctype html><html><head><title>{name}</title></head><body>{body}</body></html>")
    return folder


def _check(site: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "docs" / "check_site.py"), str(site), *options],
                          capture_output=True, text=True, timeout=300)


def test_check_site_finds_broken_links_anchors_and_external_loads(tmp_path):
    good = _site(tmp_path / "good", {"index.html": '<a href="a/b.html#here">b</a><a href="https://example.org">out</a>',
                                     "a/b.html": '<h1 id="here">b</h1><a href="../index.html">back</a>'})
    done = _check(good, "--no-browser")
    assert done.returncode == 0, done.stderr
    assert "2 pages, 3 links (1 with an anchor)" in done.stdout
    bad = _site(tmp_path / "bad", {"index.html": '<a href="gone.html">x</a><a href="b.html#nowhere">y</a>'
                                                 '<script src="https://cdn.example.org/x.js"></script>'
                                                 '<img src="missing.png">',
                                   "b.html": '<p id="there">b</p>'})
    done = _check(bad, "--no-browser")
    assert done.returncode == 1
    problems = done.stderr.splitlines()[1:]
    assert len(problems) == 4, done.stderr
    assert any("'gone.html': no file" in line for line in problems)
    assert any("no id 'nowhere' in b.html" in line for line in problems)
    assert any("https://cdn.example.org/x.js" in line and "loads from the network" in line for line in problems)
    assert any("'missing.png': no file" in line for line in problems)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
def test_check_site_fails_a_page_that_logs_an_error_or_requests_the_network_in_chromium(tmp_path):
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
    good = _site(tmp_path / "good", {"index.html": f"<p>fine</p><img alt='dot' src='data:image/png;base64,{png}'>"
                                                   "<script>console.log('only a log')</script>"})
    done = _check(good)
    assert done.returncode == 0, done.stderr
    assert "1 pages loaded in chromium" in done.stdout
    # markup that passes the static pass, and fails only in the browser
    bad = _site(tmp_path / "bad", {"index.html": "<script>console.error('broken widget')</script>",
                                   "b.html": "<script>undefined_function()</script>",
                                   "c.html": "<script>fetch('https://cdn.example.org/font.woff2')</script>",
                                   "d.html": '<img alt="x" src="data:image/png;base64,bm90IGFuIGltYWdl">'})
    done = _check(bad)
    assert done.returncode == 1
    assert "index.html: console error: broken widget" in done.stderr
    assert "b.html: uncaught exception: ReferenceError: undefined_function is not defined" in done.stderr
    assert "c.html: requests https://cdn.example.org/font.woff2" in done.stderr
    assert "d.html: image not shown: data:image/png;base64,bm90IGFuIGltYWdl" in done.stderr
