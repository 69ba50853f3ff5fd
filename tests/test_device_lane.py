"""The GPU lane's plumbing: the image's and the wheelhouse's package lists (requirements/gpu-*.txt), `python -m vitlab` (vitlab.book.lane: tests/test_lane.py).

Fast and offline: nothing here downloads a wheel or runs a notebook (tools/device-dry-run.sh does that).
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def listed(name: str) -> list[str]:
    """The requirements in requirements/NAME, without comments (what tools/wheelhouse.sh and device-dry-run.sh read)."""
    lines = (ROOT / "requirements" / name).read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def test_python_m_vitlab_rejects_an_unknown_preset_in_one_line():
    result = subprocess.run([sys.executable, "-m", "vitlab", "run", "--preset", "nope"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == ["vitlab run: unknown preset 'nope': choose one of quick, full, gpu"]


def test_vitlab_run_takes_the_gpu_preset(capsys):
    from vitlab import cli
    assert cli.main(["run", "--backend", "cpu", "--preset", "gpu", "--only", "nope"]) == 2  # past the preset check
    assert capsys.readouterr().err.startswith("vitlab run: unknown notebook 'nope': choose from ")


def test_wheelhouse_pins_one_version_of_each_package_the_image_lacks():
    pinned = listed("gpu-wheels.txt")
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][A-Za-z0-9.+-]*", pin) for pin in pinned), pinned
    names = [normalize(pin.split("==")[0]) for pin in pinned]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert {"papermill", "nbclient", "nbformat", "jupyter-client", "ipykernel", "torchao"} <= set(names)
    # already in the image (a second copy would shadow its version): never carried
    image = {normalize(re.split(r"[=<>]", line)[0]) for line in listed("gpu-image.txt")}
    assert {"torch", "transformers", "timm", "numpy"} <= image
    assert not set(names) & image, sorted(set(names) & image)


def test_wheelhouse_folder_is_git_ignored():
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    result = subprocess.run(["git", "check-ignore", "-q", ".whl/papermill-2.7.0-py3-none-any.whl"], cwd=ROOT)
    assert result.returncode == 0
