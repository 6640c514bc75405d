"""Start a Dask cluster on Slurm with dask-jobqueue and hand it to ``ordercube run --scheduler-file``.

    python deploy/slurm/launch.py --jobs 4 --scheduler-file $HOME/ordercube-scheduler.json
    # then, from the same login node (or any host that reaches the scheduler):
    ordercube run configs/shamir_tishby2007_fig1.yaml --scheduler-file $HOME/ordercube-scheduler.json --out $SCRATCH/fig1.zarr

The scheduler runs in this process (on the login node or in a small Slurm job of its own: see README.md); each
Slurm job starts ``processes`` single-thread workers (deploy/slurm/jobqueue.yaml). The process keeps the
cluster up until Ctrl-C or SIGTERM, then cancels its jobs; the driver, ``ordercube run``, connects through the
scheduler file, and an interrupted run resumes with the same command. ``--print-job-script`` prints the batch
script Slurm would get and exits.
"""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path

CONFIG_NAME = "ordercube"  # the jobqueue.ordercube section of deploy/slurm/jobqueue.yaml


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="A Dask cluster on Slurm for ordercube run --scheduler-file")
    parser.add_argument("--jobs", type=int, default=1, help="Slurm jobs to start (each: one node's workers)")
    parser.add_argument("--scheduler-file", required=True, help="where to write the scheduler's address")
    parser.add_argument("--config", help="a jobqueue.yaml to read (default: Dask's config, ~/.config/dask/)")
    parser.add_argument("--print-job-script", action="store_true", help="print the Slurm batch script and exit")
    return parser.parse_args(argv)


def make_cluster(config: str | None = None, **overrides):
    """The SLURMCluster of ``jobqueue.ordercube`` (from ``config``, a jobqueue.yaml, when given), no job started.

    Keys the section leaves out take dask-jobqueue's defaults for Slurm (``jobqueue.slurm``).
    """
    import dask
    import yaml
    from dask_jobqueue import SLURMCluster

    if config is not None:
        dask.config.update(dask.config.config, yaml.safe_load(Path(config).read_text()), priority="new")
    section = {**dask.config.get("jobqueue.slurm"), **dask.config.get(f"jobqueue.{CONFIG_NAME}", {})}
    dask.config.set({f"jobqueue.{CONFIG_NAME}": section})  # for the cluster's life: each job reads it again
    return SLURMCluster(config_name=CONFIG_NAME, **overrides)


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM (kill, or scancel of a job that runs this launcher) stops the jobs too


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from distributed import Client

    signal.signal(signal.SIGTERM, _interrupt)

    with make_cluster(args.config) as cluster:
        if args.print_job_script:
            print(cluster.job_script())
            return 0
        cluster.scale(jobs=args.jobs)
        with Client(cluster) as client:
            client.write_scheduler_file(args.scheduler_file)
            print(f"scheduler {cluster.scheduler_address}, dashboard {cluster.dashboard_link}")
            print(f"run: ordercube run CONFIG --scheduler-file {args.scheduler_file} --out CUBE", flush=True)
            try:
                while True:
                    time.sleep(60)
            except KeyboardInterrupt:
                print("stopping the cluster's jobs", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
