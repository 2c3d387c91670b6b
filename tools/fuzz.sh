#!/usr/bin/env bash
# Runs the libFuzzer targets (tests/fuzz/). See --help.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
targets=(tfrecord_reader record_index example_parser sequence_example_parser idx_file decode_jpeg
         file_cache iterator_restore training_checkpoint csv saved_dataset saved_model
         onnx_import)
build=${SLUICE_FUZZ_BUILD:-build-asan}

usage() {
  cat <<USAGE
Usage:
  tools/fuzz.sh TARGET [SECONDS]  Fuzz TARGET for SECONDS (default 600) from its corpus, and merge
                                  the inputs that found new coverage into tests/fuzz/corpus/TARGET.
  tools/fuzz.sh --ci [SECONDS]    Every target for SECONDS (default 30) on the committed corpus,
                                  two at a time; the corpus is left as it is. Exit 1 on a finding.
  tools/fuzz.sh --seeds           Rewrite the seed corpora (tests/fuzz/make_seeds.py, then the
                                  targets that make their own seeds).
  tools/fuzz.sh --list            The targets.
Each run prints: target, seconds, executions, executions/s, coverage (edges) and features, corpus
size, and "ok" or the crashing input's path (under $build/fuzz/artifacts/). Reproduce a finding
with: $build/fuzz/TARGET_fuzzer FILE
Environment: SLUICE_FUZZ_BUILD, the build with the targets (default build-asan, where
tools/test.sh builds them); brought up to date here before every run.
USAGE
}

# Always the incremental build (a no-op when current): a target that merely exists may predate the
# code it should fuzz, and a run of it proves nothing about that code.
ensure_built() {
  echo "== building the fuzz targets in $build/ (incremental)"
  bash tools/sanitizer_build.sh "$build" "address;undefined" \
    "core;io;dataset;ops;autotune;profiler;train;tools" -DSLUICE_FUZZ=ON -- fuzzers
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# run_one TARGET SECONDS WORKDIR LOG: fuzz from WORKDIR (and the committed corpus); prints one line.
run_one() {
  local t=$1 secs=$2 work=$3 log=$4
  local dict=() art="$root/$build/fuzz/artifacts"
  [ -f "tests/fuzz/dict/$t.dict" ] && dict=(-dict="tests/fuzz/dict/$t.dict")
  mkdir -p "$work" "$art"
  local rc=0 seeds=()
  # Targets that write genuine checkpoints add fresh ones to the working corpus first.
  case "$t" in iterator_restore|training_checkpoint) seeds=(env SLUICE_FUZZ_SEEDS="$work") ;; esac
  "${seeds[@]}" "$build/fuzz/${t}_fuzzer" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$art/$t-" "${dict[@]}" \
    "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  local done_line execs rate
  done_line=$(grep -E '^#[0-9]+\s+DONE' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  local cov ft corp result=ok
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
  corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$done_line")
  if [ "$rc" != 0 ]; then
    result="FINDING: $(grep -m1 -oE "Test unit written to [^ ]+" "$log" | sed 's/Test unit written to //') (log: $log)"
  fi
  printf '%-24s %5ss %10s execs %7s/s  cov %5s  ft %6s  corpus %4s  %s\n' "$t" "$secs" \
    "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
  [ "$rc" = 0 ]
}

case "${1:-}" in
  -h|--help|"") usage; [ -n "${1:-}" ]; exit ;;
  --list) printf '%s\n' "${targets[@]}"; exit ;;
  --seeds)
    ensure_built
    python3 tests/fuzz/make_seeds.py
    for t in decode_jpeg iterator_restore training_checkpoint saved_dataset saved_model \
      onnx_import; do
      rm -rf "tests/fuzz/corpus/$t" && mkdir -p "tests/fuzz/corpus/$t"
      SLUICE_FUZZ_SEEDS="$root/tests/fuzz/corpus/$t" "$build/fuzz/${t}_fuzzer" -runs=0 \
        "tests/fuzz/corpus/$t" >/dev/null 2>&1
    done
    find tests/fuzz/corpus -type f | wc -l | xargs echo "seed files:"
    exit ;;
  --ci)
    secs=${2:-30}
    ensure_built
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    echo "== every fuzz target for ${secs}s on the committed corpus (2 at a time)"
    failed=0 running=0
    for t in "${targets[@]}"; do
      run_one "$t" "$secs" "$tmp/$t" "$tmp/$t.log" >"$tmp/$t.line" || echo "$t" >>"$tmp/failed" &
      running=$((running + 1))
      if [ "$running" -ge 2 ]; then wait -n || true; running=$((running - 1)); fi
    done
    wait
    for t in "${targets[@]}"; do cat "$tmp/$t.line"; done
    if [ -s "$tmp/failed" ]; then
      for t in $(cat "$tmp/failed"); do
        echo "== $t found a failure (the end of its log):"
        grep -vE '^#[0-9]+ ' "$tmp/$t.log" | tail -60
      done
      exit 1
    fi
    exit ;;
  -*) usage >&2; exit 2 ;;
esac

t=$1 secs=${2:-600}
[[ " ${targets[*]} " == *" $t "* ]] || { echo "unknown target '$t'; tools/fuzz.sh --list" >&2; exit 2; }
ensure_built
work="$build/fuzz/work/$t"
log="$build/fuzz/$t.log"
mkdir -p "$build/fuzz"
status=0
run_one "$t" "$secs" "$work" "$log" || status=1
# Keep only the inputs that add coverage over the committed corpus.
before=$(ls "tests/fuzz/corpus/$t" | wc -l)
"$build/fuzz/${t}_fuzzer" -merge=1 "tests/fuzz/corpus/$t" "$work" >"$build/fuzz/$t.merge.log" 2>&1 || true
echo "tests/fuzz/corpus/$t: $before -> $(ls "tests/fuzz/corpus/$t" | wc -l) files"
exit $status
