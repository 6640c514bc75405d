"""Sphinx configuration of ordercube's documentation site.

Built with ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (``.ci/run``), then checked by
``docs/check_site.py``. Nothing is loaded from the network, at build time or in the browser: no intersphinx,
no CDN scripts or fonts, no MathJax (equations are written as code or plain text).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "_ext"))

project = "ordercube"
author = "the ordercube developers"
copyright = "the ordercube developers"
try:
    from importlib.metadata import version as _version

    release = _version("ordercube")
except Exception:  # a checkout that is not installed: the docs still build
    release = ""
version = release

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_nb",
    "sphinx_design",
    "ordercube_reference",
]

# MyST: Markdown pages, with colon fences and definition lists; headings get anchors for {ref} and #links.
myst_enable_extensions = ["colon_fence", "deflist", "fieldlist", "substitution"]
myst_heading_anchors = 3

exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]

# Executed pages: the tutorials (MyST-NB text notebooks) run at every build and a failing cell fails it;
# the notebooks of notebooks/ keep their committed outputs and are only rendered.
nb_execution_mode = "force"
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_excludepatterns = ["notebooks/*"]
nb_merge_streams = True

# The API from the docstrings (numpydoc); members documented where a page asks for them.
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # the numpydoc Parameters section says the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# No network: cross-project links would fetch inventories. Sphinx adds MathJax (from a CDN) only to a page
# holding math, and docs/check_site.py refuses any page that loads an external script: write no math markup.
intersphinx_mapping: dict[str, tuple[str, str | None]] = {}

html_theme = "pydata_sphinx_theme"
html_title = "ordercube"
html_static_path = ["_static"]
html_css_files = ["ordercube.css"]
html_last_updated_fmt = None
# Without it a first visit (empty localStorage) logs "Got invalid theme mode" as a console error.
html_context = {"default_mode": "auto"}
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 7,
    "icon_links": [],
    "use_edit_page_button": False,
    "navbar_end": ["theme-switcher", "navbar-icon-links"],
}
html_sidebars = {"index": [], "changelog": []}
html_show_sourcelink = False
html_copy_source = False


def _copy_notebooks() -> None:
    """The committed notebooks (with their outputs) as pages under docs/notebooks/, which git ignores."""
    target = HERE / "notebooks"
    target.mkdir(exist_ok=True)
    sources = sorted((ROOT / "notebooks").glob("*.ipynb"))
    for stale in target.glob("*.ipynb"):
        if stale.name not in {source.name for source in sources}:
            stale.unlink()
    for source in sources:
        copy = target / source.name
        if not copy.exists() or copy.read_bytes() != source.read_bytes():
            shutil.copyfile(source, copy)
    lines = ["# Notebooks", "",
             "The notebooks of the repository's `notebooks/` folder, shown with the outputs committed beside them",
             "(they are executed, and their outputs compared cell by cell, by the test suite, not by this site).", "",
             "```{toctree}", ":maxdepth: 1", "", *(f"{source.stem}" for source in sources), "```", ""]
    index = target / "index.md"
    text = "\n".join(lines)
    if not index.exists() or index.read_text() != text:
        index.write_text(text)


_copy_notebooks()
