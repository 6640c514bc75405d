"""``index.html``: the whole report in one self-contained page that opens from disk, with no server and no
network (figures embedded as data URIs, styles inline, no external script).

Sections: the k̂ table with its intervals and flags (the published k̂ beside ours where the config quotes
one for the same data), what each raised flag means, the paper's values beside the cube's (and why any are
not shown), the cells without a value, what the report's sections show (:mod:`ordercube.pipeline.report.section`: a
title and an HTML fragment each), every figure, a drill-down per (dataset,
method) with each n's per-k means ± SE and the share of trials choosing each k, and the config with the
cube's provenance. A figure that fails to load says so in the page (the script that checks it also marks
each image ``data-loaded``, which the browser test reads).
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.files.outputs import write_output
from ordercube.pipeline.reduce.uncertainty import LEVEL
from ordercube.pipeline.report.published import Published
from ordercube.pipeline.report.section import SectionResult
from ordercube.pipeline.report.within_noise import SHOWN_FLAGS
from ordercube.pipeline.report.values import section_tables

PAGE = "index.html"
MIME = {".png": "image/png", ".svg": "image/svg+xml"}
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; overflow-wrap: anywhere; }
th { background: #f2f2f2; } td.text { text-align: left; }
tr.flagged td { background: #fff5e0; } .flag { color: #a04000; font-weight: 600; }
.differs { color: #b00020; font-weight: 600; }
img { max-width: 100%; height: auto; box-sizing: border-box; border: 1px solid #ddd; margin: 0.3em 0 1.2em; }
.missing-figure { color: #b00020; font-weight: 600; }
details { margin: 0.4em 0; } summary { cursor: pointer; font-weight: 600; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 12px; }
"""
# Marks each image loaded (with its natural width) or names the one that failed, in the page itself.
# An image that failed before this script ran fires no error event for it: it is complete with no width, and is
# named then (once), as one that fails later is by its error event.
SCRIPT = """
for (const image of document.images) {
  const failed = () => { if (image.dataset.loaded === "no") return; image.dataset.loaded = "no";
    image.insertAdjacentHTML("afterend", '<p class="missing-figure">this figure could not be shown</p>'); };
  const mark = () => { if (image.naturalWidth === 0) return failed();
                       image.dataset.loaded = "yes"; image.dataset.width = image.naturalWidth; };
  image.addEventListener("load", mark);
  image.addEventListener("error", failed);
  if (image.complete) mark();
}
"""


def _cell(value: Any, *, text: bool = False, css: str = "") -> str:
    classes = " ".join(c for c in ("text" if text else "", css) if c)
    return f"<td{f' class={chr(34)}{classes}{chr(34)}' if classes else ''}>{html.escape(str(value))}</td>"


def _table(frame: pd.DataFrame, *, table_id: str, text_columns: Sequence[str] = (), row_classes: Sequence[str] = (),
           cell_classes: Mapping[tuple[int, str], str] | None = None) -> str:
    """``frame`` as an HTML table; ``cell_classes[(row, column)]`` styles single cells."""
    cell_classes = cell_classes or {}
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in frame.columns)
    rows = []
    for i, row in enumerate(frame.itertuples(index=False)):
        css = row_classes[i] if i < len(row_classes) else ""
        cells = "".join(_cell(value, text=column in text_columns, css=cell_classes.get((i, column), ""))
                        for column, value in zip(frame.columns, row))
        rows.append(f"<tr{f' class={chr(34)}{css}{chr(34)}' if css else ''}>{cells}</tr>")
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _selection(table: pd.DataFrame, shown: pd.DataFrame, published: Mapping[str, Mapping[str, Any]]) -> str:
    """The k̂ table; with the paper's k̂ beside ours (in red where they differ) when the config quotes them."""
    shown = shown.copy()
    differs: dict[tuple[int, str], str] = {}
    if published:
        quoted = [published.get(f"{row.dataset}/{row.method}", {}).get(row.criterion) for row in table.itertuples()]
        quoted = [q if isinstance(q, int) else None for q in quoted]  # a classifier's {N, R}: in Table 1's layout
        shown.insert(shown.columns.get_loc("k̂") + 1, "published", ["" if q is None else q for q in quoted])
        differs = {(i, "k̂"): "differs" for i, (q, k) in enumerate(zip(quoted, table["k_hat"])) if q is not None and q != k}
    flagged = ["flagged" if any(bool(getattr(row, flag)) for flag in SHOWN_FLAGS) else "" for row in table.itertuples()]
    return _table(shown, table_id="selection", text_columns=("dataset", "method", "criterion", "within noise", "flags"),
                  row_classes=flagged, cell_classes=differs)


def _figure(path: Path) -> str:
    if path.suffix not in MIME:  # PDF: not shown by an <img>; the file is beside the page
        return f'<p><a href="{html.escape(path.name)}">{html.escape(path.name)}</a> (PDF, beside this page)</p>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<h3 id="{html.escape(path.stem)}">{html.escape(path.stem)}</h3>'
            f'<img alt="{html.escape(path.stem)}" src="data:{MIME[path.suffix]};base64,{data}">')


