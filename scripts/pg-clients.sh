#!/usr/bin/env bash
# PostgreSQL drivers from outside the project, for the tests of hd_sql's PostgreSQL wire door
# (test/sql/pgClients.test.ts): psycopg 3 (PyPI) and pgjdbc (Maven Central). psql and node-postgres
# are tested too but come from Debian and npm.
#
#   scripts/pg-clients.sh install    create a virtual environment with psycopg[binary] 3 under
#                                    .hd/test-deps/psycopg, and fetch the pgjdbc jar
#                                    (org.postgresql:postgresql) into .hd/test-deps/pgjdbc
#                                    (mvn dependency:copy, as scripts/kafka.sh does); idempotent
#   scripts/pg-clients.sh paths      print the venv's python and the jar, one a line
#
# Needs python3 (3.9+) with the venv module, Java 17+ and mvn on PATH. PSYCOPG_VERSION and
# PGJDBC_VERSION override the versions (defaults below).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
deps="${HD_TEST_DEPS:-$root/.hd/test-deps}"
psycopg_version="${PSYCOPG_VERSION:-3.2.*}"
pgjdbc_version="${PGJDBC_VERSION:-42.7.7}"
venv="$deps/psycopg"
jdbc_dir="$deps/pgjdbc"
jar="$jdbc_dir/postgresql-$pgjdbc_version.jar"
# shellcheck source=lib/pyvenv.sh
. "$root/scripts/lib/pyvenv.sh"

install_psycopg() {
  pyvenv_install pg-clients.sh "$venv" bin/python "psycopg[binary] $psycopg_version" 'import psycopg; psycopg.pq.version()' "psycopg[binary]==$psycopg_version"
}

install_pgjdbc() {
  if [ -f "$jar" ] && [ -f "$jdbc_dir/.complete-$pgjdbc_version" ]; then return 0; fi
  command -v java >/dev/null || { echo "pg-clients.sh: java is not on PATH (pgjdbc's test program needs Java 11+)" >&2; return 1; }
  command -v mvn >/dev/null || { echo "pg-clients.sh: mvn is not on PATH (apt-get install maven)" >&2; return 1; }
  mkdir -p "$jdbc_dir"
  echo "pg-clients.sh: fetching org.postgresql:postgresql $pgjdbc_version (pgjdbc) from Maven Central" >&2
  # No pom needed: dependency:copy takes the artifact on the command line. pgjdbc has no runtime
  # dependencies (checker-qual is compile-only), so the one jar is the whole driver.
  # Maven's output is kept for a failure only (it prints colour codes even when quiet).
  (cd "$jdbc_dir" && mvn -q -B -Dstyle.color=never org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
    "-Dartifact=org.postgresql:postgresql:$pgjdbc_version:jar" "-DoutputDirectory=$jdbc_dir") >"$jdbc_dir/mvn.log" 2>&1 \
    || { cat "$jdbc_dir/mvn.log" >&2; echo "pg-clients.sh: mvn dependency:copy of org.postgresql:postgresql:$pgjdbc_version failed" >&2; return 1; }
  [ -f "$jar" ] || { echo "pg-clients.sh: $jar did not appear after mvn dependency:copy" >&2; return 1; }
  touch "$jdbc_dir/.complete-$pgjdbc_version"
}

case "${1:-}" in
  install) install_psycopg && install_pgjdbc ;;
  paths) echo "$venv/bin/python"; echo "$jar" ;;
  *) echo "usage: $0 install | paths" >&2; exit 2 ;;
esac
