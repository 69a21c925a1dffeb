#!/bin/bash
# The newcomer's path, checked in CI: on a fresh Debian 12 root, the README's two commands run as
# written (section "The two commands": scripts/demo.sh, with the --once the README gives it, then
# scripts/test.sh), and the README's configuration example (section "Configuration") goes through
# xpud --check-config. It asserts what a newcomer sees: both commands exit 0; the demo shows what
# the README promises, the device plugin allocating two cards among it
# (tests/e2e/demo_output_check.sh); both passes of the test suite, plain and under ASan+UBSan, say
# 100% passed; xpud accepts the example. It prints how long each step took and how many packages
# each install tier added.
#
# It tests the COMMIT at HEAD of SOURCE_DIR (a git clone), not uncommitted files.
#
# The root is the boot test's debootstrap root (tests/e2e/debian_root.sh, cached in BUILD_DIR),
# copied, with Debian 12's standard apt sources and this machine's CA certificates
# (/usr/local/share/ca-certificates): this network reaches the package registries through a
# TLS-intercepting egress, and a machine on it trusts that CA, or Go's module downloads fail. The
# clone sits at SOURCE_DIR's own absolute path, so that its builds are the host's builds, command
# for command, and hit the caches bind-mounted in:
#   - the compiler cache, when this environment has one (CMAKE_CXX_COMPILER_LAUNCHER=ccache and
#     CCACHE_*, as scripts/test.sh exports them under XPU_CCACHE_DIR): ccache is installed in the
#     root as test setup and the environment carries the launcher, so the README's commands stay
#     as written. Without one the root's two builds (plain and ASan) run cold, about 23 min more;
#   - Go's build and module caches (the module cache also holds the toolchain scripts/go fetches).
# apt's archive (/var/cache/apt/archives) is shared by hard links instead: this machine's packages
# are linked into the root before the steps and what the root downloads is linked back after each,
# so nothing is downloaded twice, and the root's apt never takes this machine's apt's lock (a
# bind-mounted archive made either fail at once while the other ran).
# Each step runs in its own systemd-nspawn (not booted, host network), whose mounts and processes
# end with it.
#
# Usage: fresh_machine_test.sh SOURCE_DIR BUILD_DIR     (as root; systemd-nspawn, debootstrap, git)
# Each step's output, with the time since the step began, is kept in BUILD_DIR/fresh-logs/.
set -euo pipefail

src=$(realpath "$1")
build=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
logs="$build/fresh-logs"
work=""
nspawn_pid=""
stamp_pid=""
machine="xpu-fresh-$$" # its own name: the boot test's container is also called after its "root" directory

say() { printf '[fresh] %s\n' "$*"; }
fail() { say "FAIL: $*"; exit 1; }
# step_fail STEP MESSAGE: which step failed, why, and the end of its output.
step_fail() {
  say "FAIL in step '$1': $2"
  say "the last 40 lines of $logs/$1.log (minutes:seconds into the step):"
  tail -n 40 "$logs/$1.log" | sed 's/^/    /'
  exit 1
}

cleanup() {
  local rc=$?
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    # systemd-nspawn answers SIGTERM by killing everything in the container.
    kill -TERM "$nspawn_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$nspawn_pid" 2>/dev/null || true
  fi
  [ -z "$stamp_pid" ] || wait "$stamp_pid" 2>/dev/null || true
  if [ -n "$work" ]; then
    # nspawn's bind mounts live in its own mount namespace and end with it; were one ever seen from
    # here, it is detached before the copy goes, so that rm never reaches into a cache.
    awk -v w="$work/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
      while read -r mountpoint; do umount -l "$mountpoint" || true; done
    local removing=$SECONDS
    rm -rf "$work"
    say "the root copy removed ($(duration $((SECONDS - removing))))"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, systemd-nspawn)"
for tool in systemd-nspawn debootstrap git; do
  command -v "$tool" >/dev/null || fail "missing $tool (scripts/install-deps.sh ci installs it)"
done

# stamp: copies its input, each line prefixed with [minutes:seconds] since it started.
stamp() {
  local start now line
  printf -v start '%(%s)T' -1
  while IFS= read -r line || [ -n "$line" ]; do
    printf -v now '%(%s)T' -1
    printf '[%02d:%02d] %s\n' $(((now - start) / 60)) $(((now - start) % 60)) "$line"
  done
}
# raw STEP: that step's output without the time prefixes.
raw() { sed 's/^\[[0-9]*:[0-9]*\] //' "$logs/$1.log"; }

