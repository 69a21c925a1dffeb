#!/bin/sh
# Installs everything the build and the tests need on Debian 12 (run as root; uses sudo otherwise).
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git ca-certificates curl jq \
  libsdbus-c++-dev libsdbus-c++-bin libsystemd-dev \
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
  prometheus-cpp-dev libinih-dev libspdlog-dev libfmt-dev \
  libmicrohttpd-dev libgnutls28-dev libcrypt-dev libyaml-cpp-dev \
  libgtest-dev libgmock-dev googletest libbenchmark-dev \
  dbus dbus-daemon dbus-bin systemd prometheus openssl >/dev/null
# The kubelet stand-in needs a current Go toolchain; Debian 12's is too old for k8s.io/kubelet.
command -v go >/dev/null 2>&1 || $SUDO apt-get install -y -qq golang-go >/dev/null
# Packaging and deployment tests (tests/packaging): dbus policy and unit checks, chart parsing,
# .deb and .rpm builds.
$SUDO apt-get install -y -qq --no-install-recommends \
  python3 python3-yaml python3-dbus libglib2.0-bin util-linux coreutils man-db \
  debhelper dpkg-dev lintian fakeroot rpm >/dev/null
# End-to-end boot test (tests/e2e): systemd in a container on a debootstrap root.
$SUDO apt-get install -y -qq --no-install-recommends systemd-container debootstrap procps >/dev/null
