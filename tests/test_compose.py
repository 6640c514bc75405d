"""The container setup (Dockerfile, docker-compose.yml), checked offline: no Docker engine is needed.

docker-compose.yml is validated against the Compose Specification's JSON schema, shipped in
tests/data (see tests/data/PROVENANCE.md), and against this project's own rules: ports on 127.0.0.1
only, one image for every service, single-threaded workers under a memory limit, a driver that runs
``ordercube run`` on the compose scheduler, a Dockerfile pinned to the Dask version it installs.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO / "tests" / "data" / "compose-spec.json"
SERVICES = ("scheduler", "worker", "driver")
SCHEDULER = "tcp://scheduler:8786"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    # The schema names draft 2019-09 with an 'http://...#' URI that validator_for() does not map.
    jsonschema.Draft201909Validator.check_schema(schema)
    return jsonschema.Draft201909Validator(schema)


def schema_errors(validator: jsonschema.protocols.Validator, document: object) -> list[str]:
    return [f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
            for error in validator.iter_errors(document)]


def command_words(service: dict) -> list[str]:
    command = service["command"]
    return shlex.split(command) if isinstance(command, str) else list(command)


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    text = (REPO / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    instructions = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, arguments = line.strip().partition(" ")
            instructions.append((keyword.upper(), " ".join(arguments.split())))
    return instructions


def bytes_of(size: str, *, binary_suffixes: bool) -> int:
    """'2GiB', '2560M', '2g' in bytes; Docker reads k/m/g as powers of 1024 too (binary_suffixes)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?", size.strip(), flags=re.IGNORECASE)
    assert match, f"cannot read the size {size!r}"
    number, unit, binary = match.groups()
    base = 1024 if (binary or binary_suffixes) else 1000
    return int(float(number) * base ** " kmgt".index(unit.lower() or " "))


# -- the Compose Specification ---------------------------------------------------------------------


def test_the_shipped_schema_is_the_compose_specification() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    assert schema["title"] == "Compose Specification"
    assert "2019-09" in schema["$schema"]
    assert {"services", "volumes", "networks"} <= set(schema["properties"])
    assert (REPO / "tests" / "data" / "PROVENANCE.md").is_file()


def test_compose_file_is_valid_under_the_compose_specification(compose, validator) -> None:
    assert schema_errors(validator, compose) == []


@pytest.mark.parametrize("broken", [
    {"services": {"scheduler": {"ports": 5}}},
    {"services": {"worker": {"image": "ordercube:local", "deploy": {"resources": {"limits": {"memroy": "2G"}}}}}},
    {"services": {"driver": {"image": "ordercube:local", "depends_on": {"scheduler": {"condition": "healthy"}}}}},
    {"services": {"scheduler": {"image": "ordercube:local", "healthcheck": {"test": ["CMD", "true"], "every": "5s"}}}},
    {"services": {"scheduler": {"image": "ordercube:local", "comand": ["dask", "scheduler"]}}},
    {"servics": {}},
])
def test_the_validator_rejects_broken_compose_files(validator, broken) -> None:
    assert schema_errors(validator, broken), f"the schema accepted {broken}"


def test_the_validator_rejects_a_broken_copy_of_our_compose_file(compose, validator) -> None:
    broken = copy.deepcopy(compose)
    broken["services"]["worker"]["deploy"]["resources"]["limits"]["memory"] = 2560  # must be a string
    assert schema_errors(validator, broken)


# -- this project's rules ----------------------------------------------------------------------------


def test_services_are_scheduler_worker_and_driver(compose) -> None:
    assert set(SERVICES) <= set(compose["services"])


def test_published_ports_bind_loopback_only(compose) -> None:
    published = {}
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            if isinstance(port, dict):  # long syntax
                assert port.get("host_ip") == "127.0.0.1", f"{name}: {port} is not bound to 127.0.0.1"
                published[int(port["published"])] = name
            else:
                host_ip, _, rest = str(port).partition(":")
                assert host_ip == "127.0.0.1" and rest.count(":") == 1, (
                    f"{name}: port {port!r} must be published as '127.0.0.1:HOST:CONTAINER'")
                published[int(rest.split(":")[0])] = name
    assert published == {8786: "scheduler", 8787: "scheduler"}


def test_one_image_for_scheduler_workers_and_driver(compose) -> None:
    services = compose["services"]
    builds = {name: services[name].get("build") for name in SERVICES}
    images = {name: services[name].get("image") for name in SERVICES}
    assert len({json.dumps(build, sort_keys=True) for build in builds.values()}) == 1, builds
    assert len(set(images.values())) == 1, images
    build = builds["scheduler"]
    context = build if isinstance(build, str) else build.get("context", ".")
    assert context in (".", "./"), "the image is built from this repository's Dockerfile"


def test_scheduler_and_worker_commands(compose) -> None:
    assert command_words(compose["services"]["scheduler"])[:2] == ["dask", "scheduler"]
    assert command_words(compose["services"]["worker"])[:3] == ["dask", "worker", SCHEDULER]


