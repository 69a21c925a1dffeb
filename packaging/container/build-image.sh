#!/bin/bash
# Builds the xpu-k8s-shim image without a registry or a container engine: the contents the
# Containerfile describes (a Debian 12 slim root, the libraries dpkg-shlibdeps finds for the
# programs, the stripped xpu-k8s-shim and its role programs, user 65534:65534), for amd64 and arm64 by default, written as one
# archive holding an image index of one manifest per architecture, which `podman load` and
# `ctr images import` accept (each takes its own platform's), named with the chart's default
# reference.
#
# Usage: packaging/container/build-image.sh [--output DIR] [--arch LIST] [--binary PATH]... [--version V]
#   --output DIR   where the archive and the shims' builds go
#                  (default: build-image/ in the source tree)
#   --arch LIST    the architectures, comma-separated: amd64, arm64 (default: amd64,arm64)
#   --binary PATH  put this xpu-k8s-shim and its role programs (../libexec/xpu-k8s-shim/ beside
#                  it, as a build tree and an unpacked package have them) in the image of its
#                  architecture (read from the file) instead of building them; once per
#                  architecture at most. It must report version V; all are stripped on the way in
#   --version V    the version, which is also the image tag (default: the project's version,
#                  the chart's appVersion)
# Environment: XPU_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# XPU_DEBIAN_SECURITY_MIRROR (default http://deb.debian.org/debian-security), XPU_IMAGE_CACHE
# (default ~/.cache/xpu-k8s-shim-image) and XPU_ARM64_SYSROOT (the root an arm64 shim is built
# against; default: scripts/make-arm64-sysroot.sh --cached).
# Needs root (mmdebstrap in root mode keeps the packages' file owners), mmdebstrap, curl,
# dpkg-shlibdeps, python3 with yaml; cmake and ninja unless every --binary is given; for a
# foreign architecture, qemu-user-static (mmdebstrap runs the root's maintainer scripts under
# emulation: registered on the machine, or in a namespace of its own by scripts/arm64-namespace.py
# on Linux 6.7 or later) and, to build or strip it, the cross toolchain (scripts/install-deps.sh ci
# installs all of it).
#
# The slow part, each architecture's Debian root with the runtime packages, is cached in
# XPU_IMAGE_CACHE under a key made of the architecture, the mmdebstrap command line (package list
# included) and the Date of each suite's InRelease on the mirror: a security update or a new
# library for the binary makes a new root.
set -euo pipefail

usage() { sed -n 's/^# \{0,1\}//; 9,22p' "$0"; }
die() { echo "build-image.sh: $*" >&2; exit 1; }
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "build-image.sh: $1 needs a value" >&2; usage >&2; exit 2; }; }

src=$(cd "$(dirname "$0")/../.." && pwd)
output=$src/build-image
arches=amd64,arm64
binaries=()
version=""
while [ $# -gt 0 ]; do
  case $1 in
    --output) need_value "$@"; output=$2; shift 2 ;;
    --arch) need_value "$@"; arches=$2; shift 2 ;;
    --binary) need_value "$@"; binaries+=("$2"); shift 2 ;;
    --version) need_value "$@"; version=$2; shift 2 ;;
    --output=* | --arch=* | --binary=* | --version=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build-image.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

started=$SECONDS
[ "$(id -u)" -eq 0 ] ||
  die "needs root: mmdebstrap makes the Debian root in root mode, which keeps the packages' file owners"
for tool in mmdebstrap curl dpkg-shlibdeps python3 flock; do
  command -v "$tool" >/dev/null || die "missing $tool (scripts/install-deps.sh ci installs it)"
done
python3 -c 'import yaml' 2>/dev/null || die "missing python3-yaml (scripts/install-deps.sh ci installs it)"

