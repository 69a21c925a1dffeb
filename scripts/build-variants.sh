#!/bin/sh
# Configures and builds the instrumented variants of the tree, each in a build directory of its
# own (CMake keeps one sanitizer per build directory):
#   asan   build-asan/, Debug with AddressSanitizer and UndefinedBehaviorSanitizer (XPU_SANITIZE),
#          compiled by clang 14
#   tsan   build-tsan/, RelWithDebInfo with ThreadSanitizer (XPU_SANITIZE_THREAD); only the tests
#          that start a thread or a process when XPU_TSAN_TESTS_FROM says which (below)
#   fuzz   build-fuzz/, the libFuzzer fuzzers: clang 14, ASan, UBSan and coverage (XPU_FUZZ)
#   arm64  build-arm64/, xpud, xpuctl, xpud-api-proxy and the shim cross-built for arm64 against
#          an unpacked Debian 12 arm64 root (cmake/toolchain-arm64.cmake says why a root), which
#          is made once per version of scripts/make-arm64-sysroot.sh and kept in the cache;
#          build-arm64/arm64-root links to it (tests/arm64 runs the programs with it)
# scripts/test.sh and scripts/fuzz.sh build through here, so each variant is spelled once.
# A variant already built is only brought up to date. Compiles through ccache when the caller
# exported its CMAKE_*_COMPILER_LAUNCHER (scripts/test.sh does for XPU_CCACHE_DIR).
# Usage: scripts/build-variants.sh VARIANT...     e.g. scripts/build-variants.sh asan tsan
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 asan|tsan|fuzz|arm64..." >&2; exit 2; }
for variant in "$@"; do
  case "$variant" in
    asan | tsan | fuzz | arm64) ;;
    *) echo "build-variants.sh: unknown variant '$variant' (asan, tsan, fuzz or arm64)" >&2; exit 2 ;;
  esac
