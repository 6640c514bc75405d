"""The deployment recipes of deploy/ checked for real without a Slurm or Kubernetes cluster: their YAML parses,
their Python and shell compile, dask-jobqueue renders the Slurm job script with the recipe's settings, the
Kubernetes specs match their schema, and every ``ordercube`` command line they show parses with ordercube's own
argument parser."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import py_compile
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

DEPLOY = REPO / "deploy"
SLURM = DEPLOY / "slurm"
KUBERNETES = DEPLOY / "kubernetes"


def load(path: Path):
    """The recipe script at ``path`` imported as a module (it is not part of the package)."""
    spec = importlib.util.spec_from_file_location(f"recipe_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ordercube_lines(path: Path) -> list[list[str]]:
    """Every ``ordercube ...`` command line of a README's code blocks or a script, split as a shell would
    (continuation lines joined), or, in a YAML manifest, the ``command`` lists that start with ``ordercube``."""
    if path.suffix in (".yaml", ".yml"):
        commands = []
        for document in yaml.safe_load_all(path.read_text()):
            for container in document["spec"]["template"]["spec"]["containers"]:
                if container.get("command", [None])[0] == "ordercube":
                    commands.append([str(word) for word in container["command"]])
        return commands
    text = path.read_text().replace("\\\n", " ")
    lines = [shlex.split(line, comments=True) for line in text.splitlines()
             if re.match(r"^\s*ordercube (run|status|report|validate)\b", line)]
    ends = {"||", "&&", "|", ";", "&"}  # the command ends at the shell's operators
    return [words[:next((i for i, word in enumerate(words) if word in ends), len(words))] for words in lines]


RECIPES_WITH_COMMANDS = [DEPLOY / "README.md", SLURM / "ordercube.sbatch", SLURM / "launch.py",
                         KUBERNETES / "driver-job.yaml"]


@pytest.mark.parametrize("path", RECIPES_WITH_COMMANDS, ids=lambda p: p.name)
def test_every_ordercube_command_of_a_recipe_parses_with_the_cli_parser(path):
    from ordercube.pipeline.cli import _parser

    commands = ordercube_lines(path)
    assert commands, f"{path} shows no ordercube command line"
    for words in commands:
        assert words[0] == "ordercube"
        parsed = _parser().parse_args(words[1:])  # argparse exits (SystemExit) on an unknown or malformed flag
        assert parsed.command == words[1]
        if parsed.command == "run":
            assert (parsed.scheduler_file or parsed.scheduler), f"{' '.join(words)} runs without the cluster"


def test_a_misspelt_flag_in_a_command_line_is_caught(tmp_path):
    from ordercube.pipeline.cli import _parser

    recipe = tmp_path / "README.md"
    recipe.write_text("```bash\nordercube run c.yaml --schedular-file s.json --out c.zarr\n```\n")
    (words,) = ordercube_lines(recipe)
    with pytest.raises(SystemExit):
        _parser().parse_args(words[1:])


@pytest.mark.parametrize("path", sorted(DEPLOY.rglob("*.py")), ids=lambda p: p.name)
def test_recipe_python_compiles(path, tmp_path):
    py_compile.compile(str(path), cfile=str(tmp_path / "x.pyc"), doraise=True)


@pytest.mark.parametrize("path", sorted([*DEPLOY.rglob("*.sbatch"), *DEPLOY.rglob("*.sh")]), ids=lambda p: p.name)
def test_recipe_shell_scripts_parse(path):
    checked = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize(("args", "env", "message"), [
    (["restart"], {}, "usage: "),
    (["start"], {"ORDERCUBE_SLURM_PORT": "80"}, "ORDERCUBE_SLURM_PORT=80: give a free port from 1024 to 65534"),
    (["start"], {"ORDERCUBE_SLURM_PORT": "six"}, "ORDERCUBE_SLURM_PORT=six: give a free port"),
    (["start"], {"ORDERCUBE_SLURM_TIMEOUT": "1m"}, "ORDERCUBE_SLURM_TIMEOUT=1m: give whole seconds"),
])
def test_the_single_node_slurm_script_refuses_bad_input_before_writing(tmp_path, args, env, message):
    """deploy/slurm/single_node.sh (run for real by tests/test_slurm.py, slow) checks its input first."""
    folder = tmp_path / "cluster"
    refused = subprocess.run(["bash", str(SLURM / "single_node.sh"), *args, str(folder)], capture_output=True,
                             text=True, timeout=30, env={**os.environ, **env})
    assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    assert not folder.exists()


@pytest.mark.parametrize("path", sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")]), ids=lambda p: p.name)
def test_recipe_yaml_parses_to_mappings(path):
    documents = list(yaml.safe_load_all(path.read_text()))
    assert documents and all(isinstance(document, dict) for document in documents)


def test_sbatch_directives_ask_one_core_per_single_thread_worker():
    script = (SLURM / "ordercube.sbatch").read_text()
    directives = dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)", script, flags=re.M))
    assert directives["cpus-per-task"] == "1"
    assert "--nthreads 1" in script


@pytest.fixture
def slurm_cluster():
    """The launcher's SLURMCluster built from deploy/slurm/jobqueue.yaml (its scheduler local; no job submitted)."""
    pytest.importorskip("dask_jobqueue")
    launch = load(SLURM / "launch.py")
    import dask

    saved = copy.deepcopy(dask.config.config["jobqueue"])  # the launcher sets its section for the cluster's life
    cluster = launch.make_cluster(str(SLURM / "jobqueue.yaml"),
                                  scheduler_options={"dashboard_address": "127.0.0.1:0", "host": "127.0.0.1"})
    try:
        yield cluster
    finally:
        cluster.close()
        dask.config.config["jobqueue"] = saved