project_version=$(sed -n 's/^project(xpud VERSION \([^ )]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$project_version" ] || die "no project(xpud VERSION ...) in $src/CMakeLists.txt"
version=${version:-$project_version}
# The tag grammar of image references.
[[ $version =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "--version '$version' is not a valid image tag"

# The architectures, in the order given (the index lists them so), each once.
host_arch=$(dpkg --print-architecture)
IFS=',' read -ra wanted <<<"$arches"
targets=()
for arch in "${wanted[@]}"; do
  case $arch in
    amd64 | arm64) ;;
    *) echo "build-image.sh: --arch: '$arch' is not one of amd64, arm64" >&2; usage >&2; exit 2 ;;
  esac
  [[ " ${targets[*]} " != *" $arch "* ]] || { echo "build-image.sh: --arch names $arch twice" >&2; exit 2; }
  targets+=("$arch")
done
[ ${#targets[@]} -gt 0 ] || { echo "build-image.sh: --arch names no architecture" >&2; exit 2; }

# An ELF file's architecture, from its e_machine field (bytes 18-19, little-endian on both).
elf_arch() {
  [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ] || return 1
  case $(od -An -tu2 -j18 -N2 "$1" | tr -d ' ') in
    62) echo amd64 ;;
    183) echo arm64 ;;
    *) return 1 ;;
  esac
}
# xpu-k8s-shim runs each role's own program, which it finds at ../libexec/xpu-k8s-shim/ROLE from
# itself (k8s-shim/main.cpp): in a build tree, in a package, and in the image alike.
roles=(device-plugin exporter token-sync dra-driver validate)
role_dir_of() { echo "$(dirname "$1")/../libexec/xpu-k8s-shim"; }
declare -A binary_of=()
for given in "${binaries[@]}"; do
  [ -f "$given" ] && [ -x "$given" ] || die "--binary $given is not an executable file"
  arch=$(elf_arch "$given") || die "--binary $given is not an amd64 or arm64 executable"
  [[ " ${targets[*]} " == *" $arch "* ]] || die "--binary $given is for $arch, which --arch ($arches) does not name"
  [ -z "${binary_of[$arch]:-}" ] || die "--binary given twice for $arch: ${binary_of[$arch]} and $given"
  binary_of[$arch]=$(realpath "$given") # run by its path, never looked up in PATH
  for role in "${roles[@]}"; do
    [ -x "$(role_dir_of "${binary_of[$arch]}")/$role" ] ||
      die "--binary $given has no $role program beside it ($(role_dir_of "$given")/$role)"
  done
done

# The chart's default image: global.image.host and global.image.repository, tagged with the
# version (the chart's default tag is its appVersion).
reference=$(python3 - "$src/charts/xpu-k8s-shim/values.yaml" "$version" <<'EOF'
import sys, yaml
with open(sys.argv[1], encoding="utf-8") as f:
    image = yaml.safe_load(f)["global"]["image"]
host = (image.get("host") or "").rstrip("/")
print("%s%s:%s" % (host + "/" if host else "", image["repository"], sys.argv[2]))
EOF
) || die "cannot read global.image from charts/xpu-k8s-shim/values.yaml"

mkdir -p "$output"
output=$(cd "$output" && pwd)
# The base roots are cached per user, not per output directory, so that every build on a machine
# (the tests', an operator's) makes each once. One build at a time uses the cache.
cache=${XPU_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xpu-k8s-shim-image}
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -n 9 || { echo "build-image.sh: waiting for another build using $cache"; flock 9; }

