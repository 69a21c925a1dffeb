#!/bin/sh
# Fails, naming each file, when a C++ file git tracks is not as clang-format 14 formats it with
# the tree's .clang-format. `--fix` formats those files in place instead.
# Usage: scripts/check-format.sh [--fix]      (clang-format-14: scripts/install-deps.sh ci)
set -eu
cd "$(dirname "$0")/.."
fix=0
case "${1:-}" in
  '') ;;
  --fix) fix=1 ;;
  *) echo "usage: $0 [--fix]" >&2; exit 2 ;;
esac
command -v clang-format-14 >/dev/null 2>&1 ||
  { echo "check-format.sh: clang-format-14 is missing (scripts/install-deps.sh ci installs it)" >&2; exit 1; }

if [ "$fix" -eq 1 ]; then
  git ls-files -z '*.cpp' '*.cc' '*.h' | xargs -0 -r clang-format-14 -i
  exit 0
fi
# --dry-run -Werror reports "FILE:LINE:COL: error: code should be clang-formatted" for each place.
unformatted=$(git ls-files -z '*.cpp' '*.cc' '*.h' |
  xargs -0 -r clang-format-14 --dry-run -Werror 2>&1 |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if [ -n "$unformatted" ]; then
  echo "check-format.sh: not formatted as clang-format-14 formats them (scripts/check-format.sh --fix):" >&2
  printf '  %s\n' $unformatted >&2
  exit 1
fi
echo "check-format.sh: $(git ls-files '*.cpp' '*.cc' '*.h' | wc -l) files formatted"
