#!/usr/bin/env bash
# The whole system on embedded defaults: installs what is needed, then runs `mkq demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/mkq demo "$@"
