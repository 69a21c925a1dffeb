#!/bin/sh
# Builds everything and runs the test suite: the default set, then the same tests under ASan and
# UBSan. Installs its own dependencies on Debian 12. Usage: scripts/test.sh [--no-deps] [--fast]
#   --no-deps  skip the apt step
#   --fast     skip the sanitizer builds
# XPU_TEST_LABELS (a ctest -L regex) adds the labelled slow suites, e.g. XPU_TEST_LABELS='packaging|e2e|hostile'.
# XPU_TEST_LAST_LABELS (a ctest -L regex) runs those suites last, after the sanitizer pass, e.g.
#   fresh (the fresh-machine test, whose builds reuse the compiler cache this run filled).
# XPU_TEST_TSAN=1 adds, after the ASan pass, the default set again built with ThreadSanitizer
#   (build-tsan); any report, in a test or in a daemon it started, fails the pass.
# XPU_TEST_FUZZ_SECONDS (seconds) runs every fuzzer that long after the sanitizer pass
#   (scripts/fuzz.sh), e.g. 20.
# XPU_CCACHE_DIR (a directory) compiles through ccache with that cache, keyed on the compiler's
#   content and on paths relative to this checkout, so that another checkout at the same path (the
#   fresh-machine test's root) hits what this run compiled. It takes effect in a new build directory.
set -eu
cd "$(dirname "$0")/.."
deps=1 fast=0
for arg in "$@"; do
  case "$arg" in
    --no-deps) deps=0 ;;
    --fast) fast=1 ;;
    *) echo "usage: $0 [--no-deps] [--fast]" >&2; exit 2 ;;
  esac
done
# The labelled suites (packaging, boot, fresh machine), the fuzzers (clang) and the compiler cache
# need the ci tier's tools; the default set the test tier's.
if [ "$deps" -eq 1 ]; then
  if [ -n "${XPU_TEST_LABELS:-}${XPU_TEST_LAST_LABELS:-}${XPU_CCACHE_DIR:-}${XPU_TEST_FUZZ_SECONDS:-}" ]; then
    scripts/install-deps.sh ci
  else
    scripts/install-deps.sh test
  fi
fi
if [ -n "${XPU_CCACHE_DIR:-}" ]; then
  command -v ccache >/dev/null 2>&1 ||
    { echo "test.sh: XPU_CCACHE_DIR is set but ccache is missing (scripts/install-deps.sh ci installs it)" >&2; exit 1; }
  mkdir -p "$XPU_CCACHE_DIR"
  export CCACHE_DIR="$XPU_CCACHE_DIR" CCACHE_BASEDIR="$(pwd)" CCACHE_NOHASHDIR=1 CCACHE_COMPILERCHECK=content
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi

jobs=$(nproc)
slow_labels='slow|packaging|e2e|bench|hostile|cluster|soak|fresh'

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j"$jobs"
echo "== tests =="
(cd build && ctest -j"$jobs" --output-on-failure --no-tests=error --timeout 300 -LE "$slow_labels")

if [ -n "${XPU_TEST_LABELS:-}" ]; then
  echo "== labelled suites: ${XPU_TEST_LABELS} =="
  (cd build && ctest -j1 --output-on-failure --timeout 1200 -L "$XPU_TEST_LABELS")
fi

if [ "$fast" -eq 0 ]; then
  echo "== tests under AddressSanitizer and UndefinedBehaviorSanitizer =="
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DXPU_SANITIZE=ON >/dev/null
  ninja -C build-asan -j"$jobs"
  # detect_leaks stays on; the abandoned driver thread of a hung-call test is joined before exit.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest -j"$jobs" --output-on-failure --no-tests=error --timeout 600 -LE "$slow_labels")
fi

if [ "$fast" -eq 0 ] && [ "${XPU_TEST_TSAN:-0}" = 1 ]; then
  echo "== tests under ThreadSanitizer =="
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXPU_SANITIZE_THREAD=ON >/dev/null
  ninja -C build-tsan -j"$jobs"
  # Reports go to files, so that one in a daemon a test started (whose exit status the test may
  # not look at) still fails the pass. tests/tsan.supp: third-party code only, each with its reason.
  reports="$(pwd)/build-tsan/tsan-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  tsan_failed=0
  (cd build-tsan && TSAN_OPTIONS="halt_on_error=1:exitcode=66:log_path=$reports/report:suppressions=$(pwd)/../tests/tsan.supp" \
     ctest -j"$jobs" --output-on-failure --no-tests=error --timeout 600 -LE "$slow_labels") || tsan_failed=1
  if [ -n "$(ls -A "$reports")" ]; then cat "$reports"/* >&2; echo "ThreadSanitizer reported the above" >&2; exit 1; fi
  [ "$tsan_failed" -eq 0 ] || exit 1
fi

if [ -n "${XPU_TEST_FUZZ_SECONDS:-}" ]; then
  echo "== fuzzers: ${XPU_TEST_FUZZ_SECONDS} s each =="
  scripts/fuzz.sh "$XPU_TEST_FUZZ_SECONDS"
fi

if [ -n "${XPU_TEST_LAST_LABELS:-}" ]; then
  echo "== last: ${XPU_TEST_LAST_LABELS} =="
  # -V: the fresh-machine test's report (its steps, their times, the packages each tier added).
  (cd build && ctest -j1 -V --timeout 3600 -L "$XPU_TEST_LAST_LABELS")
fi
