#!/bin/sh
# Installs what a caller needs on Debian 12, in tiers (run as root; uses sudo otherwise):
#   build  compilers, the libraries, dbus-daemon and a Go of 1.21+: building and scripts/demo.sh
#   test   build + GoogleTest, Python, the Prometheus programs and clang: scripts/test.sh
#   ci     test + package and image builders, the boot-test tools and ccache: .ci/run
#   bench  ci + nginx and wrk: bench/run (on demand, not part of .ci/run)
# Usage: scripts/install-deps.sh [build|test|ci|bench]   (default: test)
#
# No tier enables or starts a service on this machine. Prometheus, node_exporter, podman,
# containerd, etcd and nginx are servers whose Debian packages enable a unit; the tests only need
# their programs, so those are taken out of the very .deb apt would install (apt-get download,
# dpkg-deb -x) into /opt/xpu-test-tools/ and linked from /usr/local/bin. The other packages here
# ship no unit that is enabled on install (dbus and systemd are part of any Debian 12 with
# systemd).
set -eu
tier=${1:-test}
case "$tier" in
  build | test | ci | bench) ;;
  *) echo "usage: $0 [build|test|ci|bench]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

apt_install() {
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# extract_programs PACKAGE PROGRAM...: the package's files under /opt/xpu-test-tools/PACKAGE
# (refreshed when apt's candidate version changes), its programs (from usr/bin, or usr/sbin for
# a daemon such as nginx) linked into /usr/local/bin.
tools_dir=/opt/xpu-test-tools
extract_programs() {
  package=$1
  shift
  dir=$tools_dir/$package
  version=$(apt-cache policy "$package" | sed -n 's/^ *Candidate: //p')
  if [ ! -f "$dir/.version" ] || [ "$(cat "$dir/.version")" != "$version" ]; then
    download=$(mktemp -d)
    chmod 0777 "$download" # apt-get download drops to the _apt user when it can
    (cd "$download" && $SUDO apt-get download -qq "$package" >/dev/null 2>&1) ||
      { echo "install-deps: cannot download $package" >&2; exit 1; }
    $SUDO rm -rf "$dir"
    $SUDO mkdir -p "$dir"
    $SUDO dpkg-deb -x "$download"/*.deb "$dir"
    echo "$version" | $SUDO tee "$dir/.version" >/dev/null
    rm -rf "$download"
  fi
  for program in "$@"; do
    path=$dir/usr/bin/$program
    [ -x "$path" ] || path=$dir/usr/sbin/$program
    [ -x "$path" ] || { echo "install-deps: $package has no usr/bin or usr/sbin/$program" >&2; exit 1; }
    $SUDO ln -sf "$path" "/usr/local/bin/$program"
  done
}

$SUDO apt-get update -qq

# build: what compiles the tree and runs the demo (xpud on a private bus, the shim, the kubelet
# stand-in written in Go).
apt_install \
  build-essential cmake ninja-build pkg-config git ca-certificates curl jq \
  libsdbus-c++-dev libsdbus-c++-bin libsystemd-dev \
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
  prometheus-cpp-dev libinih-dev libspdlog-dev libfmt-dev \
  libmicrohttpd-dev libgnutls28-dev libcrypt-dev libyaml-cpp-dev nlohmann-json3-dev libcurl4-openssl-dev \
  dbus-daemon dbus-bin systemd python3
# The kernel's userspace headers, which every compile reads through libc6-dev, at apt's current
# version: libc6-dev accepts any, so a machine made from an older image kept an older one than a
# new machine gets, and a compile's cache entry is keyed on the headers it read. The
# fresh-machine test's root shares this machine's compiler cache; with the image's 6.1.187 here and
# 6.1.192 there, the ASan build's precompiled GoogleTest header, and so all its tests, differed.
apt_install linux-libc-dev
# Go: Debian 12's own is 1.19, too old for the k8s.io modules; bookworm-backports has 1.23, which
# fetches the toolchain go.mod names from the module proxy itself (scripts/go).
if ! scripts/go --which >/dev/null 2>&1; then
  backports=/etc/apt/sources.list.d/xpu-bookworm-backports.sources
  if [ ! -f "$backports" ]; then
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' |
      $SUDO tee "$backports" >/dev/null
    $SUDO apt-get update -qq
  fi
  apt_install -t bookworm-backports golang-1.23-go
  scripts/go --which >/dev/null # its one-line error if that still gave no usable Go
fi
[ "$tier" = build ] && exit 0

# test: the unit and integration suites' peers.
apt_install \
  libgtest-dev libgmock-dev googletest libbenchmark-dev openssl \
  python3 python3-yaml python3-dbus libglib2.0-bin util-linux coreutils man-db procps
extract_programs prometheus prometheus promtool
extract_programs prometheus-node-exporter prometheus-node-exporter
# The AddressSanitizer build (scripts/build-variants.sh asan) and the fuzzers: clang, with the
# sanitizer runtimes and libFuzzer, which Debian 12 ships in libclang-rt-14-dev (clang-14 only
# recommends it), and lld, their linker (scripts/build-variants.sh says why).
apt_install clang-14 libclang-rt-14-dev lld-14
[ "$tier" = test ] && exit 0

# ci: package builds (tests/packaging) and systemd booted in a container on a debootstrap root
# (tests/e2e).
apt_install debhelper dpkg-dev lintian fakeroot rpm systemd-container debootstrap
# Headless Chromium and a font for the exporter page's browser test (exporter_page_browser, e2e).
apt_install chromium fonts-dejavu-core
# The container image (packaging/container/build-image.sh) and its test (packaging.image): a
# Debian root made by mmdebstrap, the archive loaded into podman and into containerd. Both of
# those enable and start units on install (podman.service, podman.socket, podman-restart.service,
# podman-auto-update.timer; containerd.service), so their programs are taken out of their .debs;
# what they run (conmon, crun, runc), containers-common's policy.json and netavark ship none.
apt_install mmdebstrap conmon crun runc netavark golang-github-containers-common \
  libgpgme11 libdevmapper1.02.1 libsubid4 libseccomp2
extract_programs podman podman
extract_programs containerd containerd ctr containerd-shim-runc-v2

# ci, the real-node suite (tests/cluster): runc, the CNI plugins, busybox for its workload image,
# iptables (the one DNAT rule that stands in for kube-proxy). Kubernetes, etcd and containerd 2
# are built from the Go module proxy by the suite itself (Debian 12's etcd, 3.4.23, is below the
# 3.5.24 kubeadm accepts for Kubernetes 1.35 and 1.37). The registry scenario: skopeo (the README's
# push of the image index) and apache2-utils (htpasswd: the registry's bcrypt password file); the
# registry itself is built from the Go module proxy (tests/cluster/build-registry.sh).
apt_install runc containernetworking-plugins busybox-static iproute2 iptables skopeo apache2-utils
# The arm64 packages (tests/packaging/test_deb_arm64.py, test_rpm_arm64.py), image
# (packaging/container/build-image.sh) and build (scripts/build-variants.sh arm64): Debian's
# cross compilers and binutils; qemu-user-static to run arm64 programs (its binfmt entries
# are not needed: tests/arm64/smoke.sh calls qemu-aarch64-static itself, and
# scripts/arm64-namespace.py registers it in a namespace of its own); arch-test, which mmdebstrap
# asks for before making a foreign root. The libraries to build against come in a root that
# scripts/make-arm64-sysroot.sh unpacks; dh_shlibdeps reads the runtime ones, which are all
# Multi-Arch: same, from :arm64 packages installed beside the amd64 ones (dpkg-shlibdeps for the
# image's arm64 root reads them too).
apt_install g++-aarch64-linux-gnu qemu-user-static arch-test
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
fi
apt_install libc6:arm64 libstdc++6:arm64 libgcc-s1:arm64 libsystemd0:arm64 libsdbus-c++1:arm64 \
  libinih1:arm64 libspdlog1.10:arm64 libfmt9:arm64 libgrpc++1.51:arm64 libgrpc29:arm64 \
  libabsl20220623:arm64 libprotobuf32:arm64 libprometheus-cpp-core1.0:arm64 libyaml-cpp0.7:arm64 \
  libmicrohttpd12:arm64 libcurl4:arm64 libgnutls30:arm64
# The compiler cache .ci/run builds through (scripts/test.sh, XPU_CCACHE_DIR), so that the
# fresh-machine test's builds in a new root (tests/fresh) reuse this run's instead of compiling again.
apt_install ccache
# The formatting check (scripts/check-format.sh): Debian 12's clang-format, pinned to 14 so that
# every machine formats alike (another version moves lines the check would then call unformatted).
apt_install clang-format-14
# The clang-tidy check (scripts/check-tidy.py), pinned to 14 for the same reason: another version
# brings other checks and other findings.
apt_install clang-tidy-14

[ "$tier" = ci ] && exit 0

# bench: bench/run's baselines. Debian 12's nginx-light is a metapackage over `nginx`, which holds
# /usr/sbin/nginx and depends on nginx-common, whose postinst enables and starts nginx.service: so
# only the program is taken out of `nginx` (bench/run starts it with its own configuration in a
# temporary folder), with the libraries it links installed as packages. wrk ships no service.
apt_install libpcre2-8-0 libssl3 zlib1g libcrypt1 wrk
extract_programs nginx nginx
