#!/usr/bin/env bash
# Build .whl/ (git-ignored): the wheels the GPU machine's image lacks for `vitlab run`, for its
# Python 3.12 on x86-64 Linux. tools/device-run.sh installs them there (no network on that machine).
#   bash tools/wheelhouse.sh          download what is missing, drop any wheel not pinned below
#
# The image (the device tool's KINDS.md, nvidia-h200) already holds torch 2.11, transformers,
# timm, numpy, pandas, matplotlib, scikit-learn, scikit-image, onnx, onnxruntime, pyyaml, click,
# requests, tqdm, pygments, psutil, python-dateutil, attrs, packaging, typing-extensions, aiohttp.
# PINS are exactly what papermill, nbclient, nbformat, jupyter_client and ipykernel need beyond
# those (their Requires-Dist, followed down), plus torchao. One version of each: two stop the
# install. Every pin resolves on Python 3.12 (Requires-Python checked).
set -euo pipefail
cd "$(dirname "$0")/.."

PINS=(
    # papermill and the notebook machinery
    papermill==2.7.0
    nbclient==0.11.0
    nbformat==5.11.1
    jupyter_client==8.10.0
    jupyter_core==5.9.1
    ipykernel==7.4.0
    traitlets==5.16.1
    entrypoints==0.4.2
    tenacity==9.2.1
    fastjsonschema==2.22.3
    jsonschema==4.26.0
    jsonschema-specifications==2025.9.1
    referencing==0.37.0
    rpds-py==2026.9.1
    platformdirs==4.14.9
    pyzmq==27.3.0
    tornado==6.6.1
    # the kernel: ipykernel's and IPython's needs
    comm==0.2.3
    debugpy==1.8.22
    nest-asyncio2==1.7.4
    matplotlib-inline==0.2.2
    ipython==9.18.1
    ipython-pygments-lexers==1.1.1
    jedi==0.20.1
    parso==0.8.7
    pexpect==4.9.0
    ptyprocess==0.7.0
    prompt_toolkit==3.0.53
    wcwidth==0.9.4
    stack_data==0.6.3
    executing==2.3.0
    asttokens==3.0.2
    pure_eval==0.2.4
    # torchao 0.18.0: its C++ ops load with torch >= 2.11.0 (its __init__ checks that), the same
    # release as requirements/current.txt; chapters 03/04 use its PT2E and quantize_ paths.
    torchao==0.18.0
)
LIMIT_MIB=40

normalize() { tr 'A-Z_.' 'a-z--' <<<"$1"; }   # PEP 503: Foo_Bar.baz -> foo-bar-baz

mkdir -p .whl
# Drop wheels no pin names (an older pin's leftovers): two versions of one package stop the install.
wanted=" "
for pin in "${PINS[@]}"; do wanted+="$(normalize "${pin%%==*}")-${pin##*==} "; done
for wheel in .whl/*.whl; do
    [ -e "$wheel" ] || continue
    base=$(basename "$wheel")
    IFS=- read -r name version _ <<<"$base"
    if [[ "$wanted" != *" $(normalize "$name")-$version "* ]]; then
        echo "wheelhouse: removing $base (not pinned)"
        rm -f "$wheel"
    fi
done

# The local mirror's find-links and constraints are for this machine's own environments, not the image's.
PIP_FIND_LINKS= PIP_CONSTRAINT= python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any \
    -d .whl "${PINS[@]}" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }

count=$(ls .whl/*.whl | wc -l)
if [ "$count" -ne "${#PINS[@]}" ]; then
    echo "wheelhouse: $count wheels in .whl for ${#PINS[@]} pins" >&2
    exit 1
fi
bytes=$(cat .whl/*.whl | wc -c)
mib=$(( (bytes + 1048575) / 1048576 ))
echo "wheelhouse: $count wheels, $(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB in .whl/"
if [ "$mib" -gt "$LIMIT_MIB" ]; then
    echo "wheelhouse: over the $LIMIT_MIB MiB budget (the device call carries at most 64 MiB with the tree)" >&2
    exit 1
fi
