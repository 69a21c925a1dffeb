#!/bin/bash
# Builds the xpu-k8s-shim image without a registry or a container engine: the contents the
# Containerfile describes (a Debian 12 slim root, the libraries dpkg-shlibdeps finds for the
# binary, the stripped binary, user 65534:65534), written as one archive that `podman load` and
# `ctr images import` accept, named with the chart's default reference.
#
# Usage: packaging/container/build-image.sh [--output DIR] [--binary PATH] [--version V]
#   --output DIR   where the archive and the shim's build go
#                  (default: build-image/ in the source tree)
#   --binary PATH  put this xpu-k8s-shim in the image instead of building one (it must report
#                  version V); it is stripped on the way in
#   --version V    the version, which is also the image tag (default: the project's version,
#                  the chart's appVersion)
# Environment: XPU_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# XPU_DEBIAN_SECURITY_MIRROR (default http://deb.debian.org/debian-security) and XPU_IMAGE_CACHE
# (default ~/.cache/xpu-k8s-shim-image).
# Needs root (mmdebstrap in root mode keeps the packages' file owners), mmdebstrap, curl,
# dpkg-shlibdeps, python3 with yaml; cmake and ninja unless --binary is given.
#
# The slow part, the Debian root with the runtime packages, is cached in XPU_IMAGE_CACHE under a key
# made of the mmdebstrap command line (package list included) and the Date of each suite's
# InRelease on the mirror: a security update or a new library for the binary makes a new root.
set -euo pipefail

usage() { sed -n 's/^# \{0,1\}//; 7,16p' "$0"; }
die() { echo "build-image.sh: $*" >&2; exit 1; }
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "build-image.sh: $1 needs a value" >&2; usage >&2; exit 2; }; }

src=$(cd "$(dirname "$0")/../.." && pwd)
output=$src/build-image
binary=""
version=""
while [ $# -gt 0 ]; do
  case $1 in
    --output) need_value "$@"; output=$2; shift 2 ;;
    --binary) need_value "$@"; binary=$2; shift 2 ;;
    --version) need_value "$@"; version=$2; shift 2 ;;
    --output=* | --binary=* | --version=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
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
# The base root is cached per user, not per output directory, so that every build on a machine
# (the tests', an operator's) makes it once. One build at a time uses the cache.
cache=${XPU_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xpu-k8s-shim-image}
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -n 9 || { echo "build-image.sh: waiting for another build using $cache"; flock 9; }

