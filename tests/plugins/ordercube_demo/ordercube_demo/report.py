"""The report section of ``heldout_sse``: its mean held-out error per k beside k̂ and the planted number."""

from __future__ import annotations

from typing import Any


def section(context: Any) -> Any:
    """Write ``changepoints.csv`` (one row per dataset, n, method and k: the mean held-out error, k̂, the planted
    k) and say in one line per block whether k̂ found the planted number of segments."""
    from pipeline.report_section import SectionResult

    summary, chosen, truth = context.reduced.summary, context.reduced.chosen, context.reduced.truth
    table = summary["heldout_sse_mean"].to_dataframe().reset_index()
    table["k_hat"] = [int(chosen["heldout_sse"].sel(dataset=d, n=n, method=m)) for d, n, m in
                      zip(table["dataset"], table["n"], table["method"])]
    table["planted"] = [int(truth.sel(dataset=d)) for d in table["dataset"]]
    table.to_csv(context.folder / "changepoints.csv", index=False)
    blocks = table.drop_duplicates(["dataset", "n", "method"])
    lines = [f"{row.dataset}, n = {row.n}, {row.method}: k̂ = {row.k_hat} segments, planted {row.planted}"
             for row in blocks.itertuples()]
    return SectionResult(title="Change points: held-out squared error", text="\n".join(lines))
