#!/usr/bin/env bash
# A real Arrow Flight SQL client from outside the project for hd_sql's Flight SQL tests: ADBC's
# Flight SQL driver (PyPI `adbc-driver-flightsql`, with `adbc-driver-manager` for the DB-API and
# `pyarrow`), in a virtual environment cached under .hd/test-deps/flightsql.
#
#   scripts/flightsql-client.sh install     create the virtual environment and pip-install the driver
#   scripts/flightsql-client.sh python      print the path of the environment's python
#
# Needs python3 (3.9+) with the venv module. ADBC_VERSION pins the driver (default below).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="${ADBC_VERSION:-1.*}"
venv="${HD_TEST_DEPS:-$root/.hd/test-deps}/flightsql"

install() {
  if [ -x "$venv/bin/python" ] && [ -f "$venv/.complete" ]; then return 0; fi
  command -v python3 >/dev/null || { echo "flightsql-client.sh: python3 is not on PATH" >&2; return 1; }
  rm -rf "$venv"
  echo "flightsql-client.sh: installing adbc-driver-flightsql $version and pyarrow from PyPI into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "adbc-driver-flightsql==$version" "adbc-driver-manager==$version" pyarrow >&2
  touch "$venv/.complete"
}

case "${1:-}" in
  install) install ;;
  python) install; echo "$venv/bin/python" ;;
  *) echo "usage: $0 install | python" >&2; exit 2 ;;
esac
