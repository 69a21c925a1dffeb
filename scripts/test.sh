#!/bin/sh
# Builds everything and runs the test suite: the default set, then the same tests under ASan and
# UBSan. Installs its own dependencies on Debian 12. Usage: scripts/test.sh [--no-deps] [--fast]
#   --no-deps  skip the apt step
#   --fast     skip the sanitizer builds
# XPU_TEST_LABELS (a ctest -L regex) adds the labelled slow suites, e.g. XPU_TEST_LABELS='packaging|e2e|hostile'.
# XPU_TEST_BESIDE_LABELS (a ctest -L regex) runs those labelled suites in a second ctest, from the
#   end of the main build on, beside the default set and XPU_TEST_LABELS's suites, e.g. 'cluster':
#   suites that mostly wait on a node or a clock, so that their waiting and the others' work
#   overlap instead of adding up.
# XPU_TEST_LAST_LABELS (a ctest -L regex) runs those suites last, beside the sanitizer and fuzz
#   passes, e.g. fresh (the fresh-machine test, whose builds reuse the compiler cache this run
#   filled, so it starts only once the ASan build is done).
# XPU_TEST_ASAN_IN_FRESH=1 leaves the ASan pass to the fresh-machine test (with
#   XPU_TEST_LAST_LABELS=fresh), which runs this script in its root and fails unless that pass says
#   100% passed; the ASan build here then fills the compiler cache for the root's.
# XPU_TEST_TSAN=1 adds, after the ASan pass, the default set again built with ThreadSanitizer
#   (build-tsan): the tests that started a thread or a process in the default set's run (the others
#   cannot race); any report, in a test or in a daemon it started, fails the pass.
# XPU_TEST_FUZZ_SECONDS (seconds) runs every fuzzer that long after the sanitizer pass
#   (scripts/fuzz.sh), e.g. 20.
# XPU_TEST_FORMAT=1 first checks that every C++ file is as clang-format 14 formats it
#   (scripts/check-format.sh).
# XPU_TEST_TIDY=1 checks the production code with clang-tidy 14 and the tree's .clang-tidy
#   (scripts/check-tidy.py) after the main build (after the background builds below, when there
#   are any), in the background at idle priority (log: build/tidy.log); a finding fails the run
#   at its end.
# XPU_CCACHE_DIR (a directory) compiles through ccache with that cache, keyed on the compiler's
#   content and on paths relative to this checkout, so that another checkout at the same path (the
#   fresh-machine test's root) hits what this run compiled. It takes effect in a new build directory.
# With XPU_TEST_LABELS, the sanitizer and fuzz builds (scripts/build-variants.sh) run in the
# background at nice 19 (their autogroup too: in_background below) while the labelled suites run
# (log: build/background-builds.log), one after the other; each pass starts as soon as its own
# build is done, the others' builds going on beside it. Every stage prints its time, and the run
# ends with a table of them.
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
# Every stage prints its time when it ends, and the run ends with a table of them (also when a
# stage fails), so that CI's log says where the time went.
run_started=$(date +%s)
stage_times="" stage_name="" stage_started=0 background_pid="" tidy_pid="" lane_pid="" lane_log=""
begin_stage() {
  stage_name=$1
  stage_started=$(date +%s)
  echo "== $stage_name =="
}
end_stage() {
  elapsed=$(( $(date +%s) - stage_started ))
  stage_times="$stage_times$(printf '%-52s %5d s' "$stage_name" "$elapsed")
"
  echo "== $stage_name: $elapsed s =="
  stage_name=""
}
finish() {
  status=$?
  # dash's kill takes a process group as a negative number, without "--".
  if [ -n "$background_pid" ]; then kill -TERM "-$background_pid" 2>/dev/null || true; fi
  if [ -n "$tidy_pid" ]; then kill -TERM "-$tidy_pid" 2>/dev/null || true; fi
  if [ -n "$lane_pid" ]; then
    kill -TERM "-$lane_pid" 2>/dev/null || true
    echo "== the lane beside the failed stage, until it was stopped (log: $lane_log) =="
    tail -n 80 "$lane_log" 2>/dev/null || true
  fi
  [ -z "$stage_name" ] ||
    stage_times="$stage_times$(printf '%-52s %5d s, failed' "$stage_name" $(( $(date +%s) - stage_started )))
"
  printf '== stage times ==\n%s%-52s %5d s\n' "$stage_times" "in all" $(( $(date +%s) - run_started ))
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

# in_background COMMAND...: runs COMMAND in a session of its own, so that a failed run can stop it
# with every process it started, and at the lowest priority. A new session is also a new
# scheduler autogroup (kernel.sched_autogroup_enabled, on in Debian's kernels), and autogroups
# share the CPU as equals whatever the nice of their processes: a nice-19 build in its own
# session took as much of the cores as the suites beside it. So the group's own nice is set to
# 19 as well (/proc/self/autogroup; where that is refused, the session keeps its equal share).
# Only as `in_background ... &`: the exec replaces the subshell that & made, so that $! is the
# session's leader (setsid forks only in a process-group leader, which that subshell is not).
in_background() {
  # shellcheck disable=SC2016
  exec setsid sh -c 'echo 19 2>/dev/null >/proc/self/autogroup || true; exec "$@"' in_background "$@"
}

# start_lane LOG COMMAND...: runs COMMAND beside the stage that follows, as a lane of its own: a
# session (so that a failed run stops it whole), at the priority of the stage beside it (a new
# session is a new autogroup: the two share the cores as equals), its output in LOG and, when it
# ends, its length in seconds in LOG.seconds. Only as `start_lane ... &`, for in_background's reason.
start_lane() {
  log=$1
  shift
  # shellcheck disable=SC2016
  exec setsid sh -c 'started=$(date +%s); status=0; "$@" || status=$?
    echo $(( $(date +%s) - started )) >"$0.seconds"; exit "$status"' "$log" "$@" >"$log" 2>&1 </dev/null
}

# end_lane NAME: waits for the lane, shows its output, adds its own line to the table of stage
# times and fails the run if the lane failed.
end_lane() {
  lane_status=0
  wait "$lane_pid" || lane_status=$?
  lane_pid=""
  echo "== $1 (the lane beside; log: $lane_log) =="
  cat "$lane_log"
  stage_times="$stage_times$(printf '%-52s %5s s' "  beside: $1" "$(cat "$lane_log.seconds" 2>/dev/null || echo '?')")
"
  if [ "$lane_status" -ne 0 ]; then
    echo "test.sh: $1 failed (above)" >&2
    exit 1
  fi
}

# The labelled suites (packaging, boot, fresh machine), the fuzzers (clang) and the compiler cache
# need the ci tier's tools; the default set the test tier's.
if [ "$deps" -eq 1 ]; then
  begin_stage "dependencies"
  if [ -n "${XPU_TEST_LABELS:-}${XPU_TEST_LAST_LABELS:-}${XPU_CCACHE_DIR:-}${XPU_TEST_FUZZ_SECONDS:-}${XPU_TEST_FORMAT:-}${XPU_TEST_TIDY:-}" ]; then
    scripts/install-deps.sh ci
  else
    scripts/install-deps.sh test
  fi
  end_stage
fi
if [ "${XPU_TEST_FORMAT:-0}" = 1 ]; then
  begin_stage "formatting"
  scripts/check-format.sh
  end_stage
fi
if [ -n "${XPU_CCACHE_DIR:-}" ]; then
  command -v ccache >/dev/null 2>&1 ||
    { echo "test.sh: XPU_CCACHE_DIR is set but ccache is missing (scripts/install-deps.sh ci installs it)" >&2; exit 1; }
  mkdir -p "$XPU_CCACHE_DIR"
  # Not ccache's depend mode (CCACHE_DEPEND), though it saves a cold miss its extra preprocessor
  # run: with it the fresh-machine test's builds, in a root at this same path, hit only 34% of
  # this run's compiles (132 of 384) instead of all of them, and took 10.7 minutes, not about 4.
  export CCACHE_DIR="$XPU_CCACHE_DIR" CCACHE_BASEDIR="$(pwd)" CCACHE_NOHASHDIR=1 CCACHE_COMPILERCHECK=content
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  # ccache caches a compile that uses a precompiled header (the tests': XPU_TEST_PCH) only with
  # these two sloppinesses: the header's own macros and __TIME__ are what it cannot see.
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros"
  # ccache keys every compile on LANG and LC_ALL too (they change the compiler's messages). The
  # package builds fix them: debhelper runs ninja with LC_ALL=C.UTF-8, rpmbuild's build script
  # sets LANG=C. With both set so here, the main build, the .deb's and the .rpm's (packaging.deb
  # builds with this build's flags, packaging.rpm's match them) and the fresh root's builds
  # (tests/fresh passes them on) are the same compiles, done once in a cold run instead of three
  # times; C.UTF-8 is the locale every program sees either way (LC_ALL wins over LANG).
  export LANG=C LC_ALL=C.UTF-8
  # ...which the package tests check (tests/packaging/compiler_cache.py).
  export XPU_PACKAGE_BUILDS_SHARE_COMPILES=1
fi

if [ "${XPU_TEST_ASAN_IN_FRESH:-0}" = 1 ]; then
  case "${XPU_TEST_LAST_LABELS:-}" in
    *fresh*) ;;
    *) echo "test.sh: XPU_TEST_ASAN_IN_FRESH=1 needs the fresh-machine test (XPU_TEST_LAST_LABELS=fresh), which runs the ASan pass" >&2; exit 2 ;;
  esac
