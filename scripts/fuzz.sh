#!/bin/sh
# Builds the libFuzzer fuzzers (fuzz/, clang with ASan and UBSan, in build-fuzz/) and runs each
# for a bounded time on a copy of its seed corpus (fuzz/corpus/<name>/). Fails, naming the saved
# input, on any crash, leak, timeout or broken property. Usage:
#   scripts/fuzz.sh [seconds-per-fuzzer] [fuzzer-name...]     (default: 20 s each, every fuzzer)
# Needs clang-14 and libclang-rt-14-dev (scripts/install-deps.sh ci).
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-20}
[ $# -gt 0 ] && shift
case "$seconds" in
  '' | *[!0-9]*) echo "usage: $0 [seconds-per-fuzzer] [fuzzer-name...]" >&2; exit 2 ;;
esac
for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "fuzz.sh: $tool is missing (scripts/install-deps.sh ci installs it)" >&2; exit 1; }
done

build=build-fuzz
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DXPU_FUZZ=ON -DXPU_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" -j2 fuzzers

names=${*:-$(cd fuzz/corpus && ls)}
# The config and service-account fuzzers write their input to files: on tmpfs they run ten times
# faster than on disk.
scratch_parent=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && scratch_parent=/dev/shm
work=$(mktemp -d "$scratch_parent/xpu-fuzz-XXXXXX")
export TMPDIR="$work"
failed=""
for name in $names; do
  fuzzer=$build/fuzz/${name}_fuzzer
  [ -x "$fuzzer" ] || { echo "fuzz.sh: no fuzzer $fuzzer" >&2; exit 1; }
  mkdir -p "$work/$name/corpus" "$work/$name/found"
  cp fuzz/corpus/"$name"/* "$work/$name/corpus/"
  echo "== $name: $seconds s =="
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: one growing past 2 GB a leak
  # in all but name. detect_leaks is on under ASan by default.
  if ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$work/$name/found/" "$work/$name/corpus" >"$work/$name/log" 2>&1; then
    # The last status line (executions, covered edges of the instrumented code and features,
    # corpus, speed), and how many edges the instrumented code has in all.
    edges=$(sed -n 's/^INFO: Loaded 1 PC tables (\([0-9]*\) PCs).*/\1/p' "$work/$name/log")
    grep -E '^#[0-9]+[[:space:]]+DONE' "$work/$name/log" | tail -n 1 |
      sed "s/^/$name: /; s/\(cov: [0-9]*\)/\1 of ${edges:-?}/"
  else
    grep -E 'ERROR|property broken|SUMMARY' "$work/$name/log" | head -n 5
    # Kept in the build directory: the scratch space may be tmpfs, gone after a reboot.
    kept=$build/fuzz-found/$name
    mkdir -p "$kept"
    cp "$work/$name/log" "$kept/"
    for input in "$work/$name/found"/*; do
      [ -e "$input" ] || continue
      cp "$input" "$kept/"
      echo "fuzz.sh: $name failed on $kept/$(basename "$input") (log: $kept/log)" >&2
    done
    failed="$failed $name"
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz.sh: failed:$failed; inputs and logs kept in $build/fuzz-found/" >&2
  rm -rf "$work"
  exit 1
fi
rm -rf "$work"