done
jobs=$(nproc)
# Debug information: -g1 (line tables and function names, what a sanitizer's report and a
# suppression need) in every variant; the types and locals of -g cost a third of the compile.
# TSan and the fuzzers at -O1 (the level clang's documentation of both asks for speed; under their
# instrumentation it compiles in half the time of -O2); ASan at -O0, whose reports name every line.
# ASan by clang, not GCC: GCC 12 at -O0 with ASan and UBSan took as long as the -O2 main build
# (64 s against 67 s for four of the heaviest files, clang 31 s), and at -O1 it warns of
# uninitialised members inside libstdc++'s <regex>, which -Werror makes fatal.
optimised="-O1 -g1 -DNDEBUG"
# The sanitizer and fuzz variants compile as unity builds (CMAKE_UNITY_BUILD: up to 8 files of a
# target in one compile): much of a file's compile goes to the system, gRPC, protobuf and
# GoogleTest headers it includes, and a batch parses them once. The production libraries' compiles
# took half the time so (ASan, ninja's log); a test is a target of one file, which it leaves alone.
# The main build, which the packages share, compiles file by file and so still proves that each
# file includes what it uses. Two files of one target that define the same name in anonymous
# namespaces or as statics do not compile together: the variant's build fails naming both, and
# one of them takes a more specific name.
# The clang variants link with lld (lld-14): a quarter of GNU ld's CPU for a test that links the
# static gRPC. GCC looks for a program named ld.lld, which Debian's lld-14 does not install, so
# TSan links with GNU ld as the main build does.
unity="-DCMAKE_UNITY_BUILD=ON"
# Every build precompiles GoogleTest's headers once for all tests (XPU_TEST_PCH, on by default,
# tests/CMakeLists.txt says why; said here too, for a build directory an older checkout made).
# ccache caches a compile that uses a precompiled header only with these two sloppinesses: the
# header's own macros and __TIME__ are what it cannot see.
pch="-DXPU_TEST_PCH=ON"
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros"
lld="-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld"
# need_clang: the compilers the clang-built variants use, or a clear error.
need_clang() {
  for tool in clang-14 clang++-14 ld.lld-14; do
    command -v "$tool" >/dev/null 2>&1 ||
      { echo "build-variants.sh: $tool is missing (scripts/install-deps.sh test installs it)" >&2; exit 1; }
  done
}
# clang_build_dir DIR: removes build directory DIR when CMake configured it with a compiler other
# than clang (an older checkout's GCC-built build-asan), which CMake would otherwise keep whatever
# CC and CXX say.
clang_build_dir() {
  cache=$1/CMakeCache.txt
  [ -f "$cache" ] || return 0
  compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")
  case "$compiler" in
    *clang*) ;;
    *) echo "build-variants.sh: $1 was configured with ${compiler:-another compiler}; configuring it anew with clang" &&
      rm -rf "$1" ;;
  esac
}
for variant in "$@"; do
  started=$(date +%s)
  case "$variant" in
    asan)
      need_clang
      clang_build_dir build-asan
      CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DXPU_SANITIZE=ON $unity $pch $lld \
        -DCMAKE_C_FLAGS_DEBUG="-O0 -g1" -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" >/dev/null
      ninja -C build-asan -j"$jobs"
      ;;
    tsan)
      # XPU_TSAN_TESTS_FROM (a directory): only the tests named by the files there, the programs of
      # the default set that started a thread or a process when it ran with
      # XPU_TEST_START_RECORD_DIR pointing there (tests/support/start_record.cpp; scripts/test.sh):
      # a program that never had a second thread nor started another cannot race. Unset: every test.
      only=""
      if [ -n "${XPU_TSAN_TESTS_FROM:-}" ]; then
        only=$(ls -A "$XPU_TSAN_TESTS_FROM" | sort | paste -sd';' -)
        case "$only" in
          "") echo "build-variants.sh: no test recorded a thread or a process in $XPU_TSAN_TESTS_FROM" >&2; exit 1 ;;
          *[!A-Za-z0-9_\;-]*) echo "build-variants.sh: $XPU_TSAN_TESTS_FROM holds a name that is no test's: $only" >&2; exit 1 ;;
        esac
      fi
      # -Wno-subobject-linkage: GCC warns when a type of a file another includes holds a member of
      # an anonymous namespace's type, which is meant for headers; in a unity batch every source
      # file is one that another includes. -Wno-array-bounds -Wno-stringop-overflow: with
      # GoogleTest's headers precompiled, GCC 12 at -O1 warns that std::string's operator+,
      # inlined, copies past the 32 bytes of the string's own buffer, in 15 tests (a known false
      # positive of GCC 12 and 13, which other projects that precompile their headers meet too);
      # the main build, GCC at -O2 file by file, keeps both warnings on every file.
      cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXPU_SANITIZE_THREAD=ON $unity $pch \
        -DXPU_TESTS_ONLY="$only" \
        -DCMAKE_C_FLAGS_RELWITHDEBINFO="$optimised" \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimised -Wno-subobject-linkage -Wno-array-bounds -Wno-stringop-overflow" >/dev/null
      ninja -C build-tsan -j"$jobs"
      ;;
    fuzz)
      need_clang
      CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DXPU_FUZZ=ON -DXPU_BUILD_TESTS=OFF $unity $lld \
        -DCMAKE_C_FLAGS_RELWITHDEBINFO="$optimised" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimised" >/dev/null
      ninja -C build-fuzz -j"$jobs" fuzzers
      ;;
    arm64)
      root=$(scripts/make-arm64-sysroot.sh --cached)
      for tool in aarch64-linux-gnu-gcc aarch64-linux-gnu-g++; do
        command -v "$tool" >/dev/null 2>&1 ||
          { echo "build-variants.sh: $tool is missing (scripts/install-deps.sh ci installs it)" >&2; exit 1; }
      done
      XPU_ARM64_SYSROOT=$root cmake -S . -B build-arm64 -G Ninja \
        -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm64.cmake -DXPU_BUILD_TESTS=OFF \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
      ninja -C build-arm64 -j"$jobs"
      ln -sfn "$root" build-arm64/arm64-root
      ;;
  esac
  echo "build-variants.sh: $variant built in $(( $(date +%s) - started )) s"
done