fi
jobs=$(nproc)
slow_labels='slow|packaging|e2e|bench|hostile|cluster|soak|fresh|arm64'
# The variants the later passes need (below).
variants=""
if [ "$fast" -eq 0 ]; then
  variants=asan
  [ "${XPU_TEST_TSAN:-0}" != 1 ] || variants="$variants tsan"
fi
[ -z "${XPU_TEST_FUZZ_SECONDS:-}" ] || variants="$variants fuzz"
# They are built in the background beside the labelled suites, when there are any.
build_in_background=0
[ -z "${XPU_TEST_LABELS:-}" ] || [ -z "$variants" ] || build_in_background=1

begin_stage "main build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j"$jobs"
end_stage

# clang-tidy reads the main build's compile commands and generated headers. It runs at idle
# priority (SCHED_IDLE; nice 19 where that is refused) in a session, and so an autogroup, of its
# own at nice 19; the run waits for it at the end. When the sanitizer and fuzz builds run in the
# background it starts after them: their autogroup and its weigh the same, so SCHED_IDLE inside
# its own group did not keep it from taking half of what the suites left the builds, whose end
# the last passes wait for; after them it takes what those passes leave idle.
# start_tidy [MARK]: starts it, once the file MARK exists when one is given (its session waits).
start_tidy() {
  tidy_log=build/tidy.log
  idle="chrt --idle 0"
  $idle true 2>/dev/null || idle="nice -n 19"
  echo "== in the background: clang-tidy on the production code${1:+, once $1 exists} (log: $tidy_log) =="
  # shellcheck disable=SC2016,SC2086
  in_background $idle sh -c 'while [ -n "$1" ] && [ ! -e "$1" ]; do sleep 1; done; exec scripts/check-tidy.py build' \
    tidy "${1:-}" >"$tidy_log" 2>&1 </dev/null &
  tidy_pid=$!
}
if [ "${XPU_TEST_TIDY:-0}" = 1 ] && [ "$build_in_background" = 0 ]; then
  start_tidy