work=$(mktemp -d "$output/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
log() { printf '[image] %s\n' "$*"; }

# 1. The binary, unless given: built as the Containerfile and the Debian package build it, with
# dpkg-buildflags' flags and hardening=+all (-O2, stack protector, _FORTIFY_SOURCE, full RELRO),
# no tests. Not CMAKE_BUILD_TYPE=Release: GCC 12 at -O3 reports a false -Wrestrict in
# std::string's operator+ (GCC bug 105329), which -Werror makes fatal.
if [ -z "$binary" ]; then
  command -v cmake >/dev/null && command -v ninja >/dev/null || die "missing cmake or ninja (or pass --binary)"
  log "building xpu-k8s-shim $version (the Debian package's flags, no tests) in $output/shim-build"
  flags() { (cd "$src" && DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"); }
  cmake -S "$src" -B "$output/shim-build" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_C_FLAGS="$(flags CFLAGS) $(flags CPPFLAGS)" -DCMAKE_CXX_FLAGS="$(flags CXXFLAGS) $(flags CPPFLAGS)" \
    -DCMAKE_EXE_LINKER_FLAGS="$(flags LDFLAGS)" -DCMAKE_SHARED_LINKER_FLAGS="$(flags LDFLAGS)" \
    -DXPU_BUILD_TESTS=OFF -DXPU_BUILD_SHIM=ON -DXPU_VERSION="$version" >"$work/cmake.log" 2>&1 ||
    { tail -20 "$work/cmake.log"; die "cmake configure failed"; }
  cmake --build "$output/shim-build" --target xpu-k8s-shim >"$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log"; die "building xpu-k8s-shim failed"; }
  binary=$output/shim-build/k8s-shim/xpu-k8s-shim
fi
[ -f "$binary" ] && [ -x "$binary" ] || die "--binary $binary is not an executable file"
binary=$(realpath "$binary") # run by its path, never looked up in PATH
reported=$("$binary" --version 2>&1) || die "$binary --version failed: $reported"
[ "$reported" = "xpu-k8s-shim $version" ] ||
  die "$binary reports '$reported', not 'xpu-k8s-shim $version': the image tag would not match its contents"
install -D -m 0755 -s "$binary" "$work/out/usr/bin/xpu-k8s-shim"

# 2. The runtime packages: exactly those holding the libraries the binary links, as
# dpkg-shlibdeps finds them (versions and alternatives dropped), as in the Containerfile.
mkdir -p "$work/shlibs/debian"
cp "$src/debian/control" "$work/shlibs/debian/control"
(cd "$work/shlibs" && dpkg-shlibdeps -O "$work/out/usr/bin/xpu-k8s-shim" 2>"$work/shlibdeps.log") |
  sed -n 's/^shlibs:Depends=//p' | tr ',' '\n' |
  sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u >"$work/runtime-packages" ||
  true
[ -s "$work/runtime-packages" ] || { cat "$work/shlibdeps.log" >&2; die "dpkg-shlibdeps found no package for $binary"; }

# 3. The base root: Debian 12 minbase with the runtime packages, slimmed as debian:12-slim is
# (no documentation but the copyright files, no manual pages, no translations), with merged /usr
# set up by mmdebstrap itself rather than by the usrmerge package (which would pull in perl).
mirror=${XPU_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${XPU_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
suite=bookworm
sources=("deb $mirror $suite main" "deb $mirror $suite-updates main" "deb $security $suite-security main")
mmdebstrap_args=(--variant=minbase --mode=root --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --include="$(paste -sd, "$work/runtime-packages")"
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/groff/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/linda/*'
  --dpkgopt='path-exclude=/usr/share/lintian/overrides/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias'
  "$suite")
recipe=$(printf '%s\n' "${mmdebstrap_args[@]}" "${sources[@]}" | sha256sum | cut -c1-16)
dates=""
for dist in "$mirror/dists/$suite" "$mirror/dists/$suite-updates" "$security/dists/$suite-security"; do
  date=$(curl -fsS --max-time 30 "$dist/InRelease" 2>"$work/curl.log" | sed -n 's/^Date: //p' | head -1) || true
  [ -n "$date" ] || { dates=""; break; }
  dates="$dates$date;"
done
if [ -n "$dates" ]; then
  key=$recipe-$(printf '%s' "$dates" | sha256sum | cut -c1-16)
else
  # Offline: the newest root made from the same recipe will do, and says so.
  key=$(cd "$cache" 2>/dev/null && ls -1t -d "$recipe"-* 2>/dev/null | head -1) || true
  [ -n "$key" ] || {
    cat "$work/curl.log" >&2
    die "cannot read $mirror/dists/$suite/InRelease and no cached root to fall back on"
  }
  log "the mirror is not reachable: using the cached root $key"
fi
base=$cache/$key
if [ -f "$base/done" ]; then
  log "base root cached ($base)"
else
  log "making the base root with mmdebstrap (a few minutes; cached in $cache)"
  rm -rf "$base"
  mkdir -p "$base"
  # mmdebstrap makes the same root from the same mirror state when told that state's time
  # (file times, /etc/shadow's dates): the newest of the suites' dates.
  epoch=0
  IFS=';' read -ra stamps <<<"$dates"
  for stamp in "${stamps[@]}"; do
    seconds=$(date -d "$stamp" +%s) && [ "$seconds" -gt "$epoch" ] && epoch=$seconds
  done
  if ! SOURCE_DATE_EPOCH=$epoch mmdebstrap "${mmdebstrap_args[@]}" "$base/root" "${sources[@]}" \
    >"$base/mmdebstrap.log" 2>&1; then
    tail -20 "$base/mmdebstrap.log" >&2
    rm -rf "$base"
    die "mmdebstrap failed (log above)"
  fi
  root=$base/root
  # What the build machine left in it, and what a container runtime provides: the host's name
  # and resolver, device nodes. Logs and caches that only record this build go too.
  rm -rf "${root:?}"/dev/* "$root/etc/hostname" "$root/etc/resolv.conf" \
    "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root/var/cache/ldconfig/aux-cache" \
    "$root/var/log/dpkg.log" "$root/var/log/alternatives.log" "$root"/var/log/apt/*
  cp "$work/runtime-packages" "$base/runtime-packages"
  printf '%s\n' "$dates" >"$base/mirror-dates"
  touch "$base/done"
  # Only the current root is kept: each is about 100 MB.
  find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
fi

# 4. The image's root: the base plus the binary, written as one layer.
# Hard links: fast, and the cached root stays as it is since only a new file is added (a copy
# where the cache is on another file system).
cp -al "$base/root" "$work/root" 2>/dev/null || { rm -rf "$work/root"; cp -a "$base/root" "$work/root"; }
install -m 0755 "$work/out/usr/bin/xpu-k8s-shim" "$work/root/usr/bin/xpu-k8s-shim"
arch=$(dpkg --print-architecture)
archive=$output/xpu-k8s-shim-image-$version-$arch.tar
revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
# Reproducible: the same commit and the same packages give the same archive.
timestamp=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || stat -c %Y "$src/CMakeLists.txt")}
python3 "$src/packaging/container/oci-archive.py" --root "$work/root" --ref "$reference" \
  --output "$archive" --architecture "$arch" --timestamp "$timestamp" \
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
log "size:      $(mib "$(stat -c %s "$archive")") compressed, $(mib "$layer_size") unpacked"
log "packages:  $(paste -sd' ' "$work/runtime-packages")"
log "done in $((SECONDS - started)) s"