packages() { dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${db:Status-Abbrev}\n' | grep -c '^ii'; }
archived() { find "$root/var/cache/apt/archives" -maxdepth 1 -name '*.deb' | wc -l; }
# link_debs FROM TO: the .deb files of apt's archive FROM that TO lacks, as hard links (copies
# where the two are on different file systems).
link_debs() {
  find "$1" -maxdepth 1 -name '*.deb' -exec cp --link --no-clobber -t "$2" {} + 2>/dev/null ||
    find "$1" -maxdepth 1 -name '*.deb' -exec cp --no-clobber -t "$2" {} +
}
duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

summary=()
# in_root STEP COMMAND: runs COMMAND with sh in the root, in the clone; its output goes to
# $logs/STEP.log. Sets step_rc (its exit status) and step_seconds, and notes the packages added.
in_root() {
  local step=$1 command=$2 before_packages before_archived started
  before_packages=$(packages)
  before_archived=$(archived)
  started=$SECONDS
  say "step '$step': $command"
  rm -f "$work/output"
  mkfifo "$work/output"
  stamp <"$work/output" >"$logs/$step.log" &
  stamp_pid=$!
  # This sandbox's cgroup v1 tree is incomplete; the unified hierarchy works. /tmp stays the
  # root's own directory, as on a Debian 12 machine, so the demo's logs outlive the step.
  SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 SYSTEMD_NSPAWN_TMPFS_TMP=0 \
    systemd-nspawn -q -D "$root" --machine="$machine" --register=no --keep-unit --console=pipe --as-pid2 \
    --chdir="$src" "${nspawn_args[@]}" --setenv=CCACHE_STATSLOG="/var/log/ccache-$step.log" \
    /usr/bin/env -u NOTIFY_SOCKET /bin/sh -c "$command" </dev/null >"$work/output" 2>&1 &
  nspawn_pid=$!
  step_rc=0
  wait "$nspawn_pid" || step_rc=$?
  nspawn_pid=""
  wait "$stamp_pid" || true
  stamp_pid=""
  step_seconds=$((SECONDS - started))
  local added=$(($(packages) - before_packages)) fetched=$(($(archived) - before_archived))
  link_debs "$root/var/cache/apt/archives" /var/cache/apt/archives
  say "step '$step': exit $step_rc after $(duration "$step_seconds");" \
    "$added packages added, $fetched downloaded"
  summary+=("$(printf '%-8s %8s %6s' "$step" "$(duration "$step_seconds")" "$added")")
  step_misses=0
  if [ -f "$root/var/log/ccache-$step.log" ]; then
    local stats hits
    stats=$(CCACHE_STATSLOG="$root/var/log/ccache-$step.log" ccache --show-log-stats)
    hits=$(sed -n 's/^ *Hits: *//p' <<<"$stats" | head -1)
    step_misses=$(sed -n 's/^ *Misses: *\([0-9]*\).*/\1/p' <<<"$stats" | head -1)
    say "step '$step': compiler cache hits ${hits:-none}"
    summary[-1]+="   ccache hits ${hits:-none}"
  fi
}
# When this run's own builds filled the compiler cache with every compile the README's commands
# make (XPU_FRESH_SHARES_COMPILES=1: scripts/test.sh runs this test after its plain and ASan
# builds), a step that compiled more than a handful anew fails: CMake's compiler checks may miss,
# but a package version, a flag or a precompiled header that differs between the root and this
# machine shows up here, not as minutes in every CI run. (A newer linux-libc-dev in the root made
# its precompiled GoogleTest header differ, and with it all 131 tests of the ASan build.)
most_misses=8
check_shared_compiles() {
  [ "${XPU_FRESH_SHARES_COMPILES:-0}" = 1 ] || return 0
  [ "${step_misses:-0}" -le "$most_misses" ] ||
    step_fail "$1" "it compiled $step_misses files anew, though this run's builds had filled the\
 compiler cache with what it compiles: the root's packages, flags or precompiled header differ\
 from this machine's (ccache's debug log, CCACHE_DEBUG=1, names the input that did)"
}

# The commit under test, in a clone at this checkout's path inside a copy of the base root.
commit=$(git -C "$src" rev-parse HEAD) || fail "$src is not a git checkout"
say "testing commit $(git -C "$src" log -1 --format='%h %s' "$commit")"
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
  say "note: $src has uncommitted changes; they are not tested (the root gets a clone of HEAD)"
fi
rm -rf "$logs"
mkdir -p "$logs"
started=$SECONDS
base=$("$here/../e2e/debian_root.sh" "$build")
work=$(mktemp -d "${TMPDIR:-/var/tmp}/xpu-fresh.XXXXXX")
root="$work/root"
cp -a "$base" "$root"
git clone -q --no-checkout "$src" "$root$src"
git -C "$root$src" fetch -q origin HEAD
git -C "$root$src" checkout -q --detach "$commit"
say "step 'root': the base root copied ($(packages) packages), commit $commit cloned to $src" \
  "in it: $(duration $((SECONDS - started)))"
summary+=("$(printf '%-8s %8s %6s' root "$(duration $((SECONDS - started)))" "$(packages)")")

# The README, as committed, says what runs.
readme="$root$src/README.md"
mapfile -t commands < <(awk '/^## The two commands/ { section = 1; next }
  section && !block && /^## / { exit }
  section && /^```sh/ { block = 1; next }
  block && /^```/ { exit }
  block' "$readme" | sed 's/[[:space:]]*#.*//' | grep -v '^[[:space:]]*$')
if [ "${#commands[@]}" -ne 2 ] || [ "${commands[0]%% *}" != scripts/demo.sh ] ||
  [ "${commands[1]%% *}" != scripts/test.sh ]; then
  fail "the README's \"The two commands\" block no longer reads scripts/demo.sh, scripts/test.sh:" \
    "$(printf '[%s] ' "${commands[@]}")(update tests/fresh)"
fi
grep -q '`scripts/demo.sh --once` prints and stops' "$readme" ||
  fail "the README no longer says that scripts/demo.sh --once prints and stops (this test runs the demo so)"
example=$(awk '/^### Configuration/ { section = 1; next }
  section && !block && /^#/ { exit }
  section && /^```ini/ { block = 1; next }
  block && /^```/ { exit }
  block' "$readme")
[ -n "$example" ] || fail "no \`\`\`ini example in the README's section Configuration"

# This machine's trust and Debian 12's standard sources (the host's suites, so that its compiler
# and headers are the versions the compiler cache was filled with).
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
# The root is thrown away after the test: dpkg need not sync every file it unpacks (as in Debian's
# container images; the build tier in 34 s instead of 40 s on an idle machine).
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/xpu-fresh-unsafe-io"
mkdir -p "$root/usr/local/share/ca-certificates"
cas=()
for ca in /usr/local/share/ca-certificates/*.crt; do
  [ -f "$ca" ] || continue
  cp "$ca" "$root/usr/local/share/ca-certificates/"
  cas+=("$(basename "$ca" .crt)")
done

# What the root's steps share with this machine: the caches, at the same paths.
link_debs /var/cache/apt/archives "$root/var/cache/apt/archives"
say "apt's archive: $(archived) packages from this machine's"
# The locale: this environment's when it sets one (ccache keys compiles on LANG and LC_ALL, so
# the root's builds hit only a cache filled under the same; scripts/test.sh sets both), else C.UTF-8.
nspawn_args=(--setenv=LANG="${LANG:-C.UTF-8}")
[ -z "${LC_ALL:-}" ] || nspawn_args+=(--setenv=LC_ALL="$LC_ALL")
setup_packages=ca-certificates
if [ "$(basename "${CMAKE_CXX_COMPILER_LAUNCHER:-none}")" = ccache ] && command -v ccache >/dev/null; then
  ccache_dir=$(ccache -k cache_dir)
  mkdir -p "$ccache_dir"
  nspawn_args+=(--bind="$ccache_dir" --setenv=CCACHE_DIR="$ccache_dir")
  for name in $(compgen -e | grep -E '^(CCACHE_|CMAKE_(C|CXX)_COMPILER_LAUNCHER$)' |
    grep -vx 'CCACHE_STATSLOG\|CCACHE_DIR'); do
    nspawn_args+=(--setenv="$name=${!name}")
  done
  setup_packages="$setup_packages ccache"
  say "compiler cache: $ccache_dir ($(ccache -k compiler_check) compiler check, base dir $(ccache -k base_dir))"
else
  say "no compiler cache in this environment (CMAKE_CXX_COMPILER_LAUNCHER=ccache, CCACHE_DIR):" \
    "the root's builds run cold, about 23 minutes more"
fi
# (asked from /, outside any go.mod, so that asking fetches no toolchain)
if go_caches=$(cd / && "$src/scripts/go" env GOCACHE GOMODCACHE 2>/dev/null); then
  { read -r gocache; read -r gomodcache; } <<<"$go_caches"
  mkdir -p "$gocache" "$gomodcache"
  nspawn_args+=(--bind="$gocache" --setenv=GOCACHE="$gocache" --bind="$gomodcache" --setenv=GOMODCACHE="$gomodcache")
  say "Go caches: build $gocache, modules $gomodcache"
else
  say "no Go here (scripts/go): the root's Go downloads its toolchain and modules and builds cold"
fi
for name in GOPROXY GOSUMDB GONOSUMDB GOPRIVATE GONOPROXY GOINSECURE GOFLAGS \
  http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [ -z "${!name:-}" ] || nspawn_args+=(--setenv="$name=${!name}")
done

in_root setup "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends $setup_packages >/dev/null && update-ca-certificates"
[ "$step_rc" -eq 0 ] || step_fail setup "exit $step_rc"
for ca in "${cas[@]}"; do
  [ -e "$root/etc/ssl/certs/$ca.pem" ] || step_fail setup "this machine's CA $ca is not in the root's /etc/ssl/certs"
done
say "ok: the root trusts this machine's ${#cas[@]} local CA certificates"

in_root demo "${commands[0]} --once"
[ "$step_rc" -eq 0 ] || step_fail demo "'${commands[0]} --once' exited $step_rc"
check_shared_compiles demo
raw demo >"$work/demo.out"
problems=$("$here/../e2e/demo_output_check.sh" "$work/demo.out" "$root") ||
  step_fail demo "the demo does not show what the README promises:"$'\n'"$problems"
say "ok: the demo shows xpud's cards, the device plugin allocating two, /metrics, the token files" \
  "and the fault in all three"

in_root test "${commands[1]}"
[ "$step_rc" -eq 0 ] || step_fail test "'${commands[1]}' exited $step_rc"
check_shared_compiles test
raw test >"$work/test.out"
grep -q '^== tests under AddressSanitizer and UndefinedBehaviorSanitizer ==$' "$work/test.out" ||
  step_fail test "no ASan+UBSan pass, which the README promises"
mapfile -t passed < <(grep -E '^[0-9]+% tests passed' "$work/test.out")
all_passed=$(grep -c '^100% tests passed, 0 tests failed out of [1-9]' "$work/test.out" || true)
if [ "${#passed[@]}" -ne 2 ] || [ "$all_passed" -ne 2 ]; then
  step_fail test "expected two summaries (plain, then ASan+UBSan) saying 100% passed, got:" \
    "$(printf '[%s] ' "${passed[@]}")"
fi
say "ok: the test suite: ${passed[0]}; under ASan+UBSan: ${passed[1]}"
not_run=$(grep -E '^[[:space:]]*[0-9]+ - .* \((Skipped|Not Run|Disabled)\)$' "$work/test.out" |
  sed 's/^[[:space:]]*[0-9]* - //' | sort -u)
[ -z "$not_run" ] || say "note: ctest did not run:" $not_run

mkdir -p "$root/etc/xpud"
printf '%s\n' "$example" >"$root/etc/xpud/xpud.conf"
in_root config "build/xpud/xpud --check-config"
[ "$step_rc" -eq 0 ] || step_fail config "xpud --check-config rejects the README's example (exit $step_rc)"
raw config | grep -q '^/etc/xpud/xpud.conf: configuration OK' ||
  step_fail config "xpud --check-config did not say /etc/xpud/xpud.conf: configuration OK"
say "ok: xpud --check-config accepts the README's configuration example as /etc/xpud/xpud.conf"

say "summary for commit ${commit:0:12} (packages: in the base root, then added by each step;" \
  "setup: $setup_packages; demo: the build tier; test: the test tier):"
printf '    %-8s %8s %6s\n' step time pkgs
printf '    %s\n' "${summary[@]}"
say "total $(duration $((SECONDS - started))); logs in $logs"
say PASS
