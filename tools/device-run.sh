#!/usr/bin/env bash
# Run every chapter on the lent GPU machine (the device tool's nvidia-h200), from the repository root:
#   run: command "bash tools/device-run.sh", carry [".whl"], timeout_s 560      (tools/device-fetch.md)
# That machine's image has torch 2.11, transformers, timm, ... but no papermill, nbclient, nbformat,
# jupyter_client, ipykernel or torchao, and no network: .whl/ (bash tools/wheelhouse.sh) carries them.
# vitlab imports from this checkout through PYTHONPATH; nothing is installed into the image's Python.
#
# Prints the machine once, then ONE line per chapter as it finishes (ok/FAILED/TIMEOUT, seconds, rows);
# papermill's per-cell progress goes to $OUT/run.log. A failing chapter does not stop the others.
# At the end $OUT holds, flat: NN_name.ipynb per chapter that ran (NN_name.FAILED.ipynb: the executed
# part of one that failed), <backend>.jsonl (the result rows) and run.log: at most 7 files.
#
# Time: the whole script ends within BUDGET_S seconds (default 540; run it with timeout_s 560).
# Each chapter runs under `timeout`, capped at what is left minus RESERVE_S (default 40) for each
# chapter after it, so one runaway chapter cannot eat the others' time; at the cap it gets SIGINT
# (papermill stops its kernel), 20 s later SIGKILL, and any kernel it left is ended by its PID.
#
# Settings (environment): BACKEND (cuda), PRESET (gpu), CHAPTERS ("01 02 ..."; default: 01 02 04 on a GPU, all on the CPU),
# OUT (a temp dir when unset), SITE (/tmp/site: where the wheels go), BUDGET_S, RESERVE_S,
# VITLAB_GIT_SHA (the commit to record in the rows: the machine gets the tree without .git).
set -uo pipefail
start=$SECONDS
cd "$(dirname "$0")/.." || exit 1
root=$PWD
backend=${BACKEND:-cuda}
preset=${PRESET:-gpu}
budget=${BUDGET_S:-540}
reserve=${RESERVE_S:-40}
finish=25   # seconds kept at the end: the last chapter's SIGKILL grace (20 s) and copying the files out
min_run=30  # a chapter is not started with less than this left
OUT=${OUT:-$(mktemp -d -t vitlab-device-out-XXXXXX)}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT"
work=$(mktemp -d -t vitlab-device-run-XXXXXX)
scratch=$work/book
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

# 2. The machine, once.
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total --format=csv 2>&1 | tee -a "$log"
else
    say "nvidia-smi: not on this machine"
fi
python3 - <<'PY' 2>&1 | tee -a "$log"
import importlib.metadata as md, platform, re, sys
from packaging.requirements import Requirement

def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None

import torch
gpu = f"{torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}" if torch.cuda.is_available() else "no CUDA device"
print(f"python {platform.python_version()} ({sys.executable}) | torch {torch.__version__} ({gpu})")
print("packages: " + ", ".join(f"{n} {version(n) or '-'}" for n in
      ("torchvision", "transformers", "timm", "numpy", "onnxruntime", "papermill", "ipykernel", "torchao")))
try:
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torchao  # it logs why it skips its C++ ops, if it does
    print(f"torchao {torchao.__version__} imports")
except Exception as error:
    print(f"torchao does not import: {error.__class__.__name__}: {str(error).splitlines()[0][:160]}")
from jupyter_client.kernelspec import KernelSpecManager
spec = KernelSpecManager().get_kernel_spec("python3")
print(f"kernel python3: {spec.argv[0]} ({spec.resource_dir})")
# The carried wheels' needs that the image must meet (their versions are not carried).
unmet = []
for dist in ("papermill", "nbclient", "nbformat", "jupyter_client", "ipykernel", "ipython", "jsonschema",
             "referencing", "ipython_pygments_lexers"):
    for line in md.requires(dist) or []:
        req = Requirement(line)
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue
        have = version(req.name)
        if have is None or (req.specifier and not req.specifier.contains(have, prereleases=True)):
            unmet.append(f"{dist} needs {req}, found {have or 'nothing'}")
print("requirements: " + ("; ".join(unmet) if unmet else "every carried package's needs are met"))
PY
say "device-run: backend $backend, preset $preset, budget ${budget}s (setup took $((SECONDS - start))s)"

# 3. The chapters, one vitlab run each.
# Default on a GPU: the chapters that measure it (01 training, 02 compile modes, 04 devices and DDP).
# 03 and 05 are CPU chapters: on a GPU run they would time the host's CPU, whose rows `vitlab run`
# does not keep as the GPU's, so the budget goes to the GPU chapters (CHAPTERS="01 02 04 03 05" adds them).
# On the CPU (the dry run) every chapter runs.
if [ -n "${CHAPTERS:-}" ]; then
    read -r -a chapters <<<"$CHAPTERS"
elif [ "$backend" != cpu ]; then
    chapters=(01 02 04)
else
    chapters=()
    for nb in notebooks/[0-9][0-9]_*.ipynb; do chapters+=("$(basename "$nb" .ipynb)"); done
