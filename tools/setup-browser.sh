#!/usr/bin/env bash
# Headless Chromium and its driver from Debian's packages, for the book's browser test.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    echo "setup-browser: need root (or sudo) to apt-get install chromium chromium-driver" >&2
    exit 1
fi
sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "setup-browser: installing chromium and chromium-driver (Debian packages)"
sudo_if_needed apt-get update -qq
DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq chromium chromium-driver >/dev/null
