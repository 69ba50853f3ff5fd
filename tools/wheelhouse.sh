#!/usr/bin/env bash
# Build .whl/ (git-ignored): the wheels the GPU machine's image lacks for `vitlab run`, for its
# Python 3.12 on x86-64 Linux. tools/device-run.sh installs them there (no network on that machine).
#   bash tools/wheelhouse.sh          download what is missing, drop any wheel not pinned
#
# The image holds requirements/gpu-image.txt; the pins are requirements/gpu-wheels.txt (one list each).
set -euo pipefail
cd "$(dirname "$0")/.."

pins=$(sed "s/#.*//; s/[[:space:]]//g; /^$/d" requirements/gpu-wheels.txt)  # set -e stops here if it is unreadable
[ -n "$pins" ] || { echo "wheelhouse: requirements/gpu-wheels.txt pins nothing" >&2; exit 1; }
mapfile -t PINS <<<"$pins"
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
