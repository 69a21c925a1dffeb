#!/bin/sh
# Checks that the output of `scripts/demo.sh --once` shows what the README promises: xpud's eight
# simulated cards in xpuctl, the device plugin registered with the kubelet and two cards
# allocated with their environment and device nodes, /metrics, the token sync's files, the
# injected fault in xpuctl, /metrics and the kubelet's ListAndWatch, and the logs kept where the
# last line says. Shared by the demo test (here) and the fresh-machine test (tests/fresh).
#
# Usage: demo_output_check.sh OUTPUT_FILE [ROOT]
#   ROOT  the directory the demo ran in as /, when it ran in a container (its logs are under it)
# Prints one line per failed expectation and exits 1 on any.
set -eu
out=$1 root=${2:-}
failed=0
expect() {
  grep -q -- "$2" "$out" || { echo "demo output lacks $1 (no line matching: $2)"; failed=1; }
}
expect_count() {
  n=$(grep -c -- "$3" "$out" || true)
  [ "$n" -eq "$2" ] || { echo "demo output: $n lines of $1, expected $2 (lines matching: $3)"; failed=1; }
}

expect "xpuctl listing eight healthy cards" '8 devices, 8 healthy'
expect "the device plugin's registration with the kubelet" 'registered: kunlunxin.com/xpu'
expect "the allocation of two cards" '^  devices: [^ ]* [^ ]*$'
expect "XPU_VISIBLE_DEVICES for two cards" '^  env XPU_VISIBLE_DEVICES=[0-9],[0-9]$'
expect "CXPU_VISIBLE_DEVICES for two cards" '^  env CXPU_VISIBLE_DEVICES=[0-9],[0-9]$'
expect_count "card device nodes" 2 '^  device node: /dev/xpu[0-9] -> /dev/xpu[0-9]$'
for file in token ca.crt namespace kubeconfig; do
  expect "the token sync's file $file" " $file\$"
done
expect "the exporter's metrics" '^xpu_memory_used_bytes{'
expect "the fault in xpuctl" 'Health *Unhealthy (demo fault)'
expect "the fault in /metrics" '^xpu_healthy{xpu="3".*} 0$'
expect "the fault in ListAndWatch" '8 devices; .* Unhealthy'
logs=$(sed -n 's/^== logs kept in //p' "$out")
if [ -z "$logs" ]; then
  echo "demo output: no '== logs kept in' line"
  failed=1
elif [ ! -s "$root$logs/xpud.log" ] || [ ! -s "$root$logs/kubelet.jsonl" ]; then
  echo "demo output: the logs it names ($logs) are not there"
  failed=1
fi
exit "$failed"