fi
# The suites beside need only the main build: they start now, beside the default set too.
if [ -n "${XPU_TEST_BESIDE_LABELS:-}" ]; then
  begin_stage "helm, which both lanes of labelled suites use"
  # Built once, by itself: two ctests would each start this fixture, and both would write the
  # same binary. Neither lane adds it again (-FA).
  (cd build && ctest -j1 --output-on-failure --timeout 1200 -R '^packaging[.]helm_tool$')
  end_stage
  lane_log=$(pwd)/build/beside-labelled.log
  start_lane "$lane_log" sh -c 'cd build && exec ctest -j1 --output-on-failure --timeout 1200 -FA helm -L "$1"' \
    beside "$XPU_TEST_BESIDE_LABELS" &
  lane_pid=$!
fi

# With a TSan pass to come, the default set records which of its programs start a thread or another
# process (tests/support/start_record.cpp), and the TSan build compiles only those tests
# (XPU_TSAN_TESTS_FROM, scripts/build-variants.sh): the others cannot race, and compiling them under
# TSan was half of that build.
case " $variants " in
  *" tsan "*)
    start_records=$(pwd)/build/tests-that-start
    rm -rf "$start_records" && mkdir -p "$start_records"
    export XPU_TSAN_TESTS_FROM="$start_records"
    ;;
