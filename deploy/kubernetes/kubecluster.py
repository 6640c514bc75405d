"""A sweep on Kubernetes through the Dask operator (dask-kubernetes): the cluster is made for the sweep and
removed after it.

    # once per Kubernetes cluster, the Dask operator (see deploy/README.md):
    helm install --repo https://helm.dask.org --create-namespace -n dask-operator --generate-name dask-kubernetes-operator
    python deploy/kubernetes/kubecluster.py configs/shamir_tishby2007_fig1.yaml --out s3://BUCKET/fig1.zarr \\
        --image REGISTRY/ordercube:VERSION --workers 64

This process is the driver (the cube's single writer); the scheduler and the workers are pods made from
:func:`cluster_spec`, the workers single-threaded (one core each). A run that stops (Ctrl-C, the pod of this
process lost) resumes with the same command: every finished cell is in the cube.
"""

from __future__ import annotations

import argparse


def cluster_spec(*, name: str, image: str, workers: int, memory: str = "2560M") -> dict:
    """The DaskCluster resource: ``workers`` pods of one core and ``memory`` each, running one single-thread
    ``dask worker`` with Dask's memory limit below the pod's (the nanny, not the kernel, stops a runaway
    worker); the scheduler in a pod of its own (one core: it is single-threaded)."""
    from dask_kubernetes.operator import make_cluster_spec

    spec = make_cluster_spec(name=name, image=image, n_workers=workers,
                             resources={"requests": {"cpu": "1", "memory": memory},
                                        "limits": {"cpu": "1", "memory": memory}},
                             env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
                             worker_command="dask worker")
    container = spec["spec"]["worker"]["spec"]["containers"][0]
    container["args"] += ["--nthreads", "1", "--memory-limit", "2GiB", "--death-timeout", "120"]
    return spec


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="ordercube run on a Dask cluster made by the Dask operator")
    parser.add_argument("config")
    parser.add_argument("--out", required=True, help="the cube, on object storage (s3://...) to outlive the pods")
    parser.add_argument("--image", required=True, help="ordercube's image (the repository's Dockerfile), pushed")
    parser.add_argument("--workers", type=int, default=16, help="single-core worker pods (default 16)")
    parser.add_argument("--name", default="ordercube", help="the DaskCluster's name (default ordercube)")
    parser.add_argument("--print-spec", action="store_true", help="print the DaskCluster resource as YAML and exit")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    spec = cluster_spec(name=args.name, image=args.image, workers=args.workers)
    if args.print_spec:
        import yaml

        print(yaml.safe_dump(spec, sort_keys=False))
        return 0
    from dask_kubernetes.operator import KubeCluster
    from distributed import Client

    import ordercube

    with KubeCluster(custom_cluster_spec=spec) as cluster, Client(cluster) as client:
        client.wait_for_workers(1, timeout=600)
        ordercube.sweep(args.config, client=client, out=args.out, progress=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
