#!/bin/sh
# Builds everything and runs the test suite: the default set, then the same tests under ASan and
# UBSan. Installs its own dependencies on Debian 12. Usage: scripts/test.sh [--no-deps] [--fast]
#   --no-deps  skip the apt step
#   --fast     skip the sanitizer build
# XPU_TEST_LABELS (a ctest -L regex) adds the labelled slow suites, e.g. XPU_TEST_LABELS='packaging|e2e|hostile'.
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
# The labelled suites (packaging, boot) need the ci tier's tools; the default set the test tier's.
if [ "$deps" -eq 1 ]; then
  if [ -n "${XPU_TEST_LABELS:-}" ]; then scripts/install-deps.sh ci; else scripts/install-deps.sh test; fi
fi

jobs=$(nproc)
slow_labels='slow|packaging|e2e|bench|hostile'

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j"$jobs"
echo "== tests =="
(cd build && ctest -j"$jobs" --output-on-failure --timeout 300 -LE "$slow_labels")

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
     ctest -j"$jobs" --output-on-failure --timeout 600 -LE "$slow_labels")
fi
