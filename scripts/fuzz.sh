#!/bin/sh
# Builds the libFuzzer fuzzers (fuzz/, clang with ASan and UBSan, in build-fuzz/, through
# scripts/build-variants.sh) and runs each for a bounded time on a copy of its seed corpus
# (fuzz/corpus/<name>/), as many at once as there are cores (libFuzzer uses one). Fails, naming
# the saved input, on any crash, leak, timeout or broken property. Usage:
#   scripts/fuzz.sh [seconds-per-fuzzer] [fuzzer-name...]     (default: 20 s each, every fuzzer)
# Needs clang-14 and libclang-rt-14-dev (scripts/install-deps.sh ci).
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-20}
[ $# -gt 0 ] && shift
case "$seconds" in
  '' | *[!0-9]*) echo "usage: $0 [seconds-per-fuzzer] [fuzzer-name...]" >&2; exit 2 ;;
esac

build=build-fuzz
scripts/build-variants.sh fuzz

names=${*:-$(cd fuzz/corpus && ls)}
for name in $names; do
  [ -x "$build/fuzz/${name}_fuzzer" ] || { echo "fuzz.sh: no fuzzer $build/fuzz/${name}_fuzzer" >&2; exit 1; }
done
# The config and service-account fuzzers write their input to files: on tmpfs they run ten times
# faster than on disk.
scratch_parent=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && scratch_parent=/dev/shm
work=$(mktemp -d "$scratch_parent/xpu-fuzz-XXXXXX")
export TMPDIR="$work"

# Runs one fuzzer; leaves its summary in $work/NAME/report and, when it failed, $work/NAME/failed.
fuzz_one() {
  name=$1
  dir=$work/$name
  mkdir -p "$dir/corpus" "$dir/found" "$dir/tmp"
  cp fuzz/corpus/"$name"/* "$dir/corpus/"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: one growing past 2 GB a leak
  # in all but name. detect_leaks is on under ASan by default. Each its own scratch directory:
  # two fuzzers at once must not meet in their files.
  if TMPDIR="$dir/tmp" ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build/fuzz/${name}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$dir/found/" "$dir/corpus" >"$dir/log" 2>&1; then
    # The last status line (executions, covered edges of the instrumented code and features,
    # corpus, speed), and how many edges the instrumented code has in all.
    edges=$(sed -n 's/^INFO: Loaded 1 PC tables (\([0-9]*\) PCs).*/\1/p' "$dir/log")
    grep -E '^#[0-9]+[[:space:]]+DONE' "$dir/log" | tail -n 1 |
      sed "s/^/$name: /; s/\(cov: [0-9]*\)/\1 of ${edges:-?}/" >"$dir/report"
  else
    grep -E 'ERROR|property broken|SUMMARY' "$dir/log" | head -n 5 >"$dir/report"
    # Kept in the build directory: the scratch space may be tmpfs, gone after a reboot.
    kept=$build/fuzz-found/$name
    mkdir -p "$kept"
    cp "$dir/log" "$kept/"
    for input in "$dir/found"/*; do
      [ -e "$input" ] || continue
      cp "$input" "$kept/"
      echo "fuzz.sh: $name failed on $kept/$(basename "$input") (log: $kept/log)" >>"$dir/report"
    done
    : >"$dir/failed"
  fi
}

# In batches of one fuzzer per core: every fuzzer runs the same time, so a batch ends together.
parallel=$(nproc)
batch=""
run_batch() {
  for name in $batch; do
    echo "== $name: $seconds s =="
    fuzz_one "$name" &
  done
  wait
  for name in $batch; do
    cat "$work/$name/report" 2>/dev/null ||
      { echo "fuzz.sh: $name stopped without a report (log: $work/$name/log)"; : >"$work/$name/failed"; }
  done
  batch=""
}
count=0
for name in $names; do
  batch="$batch $name"
  count=$((count + 1))
  if [ $((count % parallel)) -eq 0 ]; then run_batch; fi
done
[ -z "$batch" ] || run_batch

failed=""
for name in $names; do
  [ ! -e "$work/$name/failed" ] || failed="$failed $name"
done
rm -rf "$work"
if [ -n "$failed" ]; then
  echo "fuzz.sh: failed:$failed; inputs and logs kept in $build/fuzz-found/" >&2
  exit 1
fi
