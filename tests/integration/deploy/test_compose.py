"""docker-compose.yaml: Compose accepts it, and its services fit together and fit the code (the
mkq flags they pass, the files they name, the addresses they reach each other at)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import yaml
from cryptography.fernet import Fernet

from .cli_flags import check_mkq_args
from .conftest import ROOT, run

COMPOSE_FILE = ROOT / "docker-compose.yaml"
IMAGE_ROOT = "/opt/mkq/"  # where the Dockerfile puts deploy/
WORKERS = ("worker-1", "worker-2")
EXPECTED_SERVICES = (
    {"postgres", "migrate", "manager"}
    | {f"{w}{suffix}" for w in WORKERS for suffix in ("", "-api", "-bootstrap")}
    | {"agent-1", "agent-2"}
)

Service = dict[str, Any]


def _interpolate(text: str) -> str:
    """Compose's ${NAME:-default} with nothing set, and $$ for a literal $."""
    text = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)
    return text.replace("$$", "$")


def _services() -> dict[str, Service]:
    document = yaml.safe_load(_interpolate(COMPOSE_FILE.read_text()))
    services: dict[str, Service] = document["services"]
    return services


def _argv(service: Service) -> list[str]:
    """The mkq arguments a service runs, whether as the image's entrypoint or through `sh -c`."""
    command = [str(part) for part in service.get("command") or []]
    if service.get("entrypoint") == ["sh", "-c"]:
        words = shlex.split(command[0])
        assert words[:2] == ["exec", "mkq"], f"unexpected shell command {command[0]!r}"
        return words[2:]
    return command


def _flag(argv: list[str], name: str) -> str:
    assert name in argv, f"{name} missing from {argv}"
    return argv[argv.index(name) + 1]


async def _compose_config() -> str | None:
    """`docker compose config` (or docker-compose's), when a Compose client is installed."""
    candidates: list[list[str]] = []
    docker = shutil.which("docker")
    if docker is not None:
        candidates.append([docker, "compose"])
    legacy = shutil.which("docker-compose")
    if legacy is not None:
        candidates.append([legacy])
    for client in candidates:
        if client[-1] == "compose" and (await run([*client, "version"])).code != 0:
            continue  # `docker` without the compose plugin
        result = await run([*client, "--file", str(COMPOSE_FILE), "config"])
        assert result.code == 0, f"{' '.join(client)} config rejected the file:\n{result.err}"
        return result.out
    return None


async def test_compose_accepts_the_file_with_its_services_and_volumes() -> None:
    rendered = await _compose_config()
    if rendered is None:
        # No Compose client on this machine: hold the file to the same shape by reading it.
        rendered = _interpolate(COMPOSE_FILE.read_text())
    config = yaml.safe_load(rendered)
    assert set(config["services"]) == EXPECTED_SERVICES
    assert set(config["volumes"]) == {"postgres-data", "kubeconfigs"}
    for name, service in config["services"].items():
        for dependency in service.get("depends_on") or {}:
            assert dependency in config["services"], f"{name} depends on unknown {dependency}"
        for volume in service.get("volumes") or []:
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            assert source in config["volumes"], f"{name} mounts undeclared volume {source}"


def test_every_mkq_command_uses_real_flags() -> None:
    checked = set()
    for name, service in _services().items():
        runs_mkq = service.get("entrypoint") in (None, ["sh", "-c"])
        if service.get("image") != "mkq:latest" or not runs_mkq:
            continue  # postgres, and the Python scripts of deploy/compose/
        environment = service.get("environment") or {}
        assert check_mkq_args(_argv(service), environment, name) == []
        checked.add(name)
    assert checked == {"migrate", "manager", *WORKERS, "agent-1", "agent-2"}


def test_manager_settings_are_valid_and_point_at_postgres() -> None:
    services = _services()
    environment = services["manager"]["environment"]
    assert services["migrate"]["environment"] == environment
    assert len(environment["MKQ_API_TOKEN"]) >= 8
    Fernet(environment["MKQ_ENCRYPTION_KEY"].encode())  # raises on a malformed key
    postgres = services["postgres"]["environment"]
    user, password, db = (
        postgres["POSTGRES_USER"],
        postgres["POSTGRES_PASSWORD"],
        postgres["POSTGRES_DB"],
    )
    assert environment["MKQ_DATABASE_URL"] == (
        f"postgresql+asyncpg://{user}:{password}@postgres:5432/{db}"
    )
    assert _flag(services["manager"]["command"], "--listen") == "0.0.0.0:8080"


def test_each_worker_its_forwarder_bootstrap_and_agent_fit_together() -> None:
    services = _services()
    for index, worker in enumerate(WORKERS, start=1):
        kubesim = services[worker]["command"]
        kubeconfig = _flag(kubesim, "--kubeconfig-out")
        port = _flag(kubesim, "--port")
        assert _flag(kubesim, "--kubeconfig-scheme") == "http"
        assert _flag(kubesim, "--name") == worker

        forwarder = services[f"{worker}-api"]
        assert forwarder["network_mode"] == f"service:{worker}"
        assert forwarder["entrypoint"][1] == f"{IMAGE_ROOT}deploy/compose/tcp_forward.py"
        target = _flag(forwarder["command"], "--target")
        assert target == f"127.0.0.1:{port}", "the forwarder must reach kubesim's port"
        listen_host, _, listen_port = _flag(forwarder["command"], "--listen").rpartition(":")
        assert listen_host == "0.0.0.0", "the other containers must reach the forwarder"

        bootstrap = services[f"{worker}-bootstrap"]
        assert bootstrap["network_mode"] == f"service:{worker}"
        arguments = bootstrap["command"]
        assert _flag(arguments, "--name") == worker
        assert _flag(arguments, "--kubeconfig") == kubeconfig
        assert _flag(arguments, "--server-for-manager") == (f"http://{worker}:{listen_port}")
        assert _flag(arguments, "--manager-url") == "http://manager:8080"

        agent = services[f"agent-{index}"]
        assert agent["network_mode"] == f"service:{worker}", "kubesim listens on loopback only"
        argv = _argv(agent)
        assert _flag(argv, "--kubeconfig") == kubeconfig
        assert _flag(argv, "--cluster-name") == worker
        assert _flag(argv, "--token-file") == str(Path(kubeconfig).with_name(worker + ".token"))
        assert agent["depends_on"] == {
            f"{worker}-bootstrap": {"condition": "service_completed_successfully"}
        }


def test_files_the_services_name_are_in_the_image() -> None:
    """Paths under /opt/mkq/ come from deploy/, which the Dockerfile copies there."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    named = set(re.findall(r"/opt/mkq/[\w./-]+", COMPOSE_FILE.read_text()))
    assert named, "the services name files of the image"
    for path in named:
        relative = path.removeprefix(IMAGE_ROOT)
        assert (ROOT / relative).exists(), f"{path}: no {relative} in the repository"
        copied = [
            line.split()[1]
            for line in dockerfile.splitlines()
            if line.startswith("COPY ") and line.split()[2].startswith(IMAGE_ROOT)
        ]
        assert any(relative.startswith(source) for source in copied), (
            f"{path}: the Dockerfile copies no {relative}"
        )
