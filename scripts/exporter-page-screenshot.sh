#!/bin/sh
# Regenerates docs/exporter-page.png, the exporter's `/` page as the README shows it: builds xpud
# and xpu-k8s-shim, runs the browser test (ctest exporter_page_browser: headless Chromium against
# the sim backend, one card unhealthy, one held by a pod) and copies its desktop screenshot.
# Usage: scripts/exporter-page-screenshot.sh [BUILD_DIR]   (default build)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/build.ninja" ] || cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" xpud xpu-k8s-shim
rm -f "$build/exporter-page.png"
(cd "$build" && ctest -R '^exporter_page_browser$' --output-on-failure)
mkdir -p docs
cp "$build/exporter-page.png" docs/exporter-page.png
echo "docs/exporter-page.png updated (phone width: $build/exporter-page-phone.png)"
