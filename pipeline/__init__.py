"""Orchestration of ordercube: config, data, cube, run, reduce, report and the command line.

The public API is :mod:`ordercube`; the subpackages here are its implementation:

- :mod:`ordercube.pipeline.errors`: the errors a user sees, raised by every subpackage
- :mod:`ordercube.pipeline.config`: the study config in, validated specs out
- :mod:`ordercube.pipeline.data`: a dataset's files read into arrays
- :mod:`ordercube.pipeline.files`: paths read and written, where a cube lives
- :mod:`ordercube.pipeline.system`: cores, signals, kernel cache, library versions
- :mod:`ordercube.pipeline.cube`: the cube on disk
- :mod:`ordercube.pipeline.run`: computing a sweep
- :mod:`ordercube.pipeline.reduce`: from a cube to choices and summaries
- :mod:`ordercube.pipeline.report`: tables, figures, the HTML page
- :mod:`ordercube.pipeline.cli`: the ``ordercube`` command
"""
