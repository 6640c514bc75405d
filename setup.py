"""The compiled kernels (Cython, built by ``pip install``); everything else is in pyproject.toml."""

from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = [Extension("ordercube.tasks.algorithms._lloyd", ["tasks/algorithms/_lloyd.pyx"]),
           Extension("ordercube.tasks.algorithms._annealing", ["tasks/algorithms/_annealing.pyx"]),
           Extension("ordercube.tasks._hungarian", ["tasks/_hungarian.pyx"])]

setup(ext_modules=cythonize(KERNELS, compiler_directives={"language_level": 3}))
