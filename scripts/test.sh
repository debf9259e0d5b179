#!/usr/bin/env bash
# The project's test command (`npm test`): the uvu suite, then the Rust core's cargo tests.
# Each test file runs in its own process under a time limit, so a hang or a leaked handle in one
# file fails that file instead of stalling the run. A file that fails is run once more; one that
# then passes is named FLAKY at the end, with its first failure. Prints one closing line
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f engine-rs/index.node ] || npm run build:native || exit 1
# The ingester's tests need a Kafka broker and an S3 server; install (and cache) them up front. A
# failure here is not fatal: those tests then skip with a loud message.
for c in kafka s3; do bash "scripts/$c.sh" install || echo "test.sh: scripts/$c.sh install failed; its ingester tests will be SKIPPED" >&2; done
# Clients from outside the project for the SQL doors' tests (ADBC's Flight SQL driver, psycopg 3, pgjdbc).
for c in flightsql-client pg-clients; do bash "scripts/$c.sh" install || echo "test.sh: scripts/$c.sh install failed; the SQL client tests that need it will fail" >&2; done
# The Kubernetes API schemas for the manifests' validation (PyPI's kubernetes-validate; the test skips loudly without).
bash scripts/k8s-validate.sh install || echo "test.sh: scripts/k8s-validate.sh install failed; the manifests' schema validation will be SKIPPED" >&2
# Headless Chromium from Debian's packages for the WebUX browser test (it skips loudly without one).
bash scripts/chromium.sh install || echo "test.sh: scripts/chromium.sh install failed; the WebUX browser test will be SKIPPED" >&2

FILE_LIMIT_S=${HD_TEST_FILE_LIMIT_S:-600}
strip() { sed -E 's/\x1b\[[0-9;]*m//g'; }
uvu_pass=0
uvu_total=0
uvu_failed_files=()
flaky_files=()
# What a failed file printed, kept to be shown again at the end: CI shows the tail of the log, and
# a failure printed mid-run would be lost above the cargo tests' output.
report=$(mktemp)
start=$(date +%s)
# Runs one test file in its own session (whatever it started and left behind goes with it); its
# output in $2, its exit code returned.
run_file() {
  setsid timeout -k 10 "$FILE_LIMIT_S" node scripts/uvu-file.js "$1" > "$2" 2>&1 &
  local pid=$!
  wait "$pid"
  local rc=$?
  kill -9 -- "-$pid" 2>/dev/null
  return "$rc"
}
# The lines of a file's output that say what failed: uvu's failure blocks and anything after them.
failure_excerpt() {
  strip < "$1" | awk '/FAIL|✘|Error|assert|Expected|Actual|left open|did not finish/ {show=1} show' | tail -n 60
}
while IFS= read -r f; do
  out=$(mktemp)
  t0=$(date +%s)
  run_file "$f" "$out"
  rc=$?
  cat "$out"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
    # One more try: a file that fails once and then passes is reported as flaky at the end, with
    # its first failure, so it gets fixed without holding back everything else.
    { echo "---- $f failed (exit $rc); its first run's failure:"; failure_excerpt "$out"; } >> "$report"
    echo "test.sh: $f failed (exit $rc); running it once more" >&2
    run_file "$f" "$out"
    rc=$?
    cat "$out"
    if [ "$rc" -eq 0 ]; then
      flaky_files+=("$f")
    else
      { echo "---- $f failed again (exit $rc):"; failure_excerpt "$out"; } >> "$report"
    fi
  fi
  p=$(strip < "$out" | awk '/Passed:/ {print $2}' | tail -1)
  t=$(strip < "$out" | awk '/Total:/ {print $2}' | tail -1)
  uvu_pass=$(( uvu_pass + ${p:-0} ))
  uvu_total=$(( uvu_total + ${t:-0} ))
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 124 ] && echo "test.sh: $f did not finish within ${FILE_LIMIT_S} s" | tee -a "$report" >&2
    uvu_failed_files+=("$f (exit $rc)")
    # A file that died before its summary still counts as one failure.
    [ "${t:-0}" -eq "${p:-0}" ] && uvu_total=$(( uvu_total + 1 ))
  fi
  echo "test.sh: $f $(( $(date +%s) - t0 )) s"
  rm -f "$out"
done < <(find test -name '*.test.ts' | sort)
echo "test.sh: uvu files took $(( $(date +%s) - start )) s"

cargo_out=$(mktemp)
(cd engine-rs && cargo test --release --workspace 2>&1) | tee "$cargo_out"
cargo_rc=${PIPESTATUS[0]}
cargo_pass=$(grep -E '^test result:' "$cargo_out" | awk '{s+=$4} END {print s+0}')
cargo_fail=$(grep -E '^test result:' "$cargo_out" | awk '{s+=$6} END {print s+0}')

passed=$(( uvu_pass + cargo_pass ))
failed=$(( uvu_total - uvu_pass + cargo_fail ))
[ "$cargo_rc" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo
if [ -s "$report" ]; then
  echo "test.sh: what the failed test files printed:"
  cat "$report"
  echo
fi
rm -f "$report"
for f in "${flaky_files[@]}"; do echo "FLAKY: $f failed, then passed on its second run (its first failure is above)"; done
for f in "${uvu_failed_files[@]}"; do echo "FAILED: $f"; done
echo "uvu: ${uvu_pass} of ${uvu_total} tests; cargo: ${cargo_pass} passed, ${cargo_fail} failed"
echo "${passed} passed, ${failed} failed"
[ "${#uvu_failed_files[@]}" -eq 0 ] && [ "$cargo_rc" -eq 0 ]
