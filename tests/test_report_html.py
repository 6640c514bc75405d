"""The HTML report opened in a real headless Chromium: it loads from disk without
console errors, its k̂ table matches selection.csv row for row, the paper's k̂ stands beside ours, and every
figure is present and non-blank, in the DOM the browser built and on a screenshot of the page. Laid out at a wide
and a narrow window, the consensus report's and the quickstart's pages show every figure whole (its shape that of
its PNG, inside its container) and no table, caption or figure runs past its container. That nothing drawn runs past
a figure's own edge is checked where it is drawn (``test_figure_labels``).

Needs Debian's ``chromium`` (``apt-get install chromium``; ``.ci/run`` installs it): skipped, saying so,
where it is absent.
"""

from __future__ import annotations

import base64
import io
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.config.study import data_digest, load_config
from ordercube.pipeline.reduce.uncertainty import FLAGS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
BROWSER_SECONDS = 120


class Page(HTMLParser):
    """The selection table's rows and every image's attributes, from the DOM Chromium serialised."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.header: list[str] = []
        self.images: list[dict[str, str]] = []
        self.missing_figures = 0
        self._in_selection = False
        self._cell: list[str] | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "table":
            self._in_selection = attributes.get("id") == "selection"
        elif tag == "img":
            self.images.append({key: value or "" for key, value in attrs})
        elif tag == "p" and attributes.get("class") == "missing-figure":
            self.missing_figures += 1
        elif self._in_selection and tag == "tr":
            self._row = []
        elif self._in_selection and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_selection = False
        elif self._in_selection and tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif self._in_selection and tag == "tr" and self._row is not None:
            (self.rows if self.header else self.header).extend([self._row] if self.header else self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _browser(*options: str, page) -> subprocess.CompletedProcess:
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
               "--v=0", "--virtual-time-budget=10000", *options, page.as_uri()]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=BROWSER_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish within {BROWSER_SECONDS} s: {' '.join(command)}")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html")
    config = small_config(n=[40, 80], resamples=8, seed=2)
    config["methods"][0]["criteria"] = ["lange", "pairwise", "prediction_strength"]
    path = write_config(folder / "c.yaml", **config)
    digest = data_digest(next(d for d in load_config(path).datasets if d.name == "gauss").identity)
    config["published"] = {"gauss/km": {"lange": 3, "prediction_strength": 2}, "data": {"gauss": digest}}
    path = write_config(folder / "c.yaml", **config)
    assert cli_in_process("run", str(path), "--out", str(folder / "c.zarr"), "--workers", "0",
                          "--no-progress").returncode == 0
    result = cli_in_process("report", str(folder / "c.zarr"), "--out", str(folder / "r"))
    assert result.returncode == 0, result.stderr
    return folder / "r"


def test_the_page_loads_without_console_errors_and_its_table_is_selection_csv(report):
    loaded = _browser("--dump-dom", page=report / "index.html")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    console = [line for line in loaded.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == [], console
    page = Page()
    page.feed(loaded.stdout)
    table = pd.read_csv(report / "selection.csv")
    assert len(page.rows) == len(table) > 0
    column = {name: page.header.index(name) for name in ("dataset", "n", "method", "criterion", "k̂", "published", "flags")}
    for row, expected in zip(page.rows, table.itertuples()):
        assert (row[column["dataset"]], int(row[column["n"]]), row[column["method"]], row[column["criterion"]],
                int(row[column["k̂"]])) == (expected.dataset, expected.n, expected.method, expected.criterion,
                                            expected.k_hat)
        quoted = {"lange": "3", "prediction_strength": "2"}.get(expected.criterion, "") if expected.dataset == "gauss" else ""
        assert row[column["published"]] == quoted
        raised = [flag for flag in FLAGS if getattr(expected, flag)]
        assert row[column["flags"]] == (",".join(raised) or "-")
    # every figure of the folder is in the page, loaded by the browser with its own width
    figures = sorted(path.stem for path in report.glob("*.png"))
    assert sorted(image["alt"] for image in page.images) == figures
    for image in page.images:
        assert image["data-loaded"] == "yes" and int(image["data-width"]) > 300, image["alt"]
        pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(image["src"].split(",", 1)[1])), format="png")
        assert pixels[..., :3].std() > 0.05, f"{image['alt']} is blank"


def test_a_screenshot_of_the_page_shows_the_table_and_the_figures(report, tmp_path):
    shot = tmp_path / "page.png"
    taken = _browser(f"--screenshot={shot}", "--window-size=1300,2600", page=report / "index.html")
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    pixels = matplotlib.image.imread(shot)[..., :3]
    rows_with_ink = (pixels.std(axis=(1, 2)) > 0.02).mean()
    assert rows_with_ink > 0.5, f"only {rows_with_ink:.0%} of the screenshot's rows have content"
    # the figures' colours (matplotlib's blue C0, viridis' yellow) are on the screen, not only black text
    blue = np.all(np.abs(pixels - np.array([0x1F, 0x77, 0xB4]) / 255) < 0.08, axis=-1).sum()
    assert blue > 200, f"{blue} pixels of the plotted lines' blue"


def test_a_figure_that_cannot_be_shown_is_named_in_the_page(report, tmp_path):
    broken = tmp_path / "index.html"
    text = (report / "index.html").read_text()
    broken.write_text(re.sub(r'src="data:image/png;base64,[^"]{100}', 'src="data:image/png;base64,AAAA', text, count=1))
    loaded = _browser("--dump-dom", page=broken)
    page = Page()
    page.feed(loaded.stdout)
    assert page.missing_figures == 1
    assert [image["data-loaded"] for image in page.images].count("no") == 1


# Opens every folded part, then measures, after the images have loaded, what the browser laid out: each image's
# natural and shown size (inside its border) and right edge against its container's; every block that runs past the
# content box of its container, or holds content wider than itself without scrolling it.
LAYOUT = """
window.addEventListener("load", () => {
  for (const details of document.querySelectorAll("details")) details.open = true;
  const found = {images: [], overflows: []};
  const inner = (element) => { const box = element.getBoundingClientRect(), style = getComputedStyle(element);
                               return box.right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth); };
  for (const image of document.images)
    found.images.push({alt: image.alt, natural: [image.naturalWidth, image.naturalHeight],
                       shown: [image.clientWidth, image.clientHeight],
                       right: image.getBoundingClientRect().right, room: inner(image.parentElement)});
  for (const element of document.querySelectorAll("table, figure, figcaption, img, pre, p, li, h1, h2, h3, details")) {
    const past = element.getBoundingClientRect().right - inner(element.parentElement);
    const spills = getComputedStyle(element).overflowX === "visible" && element.scrollWidth > element.clientWidth + 1;
    if (past > 0.5 || spills)
      found.overflows.push([element.tagName, element.id || element.alt || element.textContent.slice(0, 40), past]);
  }
  found.page = [document.documentElement.scrollWidth, document.documentElement.clientWidth];
  const out = document.createElement("pre");
  out.id = "layout";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
"""


def laid_out(page, width: int, folder) -> dict:
    """What Chromium laid out of ``page`` in a window ``width`` pixels wide (:data:`LAYOUT`)."""
    import json
    from html import unescape

    measured = folder / f"layout-{width}.html"
    measured.write_text(page.read_text().replace("</body>", f"<script>{LAYOUT}</script></body>"))
    loaded = _browser("--dump-dom", f"--window-size={width},2000", page=measured)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    found = re.search(r'<pre id="layout">(.*?)</pre>', loaded.stdout, re.S)
    assert found, loaded.stdout[-2000:]
    return json.loads(unescape(found.group(1)))


@pytest.fixture(scope="module")
def consensus_page(tmp_path_factory):
    """A consensus report whose data has labels and row names: heat maps with a class strip and named rows."""
    from test_heat_map_classes import write_labelled

    folder = tmp_path_factory.mktemp("consensus-page")
    path, _ = write_labelled(folder, rows_per_class=12)
    dataset = {"name": "tissues", "kind": "file", "path": str(path), "row_names": "id", "labels": {"column": "tissue"}}
    config = write_config(folder / "c.yaml", name="cc", seed=3, n=["all"], k=[2, 3, 4, 5], resamples=8, datasets=[dataset],
                          methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2},
                                    "predictor": "nearest_centroid", "criteria": ["lange", "consensus_area", "pac"]}])
    assert cli_in_process("run", str(config), "--out", str(folder / "c.zarr"), "--workers", "0",
                          "--no-progress").returncode == 0
    result = cli_in_process("report", str(folder / "c.zarr"), "--out", str(folder / "r"))
    assert result.returncode == 0, result.stderr
    return folder / "r" / "index.html"


@pytest.fixture(scope="module")
def quickstart_page(tmp_path_factory):
    """The quickstart's report (its config, 5 resamples instead of 20: the same figures and tables)."""
    import yaml

    folder = tmp_path_factory.mktemp("quickstart-page")
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml").read_text())
    path = write_config(folder / "q.yaml", **{**config, "resamples": 5})
    assert cli_in_process("run", str(path), "--out", str(folder / "q.zarr"), "--workers", "0",
                          "--no-progress").returncode == 0
    result = cli_in_process("report", str(folder / "q.zarr"), "--out", str(folder / "r"))
    assert result.returncode == 0, result.stderr
    return folder / "r" / "index.html"


@pytest.mark.parametrize("width", [1300, 900])
@pytest.mark.parametrize("which", ["consensus_page", "quickstart_page"])
def test_every_figure_is_shown_whole_and_nothing_runs_past_its_container(which, width, request, tmp_path):
    page = request.getfixturevalue(which)
    found = laid_out(page, width, tmp_path)
    figures = sorted(path.stem for path in page.parent.glob("*.png"))
    assert sorted(image["alt"] for image in found["images"]) == figures and figures
    if which == "consensus_page":
        assert any(name.endswith("_heatmaps") for name in figures)
    for image in found["images"]:
        (natural_width, natural_height), (width_shown, height_shown) = image["natural"], image["shown"]
        assert natural_width > 300 and width_shown > 0, image
        # the PNG's shape, scaled at most down to the column: never cropped, never stretched one way
        assert abs(width_shown / height_shown - natural_width / natural_height) < 0.01 * natural_width / natural_height, image
        assert width_shown <= natural_width and (width_shown == natural_width or image["right"] >= image["room"] - 1), image
        assert image["right"] <= image["room"] + 0.5, image
    assert found["overflows"] == []
    assert found["page"][0] <= found["page"][1]  # no sideways scrolling of the page