def _drill_down(summary: xr.Dataset, frequency: xr.Dataset, criteria: Sequence[str]) -> str:
    """Per (dataset, method): each n's per-k mean ± SE of every criterion and the share of trials choosing k."""
    parts = []
    for dataset in map(str, summary["dataset"].values):
        for model in map(str, summary["model"].values):
            tables = []
            for n in summary["n"].values:
                at = {"dataset": dataset, "model": model, "n": n}
                columns: dict[str, list[str]] = {"k": [str(k) for k in summary["k"].values]}
                for name in criteria:
                    if f"{name}_mean" not in summary:
                        continue
                    mean, se = summary[f"{name}_mean"].sel(at).values, summary[f"{name}_se"].sel(at).values
                    if not np.isfinite(mean).any():
                        continue
                    columns[f"{name} mean ± SE"] = ["" if np.isnan(m) else f"{m:.4g} ± {s:.2g}" for m, s in zip(mean, se)]
                    if name in frequency:
                        share = frequency[name].sel(at).values
                        columns[f"{name}: share choosing k"] = ["" if np.isnan(v) else f"{v:.2f}" for v in share]
                if len(columns) > 1:
                    tables.append(f"<p>n = {n}</p>" + _table(pd.DataFrame(columns), table_id=f"drill-{dataset}-{model}-{n}"))
            if tables:
                parts.append(f"<details><summary>{html.escape(dataset)} / {html.escape(model)}</summary>{''.join(tables)}"
                             "</details>")
    return "".join(parts)


def _published_section(published: Published | None, rows: pd.DataFrame | None) -> list[str]:
    """The paper's values beside the cube's (``published.csv``'s rows), and why any are not shown."""
    if published is None or (rows is None and not published.hidden):
        return []
    parts = ["<h2>Published values beside this cube's</h2>"]
    if rows is not None and not rows.empty:
        shown = rows.assign(agrees=["" if value is None else "yes" if value else "no" for value in rows["agrees"]])
        differs = {(i, "cube"): "differs" for i, value in enumerate(rows["agrees"]) if value is False}
        parts.append(_table(shown, table_id="published", cell_classes=differs,
                            text_columns=("dataset", "method", "criterion", "quantity", "agrees")))
    if published.hidden:
        parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in published.hidden) + "</ul>")
    return parts


def write_html(out: Path, *, cube_attrs: Mapping[str, Any], table: pd.DataFrame, shown: pd.DataFrame,
               flag_notes: Sequence[str], missing: pd.DataFrame, figures: Sequence[str], summary: xr.Dataset,
               adaptive: pd.DataFrame | None = None, published: Published | None = None,
               published_table: pd.DataFrame | None = None,
               frequency: xr.Dataset, counts: Mapping[str, int], contributed: Sequence[SectionResult] = (),
               curves: pd.DataFrame | None = None) -> Path:
    """Write ``out/index.html`` from the report's pieces; ``figures``: the figure files' names, in order;
    ``published``: the paper's values shown (:mod:`ordercube.pipeline.report.published`) and ``published_table`` their rows;
    ``contributed``: what the report's sections returned, each shown under its title when it has an HTML fragment;
    ``curves``: the per-criterion figures' values (``curves.csv``), shown folded under the figures."""
    config = json.loads(cube_attrs.get("ordercube_config", "{}"))
    name = cube_attrs.get("ordercube_name", "cube")
    sections = [f"<h1>ordercube report: {html.escape(str(name))}</h1>",
                "<p>" + html.escape(", ".join(f"{key}: {value}" for key, value in counts.items())) + " planned cells</p>"]
    if table.empty:
        sections.append("<p>No k̂ to show: no model-order criterion has values in this cube.</p>")
    else:
        sections += [f"<h2>k̂ per group ({LEVEL:.0%} intervals)</h2>",
                     _selection(table, shown, published.values if published is not None else {})]
        sections += ["<ul>" + "".join(f'<li class="flag">{html.escape(note)}</li>' for note in flag_notes) + "</ul>"]
    sections += _published_section(published, published_table)
    if not missing.empty:
        sections += [f"<h2>Cells without a value ({int(missing['cells'].sum())})</h2>",
                     _table(missing, table_id="missing", text_columns=("dataset", "method", "status", "reason"))]
    if adaptive is not None and not adaptive.empty:
        sections += [f"<h2>Adaptive resampling: {int(adaptive.drop_duplicates(['dataset', 'n', 'method'])['cells'].sum())}"
                     f" of {int(adaptive.drop_duplicates(['dataset', 'n', 'method'])['budget'].sum())} cells</h2>",
                     "<p>Per group and criterion: the rule's stop (decided, settled, or unsettled at the budget), k̂, "
                     "the k's still in play, the look it stopped at, the group's cells against the fixed budget, the rule's "
                     "mode (t, guarded, strict), delta and epsilon. "
                     "Per-trial figures use the trials in which every k was computed.</p>",
                     _table(adaptive, table_id="adaptive", text_columns=("dataset", "method", "criterion", "reason",
                                                                         "in_play", "mode"))]
    sections += [f"<h2>{html.escape(result.title)}</h2>{result.html}" for result in contributed if result.html]
    sections.append("<h2>Figures</h2>")
    sections += [_figure(out / figure) for figure in figures]
    if curves is not None and not curves.empty:
        sections.append(section_tables([("curves.csv", "The values of the figures per criterion: per (dataset, n, "
                                         "method, variable, k) the mean, SE, median, quartiles, sqrt(n) x mean and the "
                                         "share of trials choosing k", curves)], folded=True))
    criteria = list(dict.fromkeys(table["criterion"])) if not table.empty else []
    sections += ["<h2>Per group</h2>", _drill_down(summary, frequency, criteria)]
    provenance = {key: value for key, value in cube_attrs.items() if key not in ("ordercube_config", "ordercube_plan")}
    sections += ["<h2>Config and provenance</h2>",
                 f"<details><summary>config</summary><pre>{html.escape(json.dumps(config, indent=2))}</pre></details>",
                 f"<details><summary>provenance</summary><pre>{html.escape(json.dumps(provenance, indent=2, default=str))}"
                 "</pre></details>"]
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>ordercube report: {html.escape(str(name))}'
            f"</title><style>{STYLE}</style></head><body>{''.join(sections)}<script>{SCRIPT}</script></body></html>")
    path = out / PAGE
    write_output(path, page)
    return path