esac
begin_stage "tests"
(cd build && XPU_TEST_START_RECORD_DIR=${XPU_TSAN_TESTS_FROM:-} \
   ctest -j"$jobs" --output-on-failure --no-tests=error --timeout 300 -LE "$slow_labels")
end_stage
[ -z "${XPU_TSAN_TESTS_FROM:-}" ] ||
  echo "$(ls "$XPU_TSAN_TESTS_FROM" | wc -l) test programs start a thread or a process; the TSan build compiles those"

# The variants the later passes need (sanitizers, fuzzers) are built in the background, at the
# lowest priority, while the labelled suites run: those mostly wait on a cluster, a soak or a
# boot, and a nice-19 build takes only the time the suites leave idle. It runs in a session of
# its own, so that a failed run stops it with all its compilers.
# One after the other, in the order the passes below need them; a mark in $built_marks after each
# (wait_for_variant), so that a pass starts as soon as its own build is done.
built_marks=$(pwd)/build/background-built
if [ "$build_in_background" = 1 ]; then
  background_log=build/background-builds.log
  rm -rf "$built_marks" && mkdir -p "$built_marks"
  echo "== in the background: the builds of $variants (log: $background_log) =="
  # shellcheck disable=SC2016,SC2086
  in_background nice -n 19 sh -c 'marks=$1; shift
    for variant; do scripts/build-variants.sh "$variant" || exit; : >"$marks/$variant"; done' \
    background "$built_marks" $variants >"$background_log" 2>&1 </dev/null &
  background_pid=$!
fi
# wait_for_variant VARIANT: returns once the background builds have built VARIANT (at once when
# they have, or when there are none), a stage of its own when it waits; fails the run with the end
# of their log when they ended without it. After the last one it reaps them and prints each
# build's time.
wait_for_variant() {
  [ -n "$background_pid" ] || return 0
  if [ ! -e "$built_marks/$1" ]; then
    begin_stage "the rest of the background builds: $1"
    while [ ! -e "$built_marks/$1" ]; do
      # Ended (a zombie until waited for, or gone) without the mark: that build failed.
      case "$(cut -d' ' -f3 "/proc/$background_pid/stat" 2>/dev/null || true)" in
        "" | Z)
          wait "$background_pid" 2>/dev/null || true
          background_pid=""
          tail -n 60 "$background_log"
          echo "test.sh: the background builds failed before $1 was built (above: the end of $background_log)" >&2
          exit 1
          ;;
      esac
      sleep 1
    done
    end_stage
  fi
  if [ "$1" = "${variants##* }" ]; then
    wait "$background_pid" || true
    background_pid=""
    sed -n 's/^build-variants.sh: /  /p' "$background_log"
  fi
}

if [ -n "${XPU_TEST_LABELS:-}" ]; then
  begin_stage "labelled suites: ${XPU_TEST_LABELS}"
  set -- -L "$XPU_TEST_LABELS"
  [ -z "$lane_pid" ] || set -- "$@" -E '^packaging[.]helm_tool$' -FA helm
  (cd build && ctest -j1 --output-on-failure --timeout 1200 "$@")
  end_stage
fi
if [ -n "$lane_pid" ]; then
  begin_stage "the rest of the labelled suites beside: ${XPU_TEST_BESIDE_LABELS}"
  end_lane "labelled suites: $XPU_TEST_BESIDE_LABELS"
  end_stage
fi

if [ "${XPU_TEST_TIDY:-0}" = 1 ] && [ "$build_in_background" = 1 ]; then
  start_tidy "$built_marks/${variants##* }"
fi