fi
count_rows() { cat "$scratch"/results/*.jsonl "$scratch"/results/*/*.jsonl 2>/dev/null | grep -c . ; }
# End what a chapter left running (its kernel starts in a session of its own), found by the tag
# only its processes carry in their environment: by PID, nothing else.
end_tagged() {
    local tag=$1 pid proc
    for proc in /proc/[0-9]*; do
        pid=${proc#/proc/}
        [ "$pid" != "$$" ] || continue
        if { tr '\0' '\n' <"$proc/environ"; } 2>/dev/null | grep -qx "VITLAB_DEVICE_RUN_TAG=$tag"; then
            kill -KILL "$pid" 2>/dev/null && echo "device-run: ended pid $pid left by $tag" >>"$log"
        fi
    done
}
marker=$work/started; touch "$marker"
names=(); states=()
ok=0
for i in "${!chapters[@]}"; do
    name=${chapters[$i]}
    after=$(( ${#chapters[@]} - i - 1 ))
    left=$(( budget - finish - (SECONDS - start) ))
    if [ "$left" -lt "$min_run" ]; then
        say "$(printf '%-26s %-8s %5s s  %s' "$name" SKIPPED - "no time left (${left}s of the ${budget}s budget)")"
        continue
    fi
    cap=$(( left - reserve * after ))
    [ "$cap" -ge "$min_run" ] || cap=$min_run
    before=$(count_rows)
    tag=vitlab-device-run-$$-$i
    chapter_log=$work/$i.log
    t0=$SECONDS
    VITLAB_DEVICE_RUN_TAG=$tag timeout -s INT -k 20 "$cap" \
        python3 -m vitlab run --backend "$backend" --preset "$preset" --only "$name" --into "$scratch" \
        >"$chapter_log" 2>&1
    rc=$?
    seconds=$(( SECONDS - t0 ))
    end_tagged "$tag"
    { echo "===== $name (rc $rc, ${seconds}s, cap ${cap}s)"; cat "$chapter_log"; } >>"$log"
    rows=$(( $(count_rows) - before ))
    outcome=$(grep -E "^(ok|FAILED) +[0-9]" "$chapter_log" | tail -n 1)
    stem=$name  # the notebook's stem, as vitlab matches --only (02, 02_torch_compile or torch_compile)
    for nb in notebooks/[0-9][0-9]_*.ipynb; do
        s=$(basename "$nb" .ipynb)
        if [ "$name" = "$s" ] || [ "$name" = "${s:0:2}" ] || [ "$name" = "${s:3}" ]; then stem=$s; fi
    done
    names+=("$stem")
    if [ "$rc" -eq 0 ]; then
        state=ok; ok=$((ok + 1)); detail=""
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] || [ "$rc" -eq 130 ]; then
        state=TIMEOUT; detail="stopped at its ${cap}s cap"
    else
        state=FAILED
        detail=$(sed -E 's/^FAILED +[^ ]+ +[0-9]+ s +//' <<<"$outcome")
        [ -n "$detail" ] || detail="exit $rc: $(grep -v '^\s*$' "$chapter_log" | tail -n 1 | cut -c1-200)"
    fi
    states+=("$state")
    printf '%-26s %-8s %5d s  %4d rows  %s\n' "$stem" "$state" "$seconds" "$rows" "$detail" | tee -a "$log"
done

# 4. The files, flat in $OUT: executed notebooks (or the executed part of a failed one), rows, log.
for i in "${!names[@]}"; do
    stem=${names[$i]}
    page=$(find "$scratch" -name "$stem.ipynb" -newer "$marker" 2>/dev/null | head -n 1)
    if [ -n "$page" ] && [ "${states[$i]}" = ok ]; then
        cp "$page" "$OUT/$stem.ipynb"
    else
        partial=$(find "$root/_build/failed" -name "$stem.ipynb" -newer "$marker" 2>/dev/null | head -n 1)
        [ -z "$partial" ] || cp "$partial" "$OUT/$stem.FAILED.ipynb"
    fi
done
rows_total=0
for rows_file in "$scratch"/results/*.jsonl "$scratch"/results/*/*.jsonl; do
    [ -f "$rows_file" ] || continue
    cp "$rows_file" "$OUT/$(basename "$rows_file")"
    rows_total=$(( rows_total + $(grep -c . "$rows_file") ))
done
say "device-run: ${ok} of ${#chapters[@]} chapters ok, ${rows_total} rows, $((SECONDS - start))s in all; in $OUT:" \
    "$(cd "$OUT" && ls | tr '\n' ' ')"
for f in "$OUT"/*; do  # what comes back: at most 16 MiB a file
    if [ "$(stat -c %s "$f")" -gt $((16 * 1048576)) ]; then
        if [ "$f" = "$log" ]; then
            tail -c $((15 * 1048576)) "$log" >"$work/log.tail" && mv "$work/log.tail" "$log"
        else
            echo "device-run: $(basename "$f") is over 16 MiB and will not come back" >&2
        fi
    fi
done
rm -rf "$work"
[ "$ok" -eq "${#chapters[@]}" ]
