#!/usr/bin/env bash
# Installs the peers of `npm run bench:peers` from the package registries, idempotently and quietly,
# into .hd/bench-deps/ (gitignored):
#   PostgreSQL   Debian's `postgresql` package (apt-get; needs root, or an existing install)
#   chDB         PyPI `chdb` in a virtual environment (.hd/bench-deps/chdb)
#   QuestDB      Maven Central org.questdb:questdb jar (.hd/bench-deps/questdb/questdb.jar); needs java 17+
# DuckDB is @duckdb/node-api, already a dependency of the project.
#
#   bench/peers/install.sh            install all three
#   bench/peers/install.sh pg|chdb|questdb
#
# Prints one line per peer: `<peer> ok <detail>` or `<peer> unavailable <reason>`, never fails on a
# peer it cannot install (the bench skips that peer and prints the reason).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
deps="${HD_BENCH_DEPS:-$root/.hd/bench-deps}"
CHDB_VERSION="${CHDB_VERSION:-4.4.0}"
QUESTDB_VERSION="${QUESTDB_VERSION:-9.3.4}"
mkdir -p "$deps"

pg() {
  local bin
  bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "install.sh: installing postgresql from Debian" >&2
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >"$deps/apt.log" 2>&1
      bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    fi
  fi
  if [ -n "$bin" ] && [ -x "$bin/initdb" ] && command -v psql >/dev/null; then echo "pg ok $bin"; else echo "pg unavailable: no PostgreSQL server binaries and apt-get could not install them (see $deps/apt.log)"; fi
}

chdb() {
  local venv="$deps/chdb"
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    echo "install.sh: installing chdb $CHDB_VERSION from PyPI into $venv" >&2
    if python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q --disable-pip-version-check "chdb==$CHDB_VERSION" >"$deps/chdb.log" 2>&1; then
      touch "$venv/.complete"
    fi
  fi
  if [ -f "$venv/.complete" ]; then echo "chdb ok $venv/bin/python"; else echo "chdb unavailable: pip install chdb==$CHDB_VERSION failed (see $deps/chdb.log)"; fi
}

questdb() {
  local dir="$deps/questdb" jar="$deps/questdb/questdb-$QUESTDB_VERSION.jar"
  mkdir -p "$dir"
  if ! command -v java >/dev/null; then echo "questdb unavailable: java is not on PATH (QuestDB needs Java 17+)"; return; fi
  if [ ! -s "$jar" ]; then
    echo "install.sh: fetching org.questdb:questdb:$QUESTDB_VERSION from Maven Central" >&2
    if ! curl -fsSL -o "$jar.part" "https://repo1.maven.org/maven2/org/questdb/questdb/$QUESTDB_VERSION/questdb-$QUESTDB_VERSION.jar"; then
      rm -f "$jar.part"
      echo "questdb unavailable: cannot fetch questdb-$QUESTDB_VERSION.jar from Maven Central"
      return
    fi
    mv "$jar.part" "$jar"
  fi
  echo "questdb ok $jar"
}

case "${1:-all}" in
  pg) pg ;;
  chdb) chdb ;;
  questdb) questdb ;;
  all) pg; chdb; questdb ;;
  *) echo "usage: $0 [pg|chdb|questdb]" >&2; exit 2 ;;
esac
