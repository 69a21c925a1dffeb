#!/bin/sh
# Runs the default test set again and again while every core is kept busy, and counts, per
# test, the runs it failed: a test that fails only under load is a broken test (it waits on a
# sleep, or counts something before it arrived). CI runs the suites beside background builds,
# so this is the load they meet there, made worse on purpose.
#
# Usage: scripts/test-under-load.sh [RUNS [BUILD_DIR]]     (defaults: 20, build)
# The load: one busy loop per core at nice 0 in a session of its own, for as long as the runs
# take; the tests run as ctest -j<cores>, as scripts/test.sh runs them. Each run's log, with the
# output of every test that failed, goes to BUILD_DIR/under-load/run-N.log; the end is a table of
# the tests that failed at least once (none: "0 of N runs failed"). Exits 1 if any run failed.
set -eu
cd "$(dirname "$0")/.."
runs=${1:-20}
build=${2:-build}
case "$runs" in '' | *[!0-9]*) echo "usage: $0 [RUNS [BUILD_DIR]]" >&2; exit 2 ;; esac
[ -f "$build/CTestTestfile.cmake" ] || { echo "test-under-load: $build is not a build directory (scripts/test.sh --fast makes one)" >&2; exit 2; }
slow_labels='slow|packaging|e2e|bench|hostile|cluster|soak|fresh|arm64'
cores=$(nproc)
logs="$build/under-load"
rm -rf "$logs" && mkdir -p "$logs"

# The load: busy loops in a session of their own, so that stopping them is one kill.
setsid sh -c 'i=0; while [ "$i" -lt "$1" ]; do (while :; do :; done) & i=$((i + 1)); done; wait' load "$cores" &
load_pid=$!
trap 'kill -TERM "-$load_pid" 2>/dev/null || true' EXIT INT TERM

# The names ctest lists under "The following tests FAILED:" in one run's log (not the skipped ones
# it lists under "did not run").
failed_in() {
  awk '/^The following tests FAILED:/ { on = 1; next } on && /^[[:space:]]*[0-9]+ - / {
         sub(/^[[:space:]]*[0-9]+ - /, ""); sub(/ \(.*$/, ""); print; next } on { on = 0 }' "$1"
}

failed_runs=0
run=1
while [ "$run" -le "$runs" ]; do
  log="$logs/run-$run.log"
  if (cd "$build" && ctest -j"$cores" --output-on-failure --no-tests=error --timeout 300 -LE "$slow_labels") >"$log" 2>&1; then
    echo "test-under-load: run $run of $runs passed ($(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2 tests/p' "$log"))"
  else
    failed_runs=$((failed_runs + 1))
    echo "test-under-load: run $run of $runs FAILED: $(failed_in "$log" | tr '\n' ' ')"
  fi
  run=$((run + 1))
done

echo "== tests that failed under load, with the number of runs each failed =="
for log in "$logs"/run-*.log; do failed_in "$log"; done | sort | uniq -c | sort -rn
echo "$failed_runs of $runs runs failed"
[ "$failed_runs" -eq 0 ]
