"""The Dockerfile builds one slim, non-root image whose entrypoint is `mkq`, with everything the
package needs copied in. There is no Docker engine here to build it, so it is read instead."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field

from .conftest import DEPLOY, ROOT, documents

DOCKERFILE = ROOT / "Dockerfile"


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def last(self, keyword: str) -> str | None:
        values = [value for key, value in self.instructions if key == keyword]
        return values[-1] if values else None

    def all(self, keyword: str) -> list[str]:
        return [value for key, value in self.instructions if key == keyword]


def parse(text: str) -> list[Stage]:
    """Stages of a Dockerfile, with continuation lines joined and comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    stages: list[Stage] = []
    for line in lines:
        keyword, _, value = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            match = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", value, re.IGNORECASE)
            assert match is not None, line
            stages.append(Stage(match.group(1), match.group(2)))
        else:
            assert stages, f"{line!r} comes before any FROM"
            stages[-1].instructions.append((keyword, value.strip()))
    return stages


def _final() -> Stage:
    return parse(DOCKERFILE.read_text())[-1]


def _uid(stage: Stage) -> int:
    user = stage.last("USER")
    assert user is not None, "the final stage sets no USER, so it runs as root"
    name = user.split(":")[0]
    if name.isdigit():
        return int(name)
    created = re.search(rf"useradd\b[^&]*--uid (\d+)[^&]*\b{name}\b", " ".join(stage.all("RUN")))
    assert created is not None, f"USER {name} is not created with a known uid"
    return int(created.group(1))


def test_final_image_runs_as_a_non_root_user() -> None:
    final = _final()
    assert _uid(final) != 0
    assert final.last("USER") not in ("root", "0", "0:0")
    group = (final.last("USER") or "").partition(":")[2]
    assert group not in ("0", "root"), "the primary group must not be root"


def test_entrypoint_is_mkq_in_exec_form() -> None:
    final = _final()
    entrypoint = final.last("ENTRYPOINT")
    assert entrypoint is not None
    assert json.loads(entrypoint) == ["mkq"]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["mkq"] == "mkq.cli:main"


def test_image_is_slim_and_multi_stage() -> None:
    stages = parse(DOCKERFILE.read_text())
    assert len(stages) >= 2, "build in one stage, run in another without pip's leftovers"
    assert stages[-1].base.endswith("-slim") or "distroless" in stages[-1].base
    assert stages[-1].base.startswith("python:3.11")
    build_names = {s.name for s in stages[:-1]}
    sources = [c for c in stages[-1].all("COPY") if c.startswith("--from=")]
    assert sources and all(c.split()[0].removeprefix("--from=") in build_names for c in sources)
    assert not any("pip install" in run for run in stages[-1].all("RUN"))


def test_build_copies_every_package_pyproject_installs() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.rstrip("*") for pattern in include}
    build = parse(DOCKERFILE.read_text())[0]
    copied = {c.split()[0] for c in build.all("COPY")}
    assert packages <= copied, f"not copied into the build: {sorted(packages - copied)}"
    for instruction in [c for stage in parse(DOCKERFILE.read_text()) for c in stage.all("COPY")]:
        if instruction.startswith("--from="):
            continue
        for source in instruction.split()[:-1]:
            assert (ROOT / source).exists(), f"COPY {source}: no such path in the repository"


def test_uid_matches_what_the_manifests_run_as() -> None:
    uid = _uid(_final())
    for base in ("manager", "agent"):
        for doc in documents((DEPLOY / "base" / base / "deployment.yaml").read_text()):
            if doc["kind"] != "Deployment":
                continue
            security = doc["spec"]["template"]["spec"]["securityContext"]
            assert security["runAsUser"] == uid
            assert security["runAsNonRoot"] is True


def test_dockerignore_keeps_secrets_and_bulk_out_of_the_context() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", "tests"} <= ignored
    assert "**/*.kubeconfig" in ignored
