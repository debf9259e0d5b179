#!/usr/bin/env bash
# A real S3-compatible HTTP server for the ingester's tests: moto's server mode (PyPI `moto`, its S3
# backend served by `moto_server`), in a virtual environment cached under .hd/test-deps/, on loopback.
#
#   scripts/s3.sh install            create the virtual environment and pip-install moto[s3], flask,
#                                    flask-cors (the server mode's dependencies) into it
#   scripts/s3.sh start DIR PORT     start moto_server on 127.0.0.1:PORT, wait until it answers S3
#                                    requests; prints its pid (kept in DIR/pid)
#   scripts/s3.sh stop DIR           stop the server started in DIR
#
# Needs python3 (3.9+) with the venv module. MOTO_VERSION pins moto (default below).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="${MOTO_VERSION:-5.1.*}"
venv="${HD_TEST_DEPS:-$root/.hd/test-deps}/moto"
# shellcheck source=lib/pyvenv.sh
. "$root/scripts/lib/pyvenv.sh"

install() {
  pyvenv_install s3.sh "$venv" bin/moto_server "moto[s3] $version (server mode)" '' "moto[s3]==$version" flask flask-cors
}

start() {
  local dir="$1" port="$2"
  install
  mkdir -p "$dir"
  nohup "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$dir/server.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/pid"
  for _ in $(seq 1 300); do
    if ! kill -0 "$pid" 2>/dev/null; then cat "$dir/server.log" >&2; echo "s3.sh: moto_server exited during start-up" >&2; return 1; fi
    if curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then echo "$pid"; return 0; fi
    sleep 0.1
  done
  echo "s3.sh: moto_server did not answer on 127.0.0.1:$port within 30 s" >&2
  kill "$pid" 2>/dev/null || true
  return 1
}

stop() {
  local dir="$1"
  [ -f "$dir/pid" ] || return 0
  local pid; pid="$(cat "$dir/pid")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || { rm -f "$dir/pid"; return 0; }; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

case "${1:-}" in
  install) install ;;
  start) [ $# -eq 3 ] || { echo "usage: $0 start DIR PORT" >&2; exit 2; }; start "$2" "$3" ;;
  stop) [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
  *) echo "usage: $0 install | start DIR PORT | stop DIR" >&2; exit 2 ;;
esac
