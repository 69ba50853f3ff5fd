#!/usr/bin/env bash
# Dry run of tools/device-run.sh here, on CPU, before spending GPU-machine time on it:
#   bash tools/device-dry-run.sh            BACKEND=cpu PRESET=quick (override either in the environment)
# It runs exactly tools/device-run.sh, on a copy of what a device call would send (tracked and
# untracked-not-ignored files, plus .whl), with a clean Python 3.12 virtual environment standing in
# for the machine's image: torch 2.11.0, torchvision 0.26, transformers 5.17 and the image's other
# packages that vitlab uses, but no papermill, nbclient, nbformat, jupyter_client, ipykernel or
# torchao, so the carried wheels are what makes it work. That environment (several GB: PyPI's torch
# for Linux is the CUDA build) lives in ~/.cache/vitlab/envs/dryrun-py312 and is reused.
# Passes when every chapter ran and each left rows of the backend in the rows file.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
backend=${BACKEND:-cpu}
preset=${PRESET:-quick}
env=${DRYRUN_ENV:-$HOME/.cache/vitlab/envs/dryrun-py312}
# A Python 3.12 that runs: $VITLAB_PYTHON312, else python3.12 on PATH, else pyenv's own 3.12 builds. Each is tried,
# since pyenv's python3.12 shim exists on PATH yet fails (exit 127) unless 3.12 is the selected version.
python312() {
    local candidate
    for candidate in "${VITLAB_PYTHON312:-}" python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python; do
        if [ -n "$candidate" ] && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null
        then
            command -v "$candidate"
            return 0
        fi
    done
    echo "dry run: no working Python 3.12 (tried \$VITLAB_PYTHON312, python3.12, ~/.pyenv/versions/3.12*)" >&2
    return 1
}
quiet() { grep -v "is ignored: it is neither a file nor a directory" || true; }  # local-mirror noise

# The image's stand-in: what the nvidia-h200 image holds (the device tool's KINDS.md) and vitlab uses,
# at the image's versions where they are known.
image=$(sed "s/#.*//; s/[[:space:]]//g; /^$/d" requirements/gpu-image.txt)  # set -e stops here if it is unreadable
[ -n "$image" ] || { echo "dry run: requirements/gpu-image.txt lists nothing" >&2; exit 1; }
mapfile -t IMAGE <<<"$image"
want=$(printf '%s\n' "${IMAGE[@]}" | sha256sum | cut -c1-16)
if [ ! -f "$env/.vitlab-dryrun" ] || [ "$(cat "$env/.vitlab-dryrun")" != "$want" ]; then
    echo "dry run: building the image's stand-in in $env (Python 3.12, torch 2.11; several GB, once)"
    if [ ! -x "$env/bin/python" ]; then
        py312=$(python312)  # none: the message above, and set -e stops here
        "$py312" -m venv "$env"
    fi
    PIP_FIND_LINKS= PIP_CONSTRAINT= "$env/bin/python" -m pip install --quiet "${IMAGE[@]}" 2>&1 | quiet
    echo "$want" >"$env/.vitlab-dryrun"
fi
for absent in papermill nbclient nbformat jupyter_client ipykernel torchao vitlab; do
    if (cd / && "$env/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$absent') is None)"); then
        echo "dry run: $env has $absent, which the machine's image lacks: the dry run would not test .whl" >&2
        exit 1
    fi
done

bash tools/wheelhouse.sh

tmp=$(mktemp -d -t vitlab-dryrun-XXXXXX)
repo=$tmp/repo
mkdir -p "$repo"
# What a device call sends: tracked files and untracked ones git does not ignore, plus the carried .whl.
git ls-files -z -co --exclude-standard | (cd "$root" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) \
    | tar -C "$root" --null -T - -cf - | tar -C "$repo" -xf -
cp -r .whl "$repo/.whl"
echo "dry run: $(git ls-files -co --exclude-standard | wc -l) files copied to $repo; $(ls .whl | wc -l) wheels," \
     "$(du -sh .whl | cut -f1) in .whl"

extra=()
[ -z "${CHAPTERS:-}" ] || extra+=("CHAPTERS=$CHAPTERS")
[ -z "${VITLAB_GIT_SHA:-}" ] || extra+=("VITLAB_GIT_SHA=$VITLAB_GIT_SHA")
start=$SECONDS
status=0
# A clean process environment apart from PATH: the stand-in's python3 first; no PYTHONPATH, no VIRTUAL_ENV;
# vitlab's cache and the hub's are empty, as on a fresh machine.
env -i HOME="$HOME" PATH="$env/bin:/usr/bin:/bin" LANG=C.UTF-8 TERM=dumb \
    BACKEND="$backend" PRESET="$preset" OUT="$tmp/out" SITE="$tmp/site" \
    VITLAB_CACHE="$tmp/cache" HF_HOME="$tmp/hf" TORCHINDUCTOR_CACHE_DIR="$tmp/inductor" \
    OMP_WAIT_POLICY=PASSIVE BUDGET_S="${BUDGET_S:-3600}" "${extra[@]}" \
    bash "$repo/tools/device-run.sh" || status=$?
echo "dry run: device-run.sh exited $status after $((SECONDS - start)) s"

# What came back, checked as the device tool would bring it (vitlab.book.lane.check_returned): the stand-in's python,
# the copied repository's vitlab.
chapters=()
[ -z "${CHAPTERS:-}" ] || read -r -a chapters <<<"$CHAPTERS"
(cd "$repo" && PYTHONPATH="$repo" "$env/bin/python" -m vitlab.book.lane check "$tmp/out" --backend "$backend" \
    ${chapters[@]:+--chapters "${chapters[@]}"}) || status=1
echo "dry run: files in $tmp/out (kept); the copy in $repo"
exit "$status"
