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

want=$(cat "$requirements" pyproject.toml | sha256sum | cut -c1-16)
quiet() { grep -v "is ignored: it is neither a file nor a directory" || true; }  # local-mirror noise

# Every install runs through the environment's real path, never through the .venv link: pip writes
# each console script's shebang from the interpreter's path, so a script installed through a link
# would point into the checkout that made the link and break once that checkout is deleted.
pip_install() { "$1/bin/python" -m pip install --quiet "${@:2}" 2>&1 | quiet; }

# Scripts whose shebang names a python outside the environment (written by an older setup.sh
# through a checkout's link) are rewritten to the environment's own python.
repair_shebangs() {
    local env=$1 bad=0 script first
    for script in "$env"/bin/*; do
        [ -f "$script" ] && [ ! -L "$script" ] || continue
        IFS= read -r first < "$script" 2>/dev/null || continue
        case "$first" in
            "#!$env/bin/python"*|"#!/bin/sh"|"#!/usr/bin/env "*) ;;
            '#!'*python*) sed -i "1s|.*|#!$env/bin/python|" "$script"; bad=$((bad + 1)) ;;
        esac
    done
    [ "$bad" -eq 0 ] || echo "setup: repaired $bad script(s) in $env whose shebang pointed outside it"
}

# A cached environment is shared by every checkout on this machine; its editable vitlab install
# points at whichever checkout linked it last. Point it here again when it points elsewhere.
ensure_vitlab_here() {
    local found
    found=$(cd / && "$1/bin/python" -c 'import vitlab, os; print(os.path.realpath(vitlab.__file__))' 2>/dev/null || true)
    if [ "$found" != "$(pwd -P)/vitlab/__init__.py" ]; then
        pip_install "$1" --no-deps -e .
        echo "setup: vitlab in $venv now imports from this checkout (it pointed to ${found:-nothing})"
    fi
}

real=$(readlink -f "$venv" 2>/dev/null || true)
if [ -f "$venv/.vitlab-setup" ] && [ "$(cat "$venv/.vitlab-setup")" = "$want" ]; then
    repair_shebangs "$real"
    ensure_vitlab_here "$real"
    echo "setup: $venv is up to date ($want)"
    exit 0
fi

# A fresh checkout builds the environment in a cache outside it, keyed by the dependency files'
# hash, and links $venv to it; the next fresh checkout on this machine (CI) reuses it and only
# re-points the editable vitlab install at itself. VITLAB_ENV_CACHE=none builds in place.
cache_root=${VITLAB_ENV_CACHE:-$HOME/.cache/vitlab/envs}
if [ ! -e "$venv" ] && [ "$cache_root" != none ]; then
    mkdir -p "$cache_root"
    cached=$(readlink -f "$cache_root")/$lane-$want
    if [ -f "$cached/.vitlab-setup" ]; then
        repair_shebangs "$cached"
        ln -s "$cached" "$venv"
        pip_install "$cached" --no-deps -e .
        echo "setup: $venv -> $cached (cached environment for these requirements)"
        exit 0
    fi
    rm -rf "$cached"
    "$python" -m venv "$cached"
    ln -s "$cached" "$venv"
fi

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
real=$(readlink -f "$venv")
echo "setup: installing the $lane environment into $venv ($requirements; several GB)"
pip_install "$real" -r "$requirements"
pip_install "$real" --no-deps -e .
"$real/bin/python" -c "import torch, timm, transformers, vitlab; print('setup: torch', torch.__version__, '| transformers', transformers.__version__, '| timm', timm.__version__)"
echo "$want" > "$real/.vitlab-setup"