def test_dask_jobqueue_renders_the_slurm_job_with_the_recipes_settings(slurm_cluster):
    settings = yaml.safe_load((SLURM / "jobqueue.yaml").read_text())["jobqueue"]["ordercube"]
    script = slurm_cluster.job_script()
    assert script.startswith("#!/usr/bin/env bash")
    assert f"#SBATCH --cpus-per-task={settings['cores']}" in script
    assert f"#SBATCH -t {settings['walltime']}" in script
    assert "#SBATCH --exclusive" in script
    assert f"--nworkers {settings['processes']}" in script and "--nthreads 1" in script
    assert "--death-timeout 120" in script and "--lifetime=3h50m" in script
    for line in settings["job-script-prologue"]:
        assert line in script
    rendered = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=30)
    assert rendered.returncode == 0, rendered.stderr


@pytest.mark.slow  # a Python process importing dask-jobqueue and starting a scheduler: ~5 s idle
def test_the_launcher_prints_the_job_script_without_submitting(tmp_path):
    pytest.importorskip("dask_jobqueue")
    printed = subprocess.run([sys.executable, str(SLURM / "launch.py"), "--config", str(SLURM / "jobqueue.yaml"),
                              "--scheduler-file", str(tmp_path / "s.json"), "--print-job-script"],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert "#SBATCH -J ordercube-worker" in printed.stdout
    assert not (tmp_path / "s.json").exists()


def values_schema() -> dict:
    return json.loads((KUBERNETES / "values.schema.json").read_text())


def test_helm_values_match_the_charts_keys():
    jsonschema = pytest.importorskip("jsonschema")
    values = yaml.safe_load((KUBERNETES / "values.yaml").read_text())
    jsonschema.validate(values, values_schema())
    assert values["worker"]["threads_per_worker"] == 1
    assert values["worker"]["resources"]["limits"]["cpu"] == "1"


def test_a_misspelt_helm_key_fails_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    values = yaml.safe_load((KUBERNETES / "values.yaml").read_text())
    values["worker"]["replica"] = values["worker"].pop("replicas")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(values, values_schema())


def test_driver_job_reaches_the_charts_scheduler_service():
    job = yaml.safe_load((KUBERNETES / "driver-job.yaml").read_text())
    assert job["kind"] == "Job" and job["apiVersion"] == "batch/v1"
    (command,) = ordercube_lines(KUBERNETES / "driver-job.yaml")
    address = command[command.index("--scheduler") + 1]
    # the chart names its scheduler service RELEASE-scheduler, on port 8786; the README installs release 'ordercube'
    assert address == "tcp://ordercube-scheduler:8786"
    assert "helm install ordercube dask/dask" in (DEPLOY / "README.md").read_text()
    assert command[command.index("--out") + 1].startswith("s3://")


DASK_CLUSTER_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "kubernetes.dask.org/v1"},
        "kind": {"const": "DaskCluster"},
        "spec": {
            "type": "object",
            "required": ["worker", "scheduler"],
            "properties": {
                "worker": {
                    "type": "object",
                    "required": ["replicas", "spec"],
                    "properties": {
                        "replicas": {"type": "integer", "minimum": 1},
                        "spec": {"type": "object", "required": ["containers"],
                                 "properties": {"containers": {"type": "array", "minItems": 1, "items": {
                                     "type": "object", "required": ["name", "image", "args", "resources"]}}}},
                    },
                },
                "scheduler": {"type": "object", "required": ["spec", "service"]},
            },
        },
    },
}


def test_the_operators_cluster_spec_has_single_thread_one_core_workers():
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("dask_kubernetes")
    kube = load(KUBERNETES / "kubecluster.py")
    spec = kube.cluster_spec(name="ordercube", image="registry.example/ordercube:1", workers=7)
    jsonschema.validate(spec, DASK_CLUSTER_SCHEMA)
    assert spec["spec"]["worker"]["replicas"] == 7
    (container,) = spec["spec"]["worker"]["spec"]["containers"]
    args = container["args"]
    assert args[:2] == ["dask", "worker"] and args[args.index("--nthreads") + 1] == "1"
    assert container["resources"]["limits"]["cpu"] == "1"
    assert container["image"] == "registry.example/ordercube:1"


def test_the_operator_launcher_prints_its_spec_as_yaml(capsys):
    pytest.importorskip("dask_kubernetes")
    kube = load(KUBERNETES / "kubecluster.py")
    assert kube.main(["c.yaml", "--out", "s3://b/c.zarr", "--image", "img:2", "--workers", "3", "--print-spec"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["spec"]["worker"]["replicas"] == 3
    assert printed["spec"]["worker"]["spec"]["containers"][0]["image"] == "img:2"
