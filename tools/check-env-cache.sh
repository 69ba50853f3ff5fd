#!/usr/bin/env bash
# A cached environment must outlive the checkout that built (or last linked) it: clone this
# repository into a throw-away folder, let that clone build or link the cache, delete the clone,
# then set up here and run the environment's tools. Used by CI before the tests.
#   bash tools/check-env-cache.sh [reference|current]
set -euo pipefail
cd "$(dirname "$0")/.."
lane=${1:-reference}
venv=.venv; [ "$lane" = current ] && venv=.venv-current
scratch=$(mktemp -d)
git clone --quiet . "$scratch/other-checkout"
bash "$scratch/other-checkout/tools/setup.sh" "$lane"
rm -rf "$scratch"
bash tools/setup.sh "$lane"
for tool in pytest papermill jupyter-book; do
    if ! "$venv/bin/$tool" --version >/dev/null 2>&1; then
        echo "check-env-cache: $venv/bin/$tool does not run after the checkout that set it up was deleted:" \
             "$(head -1 "$venv/bin/$tool")" >&2
        exit 1
    fi
done
"$venv/bin/vitlab" --help >/dev/null
echo "check-env-cache: $lane environment ($(readlink -f "$venv")) works after its other checkout was deleted"
