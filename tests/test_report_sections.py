"""Report sections contributed by criteria (``Criterion.report_sections``): the report calls each declared section
once, in the registry order of the criteria, then its general sections, and shows what a section returns (its
title, printed text, HTML fragment, table attributes and published rows) without knowing it by name."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.report.write import GENERAL_SECTIONS, sections_for, write_report
from ordercube.pipeline.report.published import COLUMNS
from ordercube.pipeline.report.section import Section, SectionContext, SectionResult, load_section
from ordercube.pipeline.cube.owner import open_cube
from ordercube.tasks.criteria import CRITERIA

HERE = "test_report_sections"
CALLS: list[tuple[str, ...]] = []


def plugin_section(context: SectionContext) -> SectionResult:
    """A plug-in's section: a CSV, a figure, a title with markup to escape, text, HTML, attrs and a published row."""
    CALLS.append(context.criteria)
    rows = pd.DataFrame({"criterion": list(context.criteria), "k_hat": [int(context.reduced.chosen[name].max())
                                                                          for name in context.criteria]})
    rows.to_csv(context.folder / "plugin.csv", index=False)
    context.figures.draw("plugin_figure", _draw, rows)
    return SectionResult(title="plug-in <section>", text=rows.to_string(index=False),
                         html='<p id="plugin-fragment">from the plug-in</p>', attrs={"plugin_rows": rows},
                         published_rows=[["gauss", 40, "km", "lange", "plug-in quantity", 1.0, 2.0, None]])


def _draw(rows: pd.DataFrame):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 2))
    figure.subplots().plot(range(len(rows)), rows["k_hat"])
    return figure


def quiet_section(context: SectionContext) -> None:
    CALLS.append(("quiet", *context.criteria))


own_scaling = Section(quiet_section, draws_against_n=True)


def failing_section(context: SectionContext) -> None:
    raise RuntimeError("the plug-in's table is malformed")