def test_worker_threads_and_memory_limits(compose) -> None:
    worker = compose["services"]["worker"]
    words = command_words(worker)
    assert words[words.index("--nthreads") + 1] == "1"
    dask_limit = bytes_of(words[words.index("--memory-limit") + 1], binary_suffixes=False)
    limits = worker.get("deploy", {}).get("resources", {}).get("limits", {})
    container_limit = limits.get("memory", worker.get("mem_limit"))
    assert container_limit, "the worker container needs a memory limit (deploy.resources.limits.memory or mem_limit)"
    # Dask's nanny must act before the kernel's OOM killer does.
    assert 0 < dask_limit < bytes_of(str(container_limit), binary_suffixes=True)
    assert float(limits["cpus"]) >= 1
    assert "replicas" not in worker.get("deploy", {}), "the worker count is set with --scale worker=N"


def test_scheduler_healthcheck_gates_workers_and_driver(compose) -> None:
    services = compose["services"]
    test = " ".join(services["scheduler"]["healthcheck"]["test"])
    assert "8787/health" in test
    for name in ("worker", "driver"):
        assert services[name]["depends_on"]["scheduler"]["condition"] == "service_healthy", name


def test_driver_runs_the_config_on_the_compose_scheduler(compose) -> None:
    driver = compose["services"]["driver"]
    script = " ".join(command_words(driver))
    assert re.search(r"ordercube run \S+ --scheduler " + re.escape(SCHEDULER) + r"\b", script), script
    assert "ordercube report" in script
    assert "--out" in script and "/results/" in script
    # CONFIG comes from the environment ('$$' is Compose's escape of '$'), quickstart by default.
    assert "$$CONFIG" in script
    default = re.fullmatch(r"\$\{CONFIG:-(.+)\}", driver["environment"]["CONFIG"]).group(1)
    assert default == "configs/quickstart.yaml" and (REPO / default).is_file()
    run_flags = set(re.findall(r"--[a-z-]+", script.split("ordercube run", 1)[1].split("\n")[0]))
    from ordercube.pipeline.cli import _parser

    run_parser = _parser()._subparsers._group_actions[0].choices["run"]
    known = {flag for action in run_parser._actions for flag in action.option_strings}
    assert run_flags <= known, f"flags that 'ordercube run' does not have: {run_flags - known}"


def test_driver_writes_the_cube_to_a_volume(compose) -> None:
    driver = compose["services"]["driver"]
    targets = {}
    for volume in driver["volumes"]:
        source, target = (volume["source"], volume["target"]) if isinstance(volume, dict) else volume.split(":")[:2]
        targets[target] = source
    assert "/results" in targets
    source = targets["/results"]
    assert source.startswith(("./", "/")) or source in compose.get("volumes", {}), source


# -- the Dockerfile ---------------------------------------------------------------------------------


def test_dockerfile_is_pinned_to_the_dask_version_it_installs() -> None:
    instructions = dockerfile_instructions()
    froms = [arguments for keyword, arguments in instructions if keyword == "FROM"]
    assert len(froms) == 1, froms
    image, _, tag = froms[0].split()[0].rpartition(":")
    assert image == "ghcr.io/dask/dask", image
    match = re.fullmatch(r"(\d{4}\.\d+\.\d+)-py3\.(\d+)", tag)
    assert match, f"FROM must name an exact release tag like 2026.8.0-py3.11, not {tag!r}"
    dask_version, python_minor = match.group(1), int(match.group(2))
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert python_minor >= int(re.fullmatch(r">=\s*3\.(\d+)", requires).group(1))
    installs = [arguments for keyword, arguments in instructions if keyword == "RUN" and "pip install" in arguments]
    assert len(installs) == 1, installs
    words = shlex.split(next(part for part in installs[0].split("&&") if "pip install" in part))
    assert f"dask=={dask_version}" in words and f"distributed=={dask_version}" in words, words
    assert "." in words, "the Dockerfile installs this package (pip install .) at build time"


def test_dockerfile_copies_the_package_and_runs_as_a_non_root_user() -> None:
    instructions = dockerfile_instructions()
    copied = {word.rstrip("/") for keyword, arguments in instructions if keyword == "COPY"
              for word in arguments.split()[:-1] if not word.startswith("--")}
    assert {"pyproject.toml", "setup.py", "README.md", "ordercube", "pipeline", "tasks", "configs"} <= copied
    for path in copied:
        assert (REPO / path).exists(), f"the Dockerfile copies {path}, which does not exist"
    users = [arguments for keyword, arguments in instructions if keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    entrypoint = [arguments for keyword, arguments in instructions if keyword == "ENTRYPOINT"]
    assert entrypoint and "prepare.sh" not in entrypoint[-1], "no package installs at container start"


def test_dockerfile_warmup_grids_are_valid_configs_of_the_numba_kernels() -> None:
    from ordercube.pipeline.config.study import load_config

    algorithms = set()
    for path in sorted((REPO / "docker").glob("warmup-*.yaml")):
        algorithms |= {method.algorithm for method in load_config(path).methods}
    assert algorithms == {"kmeans_1d_exact"}  # k-means and the Hungarian method are Cython, built by pip


def test_dockerignore_keeps_local_state_out_of_the_image() -> None:
    ignored = {line.strip().rstrip("/") for line in (REPO / ".dockerignore").read_text().splitlines()}
    assert {".venv", "results", ".git"} <= ignored
    assert not {"pipeline", "tasks", "configs", "pyproject.toml", "README.md", "docker"} & ignored
