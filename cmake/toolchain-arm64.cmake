# Cross-builds for arm64 (aarch64) on an amd64 Debian 12 machine, against an arm64 root made by
# scripts/make-arm64-sysroot.sh (scripts/build-variants.sh arm64 does all of this):
#
#   scripts/make-arm64-sysroot.sh /path/to/arm64-root
#   XPU_ARM64_SYSROOT=/path/to/arm64-root cmake -S . -B build-arm64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm64.cmake -DXPU_BUILD_TESTS=OFF
#
# Why a root and not multiarch `:arm64` -dev packages beside the amd64 ones: libyaml-cpp-dev has
# no Multi-Arch field and prometheus-cpp-dev pulls civetweb, which is not Multi-Arch: same, so
# apt would remove their amd64 versions (seen with apt-get install --simulate on Debian 12).
#
# The compilers are Debian's (g++-aarch64-linux-gnu); libraries, headers, pkg-config files and
# CMake packages are taken from the root only. Code generators (protoc, grpc_cpp_plugin,
# sdbus-c++-xml2cpp) run on the build machine: the root links them to the host's, because the
# arm64 packages' CMake files insist that the files they name exist.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(XPU_ARM64_SYSROOT "$ENV{XPU_ARM64_SYSROOT}" CACHE PATH "the arm64 root (scripts/make-arm64-sysroot.sh)")
if(NOT XPU_ARM64_SYSROOT OR NOT EXISTS "${XPU_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "XPU_ARM64_SYSROOT (\"${XPU_ARM64_SYSROOT}\") is not an arm64 root: make one "
                      "with scripts/make-arm64-sysroot.sh and set XPU_ARM64_SYSROOT to it")
endif()

set(CMAKE_SYSROOT "${XPU_ARM64_SYSROOT}")
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(CMAKE_FIND_ROOT_PATH "${XPU_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg_check_modules (libsystemd, inih, RE2 for gRPC...): the root's .pc files, paths prefixed.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${XPU_ARM64_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${XPU_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${XPU_ARM64_SYSROOT}/usr/share/pkgconfig")
