"""The GPU lane's plumbing (tools/wheelhouse.sh, device-run.sh, device-import.sh, `python -m vitlab`).

Fast and offline: nothing here downloads a wheel or runs a notebook (tools/device-dry-run.sh does that).
"""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
SCRIPTS = ["wheelhouse.sh", "device-run.sh", "device-dry-run.sh", "device-import.sh"]


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> list[str]:
    text = (TOOLS / "wheelhouse.sh").read_text()
    block = re.search(r"^PINS=\((.*?)^\)", text, re.S | re.M).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_python_m_vitlab_rejects_an_unknown_preset_in_one_line():
    result = subprocess.run([sys.executable, "-m", "vitlab", "run", "--preset", "nope"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == ["vitlab run: unknown preset 'nope': choose one of quick, full, gpu"]


def test_gpu_is_a_preset_and_the_help_says_what_it_is_for():
    from vitlab.chapter import PRESET_NAMES
    from vitlab.cli import build_parser
    assert PRESET_NAMES == ("quick", "full", "gpu")
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    preset = next(a for a in run._actions if "--preset" in a.option_strings)
    assert "gpu" in preset.help and "H200" in preset.help


@pytest.mark.parametrize("script", SCRIPTS)
def test_tool_scripts_parse(script):
    result = subprocess.run(["bash", "-n", str(TOOLS / script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_wheelhouse_pins_one_version_of_each_package_the_image_lacks():
    pinned = pins()
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][A-Za-z0-9.+-]*", pin) for pin in pinned), pinned
    names = [normalize(pin.split("==")[0]) for pin in pinned]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert {"papermill", "nbclient", "nbformat", "jupyter-client", "ipykernel", "torchao"} <= set(names)
    # already in the image (a second copy would shadow its version): never carried
    assert not set(names) & {"torch", "torchvision", "transformers", "timm", "numpy", "pyyaml", "requests",
                             "click", "tqdm", "pygments", "psutil", "packaging", "python-dateutil"}


def test_wheelhouse_folder_is_git_ignored():
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    result = subprocess.run(["git", "check-ignore", "-q", ".whl/papermill-2.7.0-py3-none-any.whl"], cwd=ROOT)
    assert result.returncode == 0


def test_device_run_keeps_to_its_budget_and_returns_at_most_eight_files():
    text = (TOOLS / "device-run.sh").read_text()
    assert "set -uo pipefail" in text
    assert re.search(r"timeout -s INT -k \d+ \"\$cap\"", text)
    assert "--only \"$name\"" in text and "--into \"$scratch\"" in text
    assert int(re.search(r"budget=\$\{BUDGET_S:-(\d+)\}", text).group(1)) <= 540


def test_device_import_puts_pages_and_rows_into_the_current_stack(tmp_path):
    # A minimal checkout: the script, the torch-free layout module, the reference pin.
    (tmp_path / "tools").mkdir()
    shutil.copy(TOOLS / "device-import.sh", tmp_path / "tools")
    (tmp_path / "vitlab").mkdir()
    for name in ("__init__.py", "layout.py"):
        shutil.copy(ROOT / "vitlab" / name, tmp_path / "vitlab")
    (tmp_path / "requirements").mkdir()
    shutil.copy(ROOT / "requirements" / "reference.txt", tmp_path / "requirements")
    returned = tmp_path / "returned"
    returned.mkdir()
    row = {"notebook": "01_port_to_xpu", "backend": "cuda", "versions": {"torch": "2.11.0+cu130"},
           "git_sha": "unknown", "run_id": "abc123", "variant": "fp32"}
    (returned / "cuda.jsonl").write_text(json.dumps(row) + "\n")
    (returned / "01_port_to_xpu.ipynb").write_text("{}")
    (returned / "02_torch_compile.FAILED.ipynb").write_text("{}")
    (returned / "run.log").write_text("log\n")

    def run():
        return subprocess.run(["bash", str(tmp_path / "tools" / "device-import.sh"), str(returned)],
                              capture_output=True, text=True, timeout=120)

    first = run()
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "book" / "current" / "cuda" / "01_port_to_xpu.ipynb").exists()
    assert not list((tmp_path / "book" / "current" / "cuda").glob("02_*"))
    rows_file = tmp_path / "book" / "results" / "current" / "cuda.jsonl"
    assert [json.loads(line)["run_id"] for line in rows_file.read_text().splitlines()] == ["abc123"]
    assert "current stack" in first.stdout and "FAILED" in first.stdout
    second = run()  # the same files again: no row twice
    assert second.returncode == 0, second.stderr
    assert len(rows_file.read_text().splitlines()) == 1


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem)
def test_every_chapter_has_a_gpu_preset(notebook):
    # the chapter's settings cell (the one that defines PRESETS), run with preset="gpu", must resolve
    import json
    cells = ["".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    settings_cell = next(source for source in cells if "PRESETS = {" in source)
    scope = {"preset": "gpu", "backend": "cuda"}
    exec(compile(settings_cell, f"{notebook.stem}: settings cell", "exec"), scope)
    assert "gpu" in scope["PRESETS"] and scope["PRESETS"]["gpu"]
