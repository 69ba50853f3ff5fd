#!/usr/bin/env bash
# Run every chapter on the lent GPU machine (the device tool's nvidia-h200), from the repository root:
#   run: command "bash tools/device-run.sh", carry [".whl"], timeout_s 560      (tools/device-fetch.md)
# That machine's image has torch 2.11, transformers, timm, ... but no papermill, nbclient, nbformat,
# jupyter_client, ipykernel or torchao, and no network: .whl/ (bash tools/wheelhouse.sh) carries them.
# vitlab imports from this checkout through PYTHONPATH; nothing is installed into the image's Python.
#
# Prints the machine once, then ONE line per chapter as it finishes (ok/FAILED/TIMEOUT, seconds, rows). The
# wheels and the kernelspec are set up here; the chapters run through `python3 -m vitlab.book.lane run`, which caps
# each chapter so one runaway cannot eat the others' time (vitlab/book/lane.py says how). At the end $OUT holds, flat:
# NN_name.ipynb per chapter that ran (NN_name.FAILED.ipynb: the executed part of one that failed),
# <backend>.jsonl (the rows), run.log and lane.json (the outcomes): at most 7 files for the GPU chapters.
#
# Settings (environment): BACKEND (cuda), PRESET (gpu), CHAPTERS ("01 02 ..."; default: 01 02 04 on a GPU, all on
# the CPU), OUT (a temp dir when unset), SITE (/tmp/site: where the wheels go), BUDGET_S (540: the whole script,
# run it with timeout_s 560), RESERVE_S (40 s kept for each chapter still to come), VITLAB_GIT_SHA (the commit to
# record in the rows: the machine gets the tree without .git).
set -uo pipefail
start=$SECONDS
cd "$(dirname "$0")/.." || exit 1
root=$PWD
backend=${BACKEND:-cuda}
preset=${PRESET:-gpu}
budget=${BUDGET_S:-540}
reserve=${RESERVE_S:-40}
OUT=${OUT:-$(mktemp -d -t vitlab-device-out-XXXXXX)}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT"
work=$(mktemp -d -t vitlab-device-run-XXXXXX)
log=$OUT/run.log
: >"$log"
say() { echo "$*"; echo "$*" >>"$log"; }

# 1. The carried wheels: papermill, nbclient, nbformat, jupyter_client, ipykernel, their needs, torchao.
if compgen -G ".whl/*.whl" >/dev/null; then
    if ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$SITE" .whl/*.whl >>"$log" 2>&1; then
        say "device-run: installing .whl/*.whl into $SITE failed (see run.log):"
        tail -n 5 "$log"
        exit 1
    fi
else
    say "device-run: no .whl/*.whl here (run 'bash tools/wheelhouse.sh' and name .whl in carry); using what is installed"
fi
export PYTHONPATH=$root:$SITE${PYTHONPATH:+:$PYTHONPATH}
export HF_HUB_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 PYTHONUNBUFFERED=1 JUPYTER_PLATFORM_DIRS=1
export IPYTHONDIR=$work/ipython
# The kernel papermill starts ("python3") is this python3, with this environment (PYTHONPATH
# included): a kernelspec of our own, first on JUPYTER_PATH, so no other python3 spec on the machine wins.
python=$(python3 -c 'import sys; print(sys.executable)')
mkdir -p "$work/jupyter/kernels/python3"
printf '{"argv": ["%s", "-m", "ipykernel_launcher", "-f", "{connection_file}"],\n "display_name": "Python 3 (vitlab device run)", "language": "python"}\n' \
    "$python" >"$work/jupyter/kernels/python3/kernel.json"
export JUPYTER_PATH=$work/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}

# 2. The machine, once; 3. the chapters, each under a cap within the budget, files flat in $OUT (vitlab.book.lane).
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total --format=csv 2>&1 | tee -a "$log"
fi
python3 -m vitlab.book.lane machine 2>&1 | tee -a "$log"
chapters=()
[ -z "${CHAPTERS:-}" ] || read -r -a chapters <<<"$CHAPTERS"
python3 -m vitlab.book.lane run --out "$OUT" --backend "$backend" --preset "$preset" \
    --budget "$(( budget - (SECONDS - start) ))" --reserve "$reserve" ${chapters[@]:+--chapters "${chapters[@]}"}
status=$?
rm -rf "$work"
exit "$status"
