#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs the project with its dev tools. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "mkq needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# Reinstall whenever pyproject.toml differs from the one last installed (or the checkout moved).
stamp=.venv/.mkq-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $(pwd)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
  echo "$want" > "$stamp"
fi
