"""Check a container's `mkq ...` argument list against the real command line.

Manifests and compose files name flags by hand; a renamed or missing flag would only show when
a pod crash-loops. This asks `mkq <group> <command> --help` which flags exist and click which
options are required (and through which environment variable they may come instead).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache

import click
from click.testing import CliRunner

from mkq.cli import cli

FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


@cache
def help_flags(path: tuple[str, ...]) -> frozenset[str]:
    """Every flag `mkq <path> --help` lists."""
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, f"mkq {' '.join(path)} --help failed: {result.output}"
    options = result.output.split("Options:", 1)[1]
    found: set[str] = set()
    for line in options.splitlines():
        head = line.strip().split("  ")[0]
        for part in head.split("/"):
            found.update(FLAG.findall(part))
    return frozenset(found)


def _command(path: Sequence[str]) -> click.Command:
    command: click.Command = cli
    context = click.Context(cli)
    for name in path:
        assert isinstance(command, click.Group), f"mkq {' '.join(path)}: not a group"
        found = command.get_command(context, name)
        assert found is not None, f"mkq has no command {' '.join(path)}"
        command = found
    return command


def command_path(args: Sequence[str]) -> tuple[str, ...]:
    """The leading words of `args` that name a command (`agent run`, `manager serve`...)."""
    path: list[str] = []
    command: click.Command = cli
    for word in args:
        if not isinstance(command, click.Group) or word.startswith("-"):
            break
        found = command.get_command(click.Context(command), word)
        assert found is not None, f"mkq has no command {' '.join([*path, word])}"
        path.append(word)
        command = found
    assert not isinstance(command, click.Group), f"`mkq {' '.join(path)}` needs a subcommand"
    return tuple(path)


def check_mkq_args(args: Sequence[str], env: Mapping[str, str], where: str) -> list[str]:
    """Problems with running `mkq *args` in an environment holding the names in `env`."""
    problems: list[str] = []
    path = command_path(args)
    flags = help_flags(path)
    given: set[str] = set()
    for arg in args[len(path) :]:
        if arg.startswith("-"):
            flag = arg.split("=", 1)[0]
            given.add(flag)
            if flag not in flags:
                problems.append(f"{where}: `mkq {' '.join(path)}` has no flag {flag}")
    for variable in re.findall(r"\$\((\w+)\)", " ".join(args)):
        if variable not in env:
            problems.append(f"{where}: $({variable}) is not set in the container's env")
    for param in _command(path).params:
        if not isinstance(param, click.Option) or not param.required:
            continue
        envvars = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or [])
        if not given & set(param.opts) and not any(v in env for v in envvars):
            problems.append(
                f"{where}: `mkq {' '.join(path)}` requires {'/'.join(param.opts)}"
                + (f" (or {envvars[0]})" if envvars else "")
            )
    return problems
