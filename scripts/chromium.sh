#!/usr/bin/env bash
# Headless Chromium from Debian's packages, for the WebUX browser test (test/control/webuxBrowser.test.ts),
# driven by playwright-core pointed at this binary (no browser is ever downloaded by npm or playwright).
#
#   scripts/chromium.sh install   apt-get install chromium when it is not on PATH (needs root); idempotent
#   scripts/chromium.sh path      print the browser's path, or fail saying how to install it
#
# CHROMIUM_PATH overrides the binary looked for.
set -euo pipefail

find_browser() {
  for c in "${CHROMIUM_PATH:-}" chromium chromium-browser google-chrome; do
    [ -n "$c" ] || continue
    if p="$(command -v "$c" 2>/dev/null)"; then echo "$p"; return 0; fi
  done
  return 1
}

case "${1:-}" in
  install)
    if find_browser >/dev/null; then exit 0; fi
    if [ "$(id -u)" != 0 ]; then echo "chromium.sh: chromium is not installed and this is not root; run: apt-get install -y chromium" >&2; exit 1; fi
    echo "chromium.sh: installing chromium from Debian's packages" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/tmp/chromium-apt.log 2>&1 \
      || { (apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/tmp/chromium-apt.log 2>&1) \
      || { tail -20 /tmp/chromium-apt.log >&2; echo "chromium.sh: apt-get install chromium failed" >&2; exit 1; }; }
    find_browser >/dev/null
    ;;
  path)
    find_browser || { echo "chromium.sh: no chromium on PATH; run scripts/chromium.sh install (apt-get install chromium)" >&2; exit 1; }
    ;;
  *)
    echo "usage: scripts/chromium.sh install|path" >&2; exit 2 ;;
esac