work=$(mktemp -d "$output/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
log() { printf '[image] %s\n' "$*"; }

# Runs a program of architecture $1: a foreign one under qemu, with the root $2 as its library
# root.
run_as() {
  local arch=$1 root=$2
  shift 2
  if [ "$arch" = "$host_arch" ]; then
    "$@"
  else
    command -v qemu-aarch64-static >/dev/null || die "missing qemu-aarch64-static (apt install qemu-user-static)"
    qemu-aarch64-static -L "$root" "$@"
  fi
}

# Checks that a binary names the version the tag will carry.
check_version() {
  local arch=$1 binary=$2 root=${3:-/} reported
  reported=$(run_as "$arch" "$root" "$binary" --version 2>&1) || die "$binary --version failed: $reported"
  [ "$reported" = "xpu-k8s-shim $version" ] ||
    die "$binary reports '$reported', not 'xpu-k8s-shim $version': the image tag would not match its contents"
}

# 1. The binaries, unless given: built as the Containerfile and the Debian package build them,
# with dpkg-buildflags' flags for the architecture and hardening=+all (-O2, stack protector,
# _FORTIFY_SOURCE, full RELRO), no tests; arm64 on an amd64 machine with the cross compilers
# against the arm64 root of cmake/toolchain-arm64.cmake. Not CMAKE_BUILD_TYPE=Release: GCC 12 at
# -O3 reports a false -Wrestrict in std::string's operator+ (GCC bug 105329), which -Werror makes
# fatal. A native binary is checked at once, a foreign one in its image root (step 3).
build_shim() {
  local arch=$1 dir=$output/shim-build-$arch cross=() sysroot=""
  command -v cmake >/dev/null && command -v ninja >/dev/null || die "missing cmake or ninja (or pass --binary)"
  if [ "$arch" != "$host_arch" ]; then
    [ "$arch" = arm64 ] && [ "$host_arch" = amd64 ] || die "cannot build an $arch shim on $host_arch (pass --binary)"
    command -v aarch64-linux-gnu-g++ >/dev/null ||
      die "missing aarch64-linux-gnu-g++ to build the arm64 shim (scripts/install-deps.sh ci installs it)"
    sysroot=${XPU_ARM64_SYSROOT:-}
    if [ -z "$sysroot" ]; then
      log "the arm64 root to build against: scripts/make-arm64-sysroot.sh --cached"
      sysroot=$("$src/scripts/make-arm64-sysroot.sh" --cached 2>"$work/sysroot.log" | tail -1) ||
        { tail -20 "$work/sysroot.log" >&2; die "cannot make the arm64 root"; }
    fi
    # The toolchain file reads the root from the environment, in try_compile projects too.
    cross=(-DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain-arm64.cmake")
  fi
  log "building xpu-k8s-shim $version for $arch (the Debian package's flags, no tests) in $dir"
  flags() {
    (cd "$src" && DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-architecture -a "$arch" -c \
      dpkg-buildflags --get "$1" 2>/dev/null)
  }
  XPU_ARM64_SYSROOT=$sysroot cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None "${cross[@]}" \
    -DCMAKE_C_FLAGS="$(flags CFLAGS) $(flags CPPFLAGS)" -DCMAKE_CXX_FLAGS="$(flags CXXFLAGS) $(flags CPPFLAGS)" \
    -DCMAKE_EXE_LINKER_FLAGS="$(flags LDFLAGS)" -DCMAKE_SHARED_LINKER_FLAGS="$(flags LDFLAGS)" \
    -DXPU_BUILD_TESTS=OFF -DXPU_BUILD_SHIM=ON -DXPU_VERSION="$version" >"$work/cmake-$arch.log" 2>&1 ||
    { tail -20 "$work/cmake-$arch.log"; die "cmake configure for $arch failed"; }
  XPU_ARM64_SYSROOT=$sysroot cmake --build "$dir" --target xpu-k8s-shim >"$work/build-$arch.log" 2>&1 ||
    { tail -30 "$work/build-$arch.log"; die "building xpu-k8s-shim for $arch failed"; }
  binary_of[$arch]=$dir/k8s-shim/xpu-k8s-shim
}
for arch in "${targets[@]}"; do
  [ -n "${binary_of[$arch]:-}" ] || build_shim "$arch"
  [ "$arch" != "$host_arch" ] || check_version "$arch" "${binary_of[$arch]}"
  # The build machine's strip reads its own architecture only.
  strip=strip
  [ "$arch" = "$host_arch" ] || strip=aarch64-linux-gnu-strip
  command -v "$strip" >/dev/null ||
    die "missing $strip for the $arch binary (scripts/install-deps.sh ci installs it)"
  install -D -m 0755 -s --strip-program="$strip" "${binary_of[$arch]}" "$work/out-$arch/usr/bin/xpu-k8s-shim"
  for role in "${roles[@]}"; do
    install -D -m 0755 -s --strip-program="$strip" "$(role_dir_of "${binary_of[$arch]}")/$role" \
      "$work/out-$arch/usr/libexec/xpu-k8s-shim/$role"
  done
done

# 2. Each architecture's runtime packages: exactly those holding the libraries the programs link,
# as dpkg-shlibdeps finds them (versions and alternatives dropped), as in the Containerfile. An
# arm64 binary's are read from the :arm64 libraries installed on this machine (all Multi-Arch:
# same, as for the arm64 .deb).
mkdir -p "$work/shlibs/debian"
cp "$src/debian/control" "$work/shlibs/debian/control"
for arch in "${targets[@]}"; do
  (cd "$work/shlibs" && dpkg-shlibdeps -O "$work/out-$arch/usr/bin/xpu-k8s-shim" \
    "${roles[@]/#/$work/out-$arch/usr/libexec/xpu-k8s-shim/}" 2>"$work/shlibdeps.log") |
    sed -n 's/^shlibs:Depends=//p' | tr ',' '\n' |
    sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u >"$work/runtime-packages-$arch" ||
    true
  [ -s "$work/runtime-packages-$arch" ] || {
    cat "$work/shlibdeps.log" >&2
    die "dpkg-shlibdeps found no package for the $arch binary (for arm64, the :arm64 libraries must be installed: scripts/install-deps.sh ci)"
  }
done

# 3. The base roots: Debian 12 minbase with the runtime packages, slimmed as debian:12-slim is
# (no documentation but the copyright files, no manual pages, no translations), with merged /usr
# set up by mmdebstrap itself rather than by the usrmerge package (which would pull in perl).
mirror=${XPU_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${XPU_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
suite=bookworm
sources=("deb $mirror $suite main" "deb $mirror $suite-updates main" "deb $security $suite-security main")
dates=""
for dist in "$mirror/dists/$suite" "$mirror/dists/$suite-updates" "$security/dists/$suite-security"; do
  date=$(curl -fsS --max-time 30 "$dist/InRelease" 2>"$work/curl.log" | sed -n 's/^Date: //p' | head -1) || true
  [ -n "$date" ] || { dates=""; break; }
  dates="$dates$date;"
done
# mmdebstrap makes the same root from the same mirror state when told that state's time (file
# times, /etc/shadow's dates): the newest of the suites' dates.
epoch=0
IFS=';' read -ra stamps <<<"$dates"
for stamp in "${stamps[@]}"; do
  seconds=$(date -d "$stamp" +%s) && [ "$seconds" -gt "$epoch" ] && epoch=$seconds
done

# mmdebstrap runs a root's maintainer scripts in it: for a foreign architecture, under the
# machine's own binfmt_misc registration of qemu when there is one, else in a namespace that
# registers it for itself (scripts/arm64-namespace.py, Linux 6.7 or later).
mmdebstrap_for() {
  local arch=$1
  shift
  if [ "$arch" = "$host_arch" ] || { command -v arch-test >/dev/null && arch-test "$arch" >/dev/null 2>&1; }; then
    mmdebstrap "$@"
  else
    "$src/scripts/arm64-namespace.py" mmdebstrap "$@"
  fi
}

make_base() {
  local arch=$1 recipe key base root
  local args=(--variant=minbase --mode=root --architectures="$arch"
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --include="$(paste -sd, "$work/runtime-packages-$arch")"
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/groff/*'
    --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/linda/*'
    --dpkgopt='path-exclude=/usr/share/lintian/overrides/*'
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias'
    "$suite")
  recipe=$arch-$(printf '%s\n' "${args[@]}" "${sources[@]}" | sha256sum | cut -c1-16)
  if [ -n "$dates" ]; then
    key=$recipe-$(printf '%s' "$dates" | sha256sum | cut -c1-16)
  else
    # Offline: the newest root made from the same recipe will do, and says so.
    key=$(cd "$cache" 2>/dev/null && ls -1t -d "$recipe"-* 2>/dev/null | head -1) || true
    [ -n "$key" ] || {
      cat "$work/curl.log" >&2
      die "cannot read $mirror/dists/$suite/InRelease and no cached $arch root to fall back on"
    }
    log "the mirror is not reachable: using the cached $arch root $key"
  fi
  base=$cache/$key
  if [ -f "$base/done" ]; then
    log "$arch base root cached ($base)"
  else
    log "making the $arch base root with mmdebstrap (a few minutes; cached in $cache)"
    rm -rf "$base"
    mkdir -p "$base"
    if ! SOURCE_DATE_EPOCH=$epoch mmdebstrap_for "$arch" "${args[@]}" "$base/root" "${sources[@]}" \
      >"$base/mmdebstrap.log" 2>&1; then
      tail -20 "$base/mmdebstrap.log" >&2
      rm -rf "$base"
      die "mmdebstrap for $arch failed (log above)"
    fi
    root=$base/root
    # What the build machine left in it, and what a container runtime provides: the host's name
    # and resolver, device nodes. Logs and caches that only record this build go too.
    rm -rf "${root:?}"/dev/* "$root/etc/hostname" "$root/etc/resolv.conf" \
      "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root/var/cache/ldconfig/aux-cache" \
      "$root/var/log/dpkg.log" "$root/var/log/alternatives.log" "$root"/var/log/apt/*
    cp "$work/runtime-packages-$arch" "$base/runtime-packages"
    printf '%s\n' "$dates" >"$base/mirror-dates"
    touch "$base/done"
    # Only the newest root of each architecture is kept: each is about 100 MB. Names without an
    # architecture are amd64 roots an older version of this script made.
    find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" \( -name "$arch-*" -o ! -name '*-*-*' \) \
      -exec rm -rf {} +
  fi
  # The image's root: the base plus the programs, written as one layer. Hard links: fast, and the
  # cached root stays as it is since only new files are added (a copy where the cache is on
  # another file system).
  cp -al "$base/root" "$work/root-$arch" 2>/dev/null ||
    { rm -rf "$work/root-$arch"; cp -a "$base/root" "$work/root-$arch"; }
  install -m 0755 "$work/out-$arch/usr/bin/xpu-k8s-shim" "$work/root-$arch/usr/bin/xpu-k8s-shim"
  install -d -m 0755 "$work/root-$arch/usr/libexec/xpu-k8s-shim"
  for role in "${roles[@]}"; do
    install -m 0755 "$work/out-$arch/usr/libexec/xpu-k8s-shim/$role" "$work/root-$arch/usr/libexec/xpu-k8s-shim/$role"
  done
}
for arch in "${targets[@]}"; do
  make_base "$arch"
  # A foreign binary is run in its own image root, which also proves the root holds its libraries.
  [ "$arch" = "$host_arch" ] ||
    check_version "$arch" "$work/root-$arch/usr/bin/xpu-k8s-shim" "$work/root-$arch"
done

# 4. The archive: a layer per architecture, under an image index when there are several.
name=$(IFS=-; echo "${targets[*]}")
archive=$output/xpu-k8s-shim-image-$version-$name.tar
revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
# Reproducible: the same commit and the same packages give the same archive.
timestamp=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || stat -c %Y "$src/CMakeLists.txt")}
platforms=()
for arch in "${targets[@]}"; do platforms+=(--platform "$arch=$work/root-$arch"); done
python3 "$src/packaging/container/oci-archive.py" "${platforms[@]}" --ref "$reference" \
  --output "$archive" --timestamp "$timestamp" \
  --entrypoint '["/usr/bin/xpu-k8s-shim"]' --cmd '["--help"]' --user 65534:65534 \
  --label org.opencontainers.image.title=xpu-k8s-shim \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "org.opencontainers.image.description=Kunlunxin XPU device plugin, exporter and token sync for Kubernetes" \
  >"$work/image.json"
layer_size=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layer_tar_size"])' "$work/image.json")

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
log "archive:   $archive"
log "reference: $reference"
log "platforms: $(printf 'linux/%s ' "${targets[@]}" | sed 's/ $//')"
log "size:      $(mib "$(stat -c %s "$archive")") compressed, $(mib "$layer_size") unpacked"
for arch in "${targets[@]}"; do
  log "packages ($arch): $(paste -sd' ' "$work/runtime-packages-$arch")"
done
log "done in $((SECONDS - started)) s"
