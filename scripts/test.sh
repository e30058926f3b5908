#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is needed, makes sure Postgres runs,
# then runs pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/postgres.sh
export MKQ_TEST_DATABASE_URL=${MKQ_TEST_DATABASE_URL:-postgresql+asyncpg://postgres@127.0.0.1:5432/test}
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
