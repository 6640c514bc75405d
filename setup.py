"""The compiled kernels (Cython), built by ``pip install`` where they can be; everything else is in pyproject.toml.

Each kernel has a numba twin that gives the same bits (``tasks/kernels.py``), so a kernel that cannot be
built (no C compiler, no Python headers, no Cython) is skipped with one line and the install goes on.
"""

import re
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError

KERNELS = [Extension("ordercube.tasks.algorithms._lloyd", ["tasks/algorithms/_lloyd.pyx"]),
           Extension("ordercube.tasks.algorithms._annealing", ["tasks/algorithms/_annealing.pyx"]),
           Extension("ordercube.tasks._hungarian", ["tasks/_hungarian.pyx"])]
KERNELS_ALL = "the kernels"
BUILD_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError, OSError)


def skipped(what: str, error: BaseException) -> None:
    reason = " ".join(str(error).split()) or type(error).__name__
    command = re.search(r"Command '\['([^']+)'.*(returned non-zero exit status -?\d+)", reason)
    reason = f"{command[1]} {command[2]}" if command else reason[:160]  # the compiler's words came before this line
    its = "their numba versions" if what == KERNELS_ALL else "its numba version"
    print(f"ordercube: {what} not compiled ({reason}); {its} will run instead, same results", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """``build_ext`` that skips a kernel it cannot compile instead of failing the install."""

    def initialize_options(self) -> None:
        super().initialize_options()
        self.skipped: set[str] = set()

    def run(self) -> None:
        try:
            super().run()
        except BUILD_ERRORS as error:  # no compiler at all (found before any kernel is tried)
            skipped(KERNELS_ALL, error)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except BUILD_ERRORS as error:
            skipped(ext.name, error)
            self.skipped.add(ext.name)

    def build_extensions(self) -> None:
        super().build_extensions()
        # what was not built is neither copied beside the sources (--inplace, editable installs) nor an output
        self.extensions = [ext for ext in self.extensions if ext.name not in self.skipped]


def kernels() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError as error:  # pyproject's build-system requires it; a --no-build-isolation build may lack it
        skipped(KERNELS_ALL, error)
        return []
    return cythonize(KERNELS, compiler_directives={"language_level": 3})


setup(ext_modules=kernels(), cmdclass={"build_ext": OptionalBuildExt})
