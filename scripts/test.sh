#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is needed, starts Postgres (a private
# cluster when none answers), installs Debian's chromium for the browser test, builds or finds
# cached the real control planes (Go), then runs pytest: every suite, the e2e suite on kubesim
# and on real control planes, the fidelity suite on both. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/postgres.sh
if ! command -v kubectl >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubectl >/dev/null
  else
    echo "the tests drive kubectl: install Debian's 'kubectl' package" >&2
    exit 1
  fi
fi
# The dashboard's browser test drives Debian's chromium through Playwright (no browser download).
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "the dashboard's browser test drives Chromium: install Debian's 'chromium' package" >&2
    exit 1
  fi
fi
.venv/bin/mkq realk8s build >/dev/null
export MKQ_TEST_DATABASE_URL=${MKQ_TEST_DATABASE_URL:-postgresql+asyncpg://postgres@127.0.0.1:5432/test}
export MKQ_E2E_BACKEND=${MKQ_E2E_BACKEND:-kubesim,real}
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
