"""Names and citations that are one and the same in the registry, the docs and the figures: every output the docs'
tables list is one a criterion gives (and they list all of them), and each criterion is credited to one paper, its
registry ``citation``, wherever the docs, its description or its figures name one."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from ordercube.pipeline.report.labels import label_of
from ordercube.tasks.criteria import CRITERIA, VARIABLES

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
CITATION = [re.compile(pattern) for pattern in (
    r"(\w[\w-]*) et al\.,? \(?(\d{4})",
    r"(\w[\w-]*)(?:, \w[\w-]*)* (?:&|and) [\w-]+(?:'s)?,? \(?(\d{4})",
    r"(\w[\w-]*),? \(?(\d{4})\b",
)]


def first_citation(text: str) -> tuple[str, int] | None:
    """The first author's surname (without accents) and the year of the first citation in ``text``."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    found = [match for pattern in CITATION for match in pattern.finditer(text)]
    if not found:
        return None
    first = min(found, key=lambda match: (match.start(), -len(match.group(0))))
    return first.group(1), int(first.group(2))


def registry(name: str) -> tuple[str, int] | None:
    citation = CRITERIA[name].citation
    return first_citation(citation) if citation else None


def table_rows(header: str) -> list[tuple[Path, dict[str, str]]]:
    """Every row of the docs' tables whose header has a column ``header``: column name → cell."""
    rows = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not line.startswith("|") or header not in cells or i + 1 >= len(lines) or "---" not in lines[i + 1]:
                continue
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append((page, dict(zip(cells, (c.strip() for c in row.strip().strip("|").split("|"))))))
    return rows


def test_the_docs_tables_of_outputs_name_what_the_criteria_give():
    rows = table_rows("outputs")
    assert rows, "no table of outputs found in the docs"
    for page, row in rows:
        criterion = re.fullmatch(r"`(\w+)`", row["criterion"]).group(1)
        listed = re.findall(r"`(\w+)`", row["outputs"])
        unknown = [name for name in listed if name not in VARIABLES]
        assert unknown == [], f"{page.name}: {criterion} lists outputs no criterion gives: {unknown}"
        assert set(listed) == set(CRITERIA[criterion].variables), f"{page.name}: {criterion}"


def test_every_criterion_is_credited_to_its_registry_citation_in_the_docs_tables():
    checked = 0
    for page, row in table_rows("criterion"):
        names = re.findall(r"`(\w+)`", row["criterion"])
        if len(names) != 1 or names[0] not in CRITERIA or registry(names[0]) is None:
            continue
        said = first_citation(" ".join(cell for column, cell in row.items() if column != "criterion"))
        if said is None:  # a table whose page credits the paper above it (the transfer costs)
            continue
        assert said == registry(names[0]), f"{page.name}: {names[0]} credited to {said}, not {CRITERIA[names[0]].citation}"
        checked += 1
    assert checked >= 8


def test_the_config_guide_credits_each_criterion_it_introduces_to_its_citation():
    text = (DOCS / "guide" / "config.md").read_text()
    checked = 0
    for match in re.finditer(r"(?<!, )`(\w+)`: ([^`]{0,120})", text):  # one criterion introduced, not `bic`, `aic`
        name = match.group(1)
        if name in CRITERIA and registry(name) is not None and first_citation(match.group(2)) is not None:
            assert first_citation(match.group(2)) == registry(name), f"config.md: {name}: {match.group(2)!r}"
            checked += 1
    assert checked >= 5


@pytest.mark.parametrize("name", sorted(CRITERIA))
def test_the_description_and_the_figures_credit_the_registry_citation(name):
    criterion = CRITERIA[name]
    said = first_citation(criterion.description)
    assert said is None or said == registry(name), f"{name}: description credits {said}"
    for variable in criterion.variables:   # the labels name what the value is; the citation comes from the registry
        assert not re.search(r"\b(19|20)\d\d\b", criterion.label_of(variable)), (name, variable)
        assert label_of(variable).endswith(f"({criterion.citation})" if criterion.citation else criterion.label_of(variable))


def test_bic_and_aic_are_said_to_need_the_algorithms_the_registry_allows():
    allowed = set(CRITERIA["bic"].defined_for)
    for page in PAGES:
        for line in page.read_text().split("\n\n"):
            if "`bic`" in line and "algorithm" in line and "gaussian_mixture" in line:
                named = set(re.findall(r"`(?:algorithm: )?(gaussian_mixture\w*)`", line))
                assert named == allowed, f"{page.name}: {sorted(named)} for BIC/AIC, the registry allows {sorted(allowed)}"
