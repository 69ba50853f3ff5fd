import subprocess
import sys

import pytest


def vitlab(*args):
    return subprocess.run([sys.executable, "-m", "vitlab.cli", *args], capture_output=True, text=True, timeout=300)


def test_env_names_isa_and_versions():
    import torch
    result = vitlab("env")
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"ISA {torch.backends.cpu.get_cpu_capability()}" in result.stdout
    assert "torch      " in result.stdout and "ipex       " in result.stdout


@pytest.mark.parametrize("args, message", [
    (["env", "--backend", "tpu"], "unknown backend 'tpu'"),
    (["launch"], "invalid choice: 'launch'"),
    (["env", "--colour"], "unrecognized arguments: --colour"),
    ([], "required"),
])
def test_bad_arguments_give_one_line_and_exit_2(args, message):
    result = vitlab(*args)
    assert result.returncode == 2
    lines = [l for l in result.stderr.splitlines() if l.startswith("vitlab")]
    assert len(lines) == 1 and message in lines[0]
    assert "Traceback" not in result.stderr


def test_absent_backend_gives_one_line_and_exit_2():
    from vitlab.device import available_backends
    absent = next((b for b in ("xpu", "mps", "cuda") if b not in available_backends()), None)
    if absent is None:
        pytest.skip("every backend is present")
    result = vitlab("env", "--backend", absent)
    assert result.returncode == 2 and "not available on this machine" in result.stderr


@pytest.mark.parametrize("into", ["/proc/nope", "/dev/null/sub"])
def test_run_into_a_folder_that_cannot_be_made_gives_one_line_and_exit_2(into):
    result = vitlab("run", "--backend", "cpu", "--only", "01", "--into", into)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(f"vitlab run: cannot write into '{into}'") and "Traceback" not in result.stderr
