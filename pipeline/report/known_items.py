"""What a consensus heat map shows of the items beyond their clusters: the known classes of the data's labels as a
colour strip beside the cluster strip, with a legend naming them, and the items' names on the rows when the map shows
few enough items to read them (ConsensusClusterPlus's annotation of a heat map by known classes, Wilkerson & Hayes
2010)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ordercube.pipeline.report.figures import COLOUR_BAR_MARGIN, TOP

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ordercube.pipeline.reduce.assignments import KnownItems

NAMES_AT_MOST = 80  # a heat map of at most this many items names them on its rows
NAME_POINTS = 5.5  # the names' font size
ROW_INCHES = NAME_POINTS * 1.2 / 72  # a named row's height
CLASS_POINTS = 7.0  # the legend's font size
NAME_INCHES = 0.9  # a name wider than this (the left margin, less a gap) is cut
CLASS_INCHES = 1.6  # the widest class name in the legend


def _class_colours(count: int) -> np.ndarray:
    """The colours of ``count`` known classes (by code), white first for an item of no known class: a palette
    apart from the clusters' (tab10, tab20)."""
    from matplotlib import colormaps

    palette = colormaps["Dark2" if count <= 8 else "tab20b"]
    return np.array([(1.0, 1.0, 1.0, 1.0), *(palette(i % palette.N) for i in range(count))])


def text_inches(text: str, points: float) -> float:
    """The width of ``text`` drawn at ``points`` in matplotlib's default font, in inches, as its renderer lays it out."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    width, _, _ = TextToPath().get_text_width_height_descent(text, FontProperties(size=points), ismath=False)
    return width / 72


def fitted(text: str, points: float, inches: float) -> str:
    """``text``, or its longest beginning that fits ``inches`` at ``points`` with an ellipsis after it."""
    if text_inches(text, points) <= inches:
        return text
    low, high = 0, len(text)  # the longest cut that fits: text[:low] + "…" fits, text[:high] + "…" does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if text_inches(text[:middle] + "…", points) <= inches else (low, middle)
    return text[:low] + "…"


def legend_inches(known: KnownItems | None) -> float:
    """The width of the known classes' legend, in inches (0 without labels): its columns of at most 20 names."""
    if known is None or not known.classes:
        return 0.0
    widest = max(text_inches(fitted(name, CLASS_POINTS, CLASS_INCHES), CLASS_POINTS) for name in known.classes)
    return math.ceil(len(known.classes) / 20) * (widest + 0.4) + 0.1


def known_items_drawn(figure: Figure, axes: np.ndarray, maps: list[Any], known: KnownItems, *, named: bool,
                      legend: float) -> None:
    """Draw what the data's file says of the shown items on each heat map: their known classes as a strip on the
    left and on top, outside the cluster strips (gid ``known_class``; white: an item of no known class), with a
    legend naming the classes in the figure's right margin (``legend`` inches left of the colour bar); and, when
    ``named``, each row's item name (cut to :data:`NAME_INCHES`) left of the map, a text of gid ``item_name``. ``maps``: the heat maps shown, each a
    :class:`ordercube.pipeline.report.consensus.HeatMap`, in the order of ``axes``."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory

    count = len(known.classes)
    names: dict[int, str] = {}  # each item's name fitted once, whichever maps show it
    colours = _class_colours(count)
    for ax, shown in zip(axes, maps):
        m = shown.matrix.shape[0]
        if count:
            codes = known.labels[shown.items] + 1  # 0: no known class
            near, far = -0.09 * m, -0.14 * m  # outside the cluster strips (-0.07 m .. -0.02 m)
            for extent, data in (((far, near, m, 0.0), codes[:, None]), ((0.0, m, near, far), codes[None, :])):
                ax.imshow(data, cmap=ListedColormap(colours), vmin=-0.5, vmax=count + 0.5, interpolation="nearest",
                          extent=extent, gid="known_class")
            ax.set(xlim=(far, m), ylim=(m, far))
        if named:  # texts, not tick labels: a tick is four artists, and 9 maps of 62 rows took 1.1 s more to draw
            ax.set_yticks([])
            beside = blended_transform_factory(ax.transAxes, ax.transData) + ScaledTranslation(
                -1 / 72, 0, figure.dpi_scale_trans)  # 1 point left of the map's edge, on the row's centre
            for row, item in enumerate(shown.items.tolist()):
                if item not in names:
                    names[item] = fitted(known.names[item], NAME_POINTS, NAME_INCHES)
                ax.text(0.0, row + 0.5, names[item], transform=beside, ha="right", va="center", fontsize=NAME_POINTS,
                        gid="item_name")
    if count:
        width, height = figure.get_size_inches()
        handles = [Patch(facecolor=colours[code + 1], edgecolor="0.5", lw=0.4, label=fitted(name, CLASS_POINTS, CLASS_INCHES))
                   for code, name in enumerate(known.classes)]
        figure.legend(handles=handles, title="known class", loc="upper left", fontsize=CLASS_POINTS,
                      title_fontsize=CLASS_POINTS, frameon=False, ncol=math.ceil(count / 20), handlelength=1.0,
                      bbox_to_anchor=(1 - (COLOUR_BAR_MARGIN + legend - 0.05) / width, 1 - TOP / height))

