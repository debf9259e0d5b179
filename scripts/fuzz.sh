#!/usr/bin/env bash
# Every fuzz target of the project, coverage-guided, for S seconds each (`npm run fuzz -- --seconds S`):
#
#   scripts/fuzz.sh [--seconds S] [--only rust|ts] [--target NAME]
#
# Rust (engine-rs/fuzz): libFuzzer through libfuzzer-sys, built on the stable toolchain with the
# SanitizerCoverage flags cargo-fuzz would pass (no nightly, no cargo-fuzz needed; `--target` keeps
# the flags off build scripts). Each target starts from engine-rs/fuzz/seeds/<target>/ plus its
# working corpus engine-rs/fuzz/corpus/<target>/ (kept between runs, not committed); a crash is
# saved under engine-rs/fuzz/artifacts/<target>/. TypeScript: test/fuzz/run.ts (V8 block coverage).
# Prints one line per target and "fuzz: N targets, E executions, F findings"; exits 1 on a finding.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=10 only="" target=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    *) echo "fuzz.sh: unknown argument $1 (--seconds S, --only rust|ts, --target NAME)" >&2; exit 2 ;;
  esac
done
findings=0 execs=0 count=0
rust_targets=(hdwp_frame hdwp_eob schema_json ndjson_parse segment_read filter_json rego_policy columnar_body netio_frame)

if [ "$only" != "ts" ]; then
  triple="$(rustc -vV | awk '/^host:/ {print $2}')"
  flags="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
  flags="$flags -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
  flags="$flags -Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
  echo "fuzz.sh: building the Rust targets (release, SanitizerCoverage, $triple)" >&2
  (cd engine-rs/fuzz && RUSTFLAGS="$flags" cargo build --release --target "$triple" --bins 2>&1 | tail -3) >&2
  bin="engine-rs/fuzz/target/$triple/release"
  for t in "${rust_targets[@]}"; do
    [ -n "$target" ] && [ "$t" != "$target" ] && continue
    [ -x "$bin/$t" ] || { echo "fuzz.sh: $bin/$t was not built" >&2; findings=$((findings + 1)); continue; }
    mkdir -p "engine-rs/fuzz/corpus/$t" "engine-rs/fuzz/artifacts/$t"
    log=$(mktemp)
    "$bin/$t" "engine-rs/fuzz/corpus/$t" "engine-rs/fuzz/seeds/$t" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="engine-rs/fuzz/artifacts/$t/" >"$log" 2>&1
    rc=$?
    n=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    corpus=$(find "engine-rs/fuzz/corpus/$t" -type f | wc -l)
    execs=$((execs + ${n:-0})); count=$((count + 1))
    if [ "$rc" -ne 0 ]; then
      findings=$((findings + 1))
      echo "rust $t: FINDING (exit $rc), ${n:-?} execs; see engine-rs/fuzz/artifacts/$t/"
      grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" | head -5
    else
      echo "rust $t: ${n:-0} execs, coverage ${cov:-?} edges, corpus $corpus inputs, 0 findings"
    fi
    rm -f "$log"
  done
fi

if [ "$only" != "rust" ]; then
  log=$(mktemp)
  npx tsx test/fuzz/run.ts --seconds "$seconds" ${target:+--target "$target"} | tee "$log" | grep -v '^{' | sed 's/^\([a-z_]*:\)/ts \1/'
  [ "${PIPESTATUS[0]}" -ne 0 ] && findings=$((findings + $(grep -c 'FINDING' "$log")))
  summary=$(grep '^{' "$log" | tail -1)
  if [ -n "$summary" ]; then
    execs=$((execs + $(node -e 'let s=0;for(const t of JSON.parse(process.argv[1]).targets)s+=t.execs;console.log(s)' "$summary")))
    count=$((count + $(node -e 'console.log(JSON.parse(process.argv[1]).targets.length)' "$summary")))
  fi
  rm -f "$log"
fi

echo "fuzz: $count targets, $execs executions, $findings findings"
[ "$findings" -eq 0 ]
