# One image for the Dask scheduler, the workers and the driver (see docker-compose.yml).
#   docker build -t ordercube:local .
# The base image pins dask and distributed; the pip line below pins the same versions so that the
# package's own dependencies can never move them (scheduler, workers and driver must agree).
FROM ghcr.io/dask/dask:2026.8.0-py3.11

WORKDIR /opt/ordercube

# The package and its dependencies, installed at build time. The Dask image's entrypoint
# (prepare.sh) can pip/conda-install EXTRA_*_PACKAGES at container start; this image never does.
# The sources are built in /tmp/build and removed: only the installed package is importable (one
# source path, so numba's cache below is the one every process finds).
COPY pyproject.toml README.md /tmp/build/
COPY pipeline/ /tmp/build/pipeline/
COPY tasks/ /tmp/build/tasks/
COPY ordercube/ /tmp/build/ordercube/
COPY setup.py /tmp/build/
# gcc builds the Cython kernels (k-means, annealing, the Hungarian method) and is removed with the sources.
# The install does not need it (without a compiler setup.py skips the kernels and their numba twins run, same
# results, slower to start); here it is for speed, so the check below refuses an image without them.
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && cd /tmp/build \
    && pip install --no-cache-dir "dask==2026.8.0" "distributed==2026.8.0" . \
    && cd / && rm -rf /tmp/build \
    && apt-get purge -y --auto-remove gcc libc6-dev && rm -rf /var/lib/apt/lists/* \
    && python -c "import ordercube, ordercube.pipeline, ordercube.tasks, dask, distributed; \
from ordercube.tasks.algorithms import annealing, kmeans; from ordercube.tasks import assignment; \
twins = [f.__module__ for f in (kmeans.plusplus, annealing.anneal, assignment._matched_weights) if f.__module__.endswith('_numba')]; \
assert not twins, f'kernels not compiled: {twins}'; \
print(ordercube.__file__, dask.__version__, distributed.__version__)" \
    && ordercube --version
COPY configs/ configs/

# Dask config of every process in the image: the nanny does not set MALLOC_TRIM_THRESHOLD_.
COPY docker/dask.yaml /etc/dask/ordercube.yaml

# A non-root user; /results is the cube's mount point (a named volume takes this ownership).
RUN useradd --create-home --uid 10001 --user-group --shell /bin/bash ordercube \
    && mkdir -p /results \
    && chown ordercube:ordercube /results
USER ordercube
ENV NUMBA_CACHE_DIR=/home/ordercube/.cache/numba

# Compile the numba kernels of the exact 1-D k-means (cache=True) now, into NUMBA_CACHE_DIR, by running
# a tiny grid on a LocalCluster: the workers then load them instead of compiling (k-means and the
# Hungarian method are Cython, compiled by pip above). numba keys its cache on the CPU, so
# on a machine with another CPU than the build host's each worker compiles once more (the directory
# stays writable). Exit 1 (failed cells) is accepted here: only the compilation matters.
COPY --chown=ordercube:ordercube docker/warmup-kmeans1d.yaml /tmp/warmup/
RUN for grid in warmup-kmeans1d; do \
        ordercube run "/tmp/warmup/$grid.yaml" --workers 1 --no-progress --out "/tmp/warmup/$grid.zarr"; \
        rc=$?; [ "$rc" -le 1 ] || exit "$rc"; \
    done \
    && test "$(find "$NUMBA_CACHE_DIR" -name '*.nbi' | wc -l)" -ge 2 \
    && rm -rf /tmp/warmup

ENTRYPOINT ["tini", "-g", "--"]
CMD ["ordercube", "--help"]
