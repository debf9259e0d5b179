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
# shellcheck source=lib/pyvenv.sh
. "$root/scripts/lib/pyvenv.sh"

install() {
  pyvenv_install flightsql-client.sh "$venv" bin/python "adbc-driver-flightsql $version and pyarrow" '' "adbc-driver-flightsql==$version" "adbc-driver-manager==$version" pyarrow
}

case "${1:-}" in
  install) install ;;
  python) install; echo "$venv/bin/python" ;;
  *) echo "usage: $0 install | python" >&2; exit 2 ;;
esac
