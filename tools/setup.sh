#!/usr/bin/env bash
# Create an environment at the repository root, from PyPI only:
#   bash tools/setup.sh            the reference environment in .venv/ (torch 2.8 + IPEX 2.8)
#   bash tools/setup.sh current    today's stack in .venv-current/ (torch 2.14, transformers 5, no IPEX)
# Idempotent: a second run with unchanged requirements installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
lane=${1:-reference}
case "$lane" in
    reference) venv=.venv ;;
    current) venv=.venv-current ;;
    *) echo "setup: unknown environment '$lane': choose reference or current" >&2; exit 2 ;;
esac
requirements=requirements/$lane.txt

python=${VITLAB_PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "setup: $python is $("$python" --version 2>&1); the reference environment wants Python 3.11" \
         "(set VITLAB_PYTHON to a python3.11)" >&2
fi

stamp=$venv/.vitlab-setup
want=$(cat "$requirements" pyproject.toml | sha256sum | cut -c1-16)
quiet() { grep -v "is ignored: it is neither a file nor a directory" || true; }  # local-mirror noise
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "setup: $venv is up to date ($want)"
    exit 0
fi

# A fresh checkout builds the environment in a cache outside it, keyed by the dependency files'
# hash, and links $venv to it; the next fresh checkout on this machine (CI) reuses it and only
# re-points the editable vitlab install at itself. VITLAB_ENV_CACHE=none builds in place.
cache_root=${VITLAB_ENV_CACHE:-$HOME/.cache/vitlab/envs}
if [ ! -e "$venv" ] && [ "$cache_root" != none ]; then
    cached=$cache_root/$lane-$want
    if [ -f "$cached/.vitlab-setup" ]; then
        ln -s "$cached" "$venv"
        "$venv/bin/python" -m pip install --quiet --no-deps -e . 2>&1 | quiet
        echo "setup: $venv -> $cached (cached environment for these requirements)"
        exit 0
    fi
    rm -rf "$cached"
    mkdir -p "$cache_root"
    "$python" -m venv "$cached"
    ln -s "$cached" "$venv"
fi

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
echo "setup: installing the $lane environment into $venv ($requirements; several GB)"
"$venv/bin/python" -m pip install --quiet -r "$requirements" 2>&1 | quiet
"$venv/bin/python" -m pip install --quiet --no-deps -e . 2>&1 | quiet
"$venv/bin/python" -c "import torch, timm, transformers, vitlab; print('setup: torch', torch.__version__, '| transformers', transformers.__version__, '| timm', timm.__version__)"
echo "$want" > "$stamp"
