"""The report section of ``heldout_sse``: its mean held-out error per k beside k̂ and the planted number."""

from __future__ import annotations

import html

from ordercube.plugin import SectionContext, SectionResult


def section(context: SectionContext) -> SectionResult:
    """Write ``changepoints.csv`` (one row per dataset, n, method and k: the mean held-out error, k̂, the planted
    number of segments) and say in one line per block whether k̂ found the planted number."""
    blocks = ["dataset", "n", "model"]
    mean = context.reduced.summary["heldout_sse_mean"].to_dataframe("heldout_sse_mean").reset_index()
    chosen = context.reduced.chosen["heldout_sse"].to_dataframe("k_hat").reset_index()
    planted = context.reduced.truth.to_dataframe("planted").reset_index()
    table = (mean[[*blocks, "k", "heldout_sse_mean"]].merge(chosen[[*blocks, "k_hat"]], on=blocks)
             .merge(planted[["dataset", "planted"]], on="dataset").rename(columns={"model": "method"}))
    table.to_csv(context.folder / "changepoints.csv", index=False)
    lines = [f"{row.dataset}, n = {row.n}, {row.method}: k̂ = {row.k_hat} segments, planted {row.planted}"
             for row in table.drop_duplicates(["dataset", "n", "method"]).itertuples()]
    return SectionResult(title="Change points: held-out squared error", text="\n".join(lines),
                         html="<p>" + "<br>".join(html.escape(line) for line in lines) + "</p>")