# The last suites (the fresh-machine test) beside the sanitizer and fuzz passes, from the end of
# the ASan build on: its builds (plain and ASan) hit the compiler cache the builds above filled,
# which it then checks (XPU_FRESH_SHARES_COMPILES), and its waits and theirs overlap the builds
# still going on.
if [ -n "${XPU_TEST_LAST_LABELS:-}" ]; then
  shares=0
  if [ -n "${XPU_CCACHE_DIR:-}" ] && [ "$fast" -eq 0 ]; then
    wait_for_variant asan
    shares=1
  fi
  lane_log=$(pwd)/build/beside-last.log
  # -V: the fresh-machine test's report (its steps, their times, the packages each tier added).
  start_lane "$lane_log" env XPU_FRESH_SHARES_COMPILES=$shares \
    sh -c 'cd build && exec ctest -j1 -V --timeout 3600 -L "$1"' last "$XPU_TEST_LAST_LABELS" &
  lane_pid=$!
fi

# XPU_TEST_ASAN_IN_FRESH=1: the fresh-machine test runs the README's test command, this script, in
# its root, whose ASan pass is this one, test for test (the same commit, compilers and build); it
# fails unless that pass ran and said 100% passed. So the pass is not run twice: here the ASan build
# only fills the compiler cache that the root's builds take every compile from.
[ "$fast" -eq 1 ] || wait_for_variant asan
if [ "$fast" -eq 0 ] && [ "${XPU_TEST_ASAN_IN_FRESH:-0}" = 1 ]; then
  echo "== tests under AddressSanitizer and UndefinedBehaviorSanitizer: in the fresh-machine test's root (XPU_TEST_ASAN_IN_FRESH) =="
elif [ "$fast" -eq 0 ]; then
  begin_stage "tests under AddressSanitizer and UndefinedBehaviorSanitizer"
  scripts/build-variants.sh asan
  # detect_leaks stays on; the abandoned driver thread of a hung-call test is joined before exit.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest -j"$jobs" --output-on-failure --no-tests=error --timeout 600 -LE "$slow_labels")
  end_stage
fi

if [ "$fast" -eq 0 ] && [ "${XPU_TEST_TSAN:-0}" = 1 ]; then
  wait_for_variant tsan
  begin_stage "tests under ThreadSanitizer"
  scripts/build-variants.sh tsan
  # Reports go to files, so that one in a daemon a test started (whose exit status the test may
  # not look at) still fails the pass. tests/tsan.supp: third-party code only, each with its reason.
  reports="$(pwd)/build-tsan/tsan-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  tsan_failed=0
  (cd build-tsan && TSAN_OPTIONS="halt_on_error=1:exitcode=66:log_path=$reports/report:suppressions=$(pwd)/../tests/tsan.supp" \
     ctest -j"$jobs" --output-on-failure --no-tests=error --timeout 600 -LE "$slow_labels") || tsan_failed=1
  if [ -n "$(ls -A "$reports")" ]; then cat "$reports"/* >&2; echo "ThreadSanitizer reported the above" >&2; exit 1; fi
  [ "$tsan_failed" -eq 0 ] || exit 1
  end_stage
fi

if [ -n "${XPU_TEST_FUZZ_SECONDS:-}" ]; then
  wait_for_variant fuzz
  begin_stage "fuzzers: ${XPU_TEST_FUZZ_SECONDS} s each"
  scripts/fuzz.sh "$XPU_TEST_FUZZ_SECONDS"
  end_stage
fi

if [ -n "$lane_pid" ]; then
  begin_stage "the rest of the last suites: ${XPU_TEST_LAST_LABELS}"
  end_lane "last suites: ${XPU_TEST_LAST_LABELS}"
  end_stage
fi

if [ -n "$tidy_pid" ]; then
  begin_stage "the rest of clang-tidy"
  if ! wait "$tidy_pid"; then
    tidy_pid=""
    cat "$tidy_log" >&2
    echo "test.sh: clang-tidy failed (above: $tidy_log)" >&2
    exit 1
  fi
  tidy_pid=""
  end_stage
  sed -n 's/^check-tidy.py: /  /p' "$tidy_log"
fi