not_a_function = 3


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sections")
    path = write_config(folder / "c.yaml", **small_config(n=[40, 80], k=[2, 3], resamples=3))
    result = cli_in_process("run", str(path), "--out", str(folder / "c.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    return folder / "c.zarr"


@pytest.fixture
def declared(monkeypatch):
    """Declare ``{criterion: (path, ...)}`` on registered criteria for one test."""
    CALLS.clear()

    def declare(**paths: tuple[str, ...]) -> None:
        for name, value in paths.items():
            monkeypatch.setitem(CRITERIA, name, replace(CRITERIA[name], report_sections=value))
    return declare


def test_every_registered_section_loads_and_families_come_before_the_general_sections():
    declared_paths = {path for criterion in CRITERIA.values() for path in criterion.report_sections}
    assert {"ordercube.pipeline.report.transfer:section", "ordercube.pipeline.report.matrix:section",
            "ordercube.pipeline.report.supervised:section"} <= declared_paths
    for path in declared_paths | set(GENERAL_SECTIONS):
        assert callable(load_section(path, "test"))
    import xarray as xr

    scores = xr.Dataset({name: ("k", [0.0]) for name in ("swapping", "psnr", "mtc_matrix", "lange")})
    order = [(path, names) for path, _, names in sections_for(scores)]
    # the registry's order: the classifiers' criteria, then the transfer costs, then the matrix models'
    assert order == [("ordercube.pipeline.report.supervised:section", ("swapping",)),
                     ("ordercube.pipeline.report.transfer:section", ("mtc_matrix",)),
                     ("ordercube.pipeline.report.matrix:section", ("mtc_matrix", "psnr")),
                     ("ordercube.pipeline.report.sweep:section", ())]
    assert load_section("ordercube.pipeline.report.supervised:section", "test").draws_against_n


def test_a_plugin_section_is_called_once_and_shown_by_the_report_and_the_command(cube, declared, tmp_path):
    declared(lange=(f"{HERE}:plugin_section",), pairwise=(f"{HERE}:plugin_section",))
    table = write_report(open_cube(cube).load(), tmp_path)
    assert CALLS == [("lange", "pairwise")]  # once, with both criteria that declared it, in registry order
    written = pd.read_csv(tmp_path / "plugin.csv")
    assert written["criterion"].tolist() == ["lange", "pairwise"]
    pd.testing.assert_frame_equal(table.attrs["plugin_rows"], written)
    drawn, _ = table.attrs["figures"]
    assert drawn[-1] == "plugin_figure.png"  # after every criterion's own figures
    assert [result.title for result in table.attrs["sections"]] == ["plug-in <section>"]
    page = (tmp_path / "index.html").read_text()
    fragment = '<h2>plug-in &lt;section&gt;</h2><p id="plugin-fragment">from the plug-in</p>'
    assert page.count(fragment) == 1 and page.index(fragment) < page.index("<h2>Figures</h2>")
    # no published values quoted by this config: the section's published rows are not written
    assert table.attrs["published"] is None and not (tmp_path / "published.csv").exists()
    result = cli_in_process("report", str(cube), "--out", str(tmp_path / "cli"))
    assert result.returncode == 0, result.stderr
    assert "\nplug-in <section>\n" + written.to_string(index=False) + "\n" in result.stdout


def test_published_rows_of_a_section_follow_the_k_hat_rows(cube, declared, tmp_path, monkeypatch):
    import ordercube.pipeline.report.write as report
    from ordercube.pipeline.report.published import Published

    declared(lange=(f"{HERE}:plugin_section",))
    monkeypatch.setattr(report, "published_in", lambda cube: Published({"gauss/km": {"lange": 3}}))
    table = write_report(open_cube(cube).load(), tmp_path)
    published = pd.read_csv(tmp_path / "published.csv")
    assert published.columns.tolist() == COLUMNS
    assert published["quantity"].tolist() == ["k_hat", "k_hat", "plug-in quantity"]  # n = 40, 80; then the section's
    assert published.iloc[-1][["cube", "published"]].tolist() == [1.0, 2.0]
    assert len(table.attrs["published"]) == 3


def test_a_section_that_draws_against_n_replaces_its_criteria_scaling_figures(cube, declared, tmp_path):
    declared(lange=(f"{HERE}:own_scaling",))
    table = write_report(open_cube(cube).load(), tmp_path)
    drawn, _ = table.attrs["figures"]
    assert CALLS == [("quiet", "lange")] and table.attrs["sections"] == []
    assert "lange_scaling.png" not in drawn and "pairwise_scaling.png" in drawn
    assert "lange_vs_k.png" in drawn and not (tmp_path / "lange_scaling.png").exists()


@pytest.mark.parametrize("path, says", [
    ("no_colon", "is not an import path"),
    ("no_such_module_anywhere:section", "module 'no_such_module_anywhere' cannot be imported"),
    (f"{HERE}:missing", f"module '{HERE}' has no function 'missing'"),
    (f"{HERE}:not_a_function", f"module '{HERE}' has no function 'not_a_function'"),
])
def test_a_bad_section_path_is_refused_naming_the_criterion_and_the_path(cube, declared, tmp_path, path, says):
    declared(pairwise=(path,))
    with pytest.raises(ValueError) as error:
        write_report(open_cube(cube).load(), tmp_path)
    message = str(error.value)
    assert message.startswith("criterion 'pairwise' (report_sections): report section ") and repr(path) in message
    assert says in message and "'package.module:function'" in message
    if path == "no_colon":  # the command says it in one line, no traceback
        result = cli_in_process("report", str(cube), "--out", str(tmp_path / "cli"))
        assert result.returncode == 2 and result.stderr == f"error: {message}\n"


def test_an_error_in_a_section_names_the_section_and_its_criteria(cube, declared, tmp_path):
    declared(lange=(f"{HERE}:failing_section",))
    with pytest.raises(RuntimeError, match="malformed") as error:
        write_report(open_cube(cube).load(), tmp_path)
    assert error.value.__notes__ == [f"raised by the report section {HERE}:failing_section, declared by the criteria "
                                     "lange"]
