import subprocess
import sys
import textwrap

import torch

from vitlab import ipex


def test_version_mismatch_is_refused_before_import():
    why = ipex.check({"ipex": "2.8.0", "torch": "2.9.1", "transformers": "4.57.6"})
    assert why == "intel-extension-for-pytorch 2.8.0 needs torch 2.8.*, found torch 2.9.1"


def test_transformers_5_is_refused():
    why = ipex.check({"ipex": "2.8.0+cpu", "torch": "2.8.0", "transformers": "5.2.0"})
    assert "transformers 5.2.0" in why and "<5" in why


def test_missing_ipex_is_explained():
    assert "not installed" in ipex.check({"ipex": None, "torch": "2.14.1", "transformers": "5.0"})


def test_disable_switch_wins(monkeypatch):
    monkeypatch.setenv("VITLAB_DISABLE_IPEX", "1")
    assert ipex.check({"ipex": "2.8.0", "torch": "2.8.0", "transformers": "4.57.6"}) == "disabled by VITLAB_DISABLE_IPEX=1"


def test_matching_versions_pass(monkeypatch):
    monkeypatch.delenv("VITLAB_DISABLE_IPEX", raising=False)
    assert ipex.check({"ipex": "2.8.0+cpu", "torch": "2.8.0+cu128", "transformers": "4.57.6"}) is None


def _run(code: str, pythonpath: str | None = None) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": pythonpath} if pythonpath else {}
    import os
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


def test_an_ipex_that_calls_os_exit_cannot_kill_the_process(tmp_path):
    # A stand-in with IPEX's real failure mode: versions match, then os._exit(127) at import.
    major_minor = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    package = tmp_path / "intel_extension_for_pytorch"
    package.mkdir()
    (package / "__init__.py").write_text("import os\nos._exit(127)\n")
    info = tmp_path / f"intel_extension_for_pytorch-{major_minor}.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: intel-extension-for-pytorch\n"
                                   f"Version: {major_minor}.0\n")
    result = _run("""
        from vitlab import ipex
        print(ipex.status())
        print("still alive", ipex.available())
    """, pythonpath=str(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("IPEX unavailable:")
    assert lines[-1] == "still alive False"


def test_vitlab_imports_and_runs_without_ipex():
    result = _run("""
        import sys
        sys.modules["intel_extension_for_pytorch"] = None  # as if it were not installed
        import torch, vitlab
        from vitlab import ipex, optimize
        print(ipex.status())
        applied = optimize.ipex_optimize(torch.nn.Linear(4, 4))
        print(applied.engaged, applied.reason == ipex.status())
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("IPEX unavailable:")
    assert lines[1] == "False True"


def test_an_ipex_variant_is_built_where_ipex_loaded_and_a_skipped_one_that_says_why_elsewhere(monkeypatch):
    made = []
    monkeypatch.setattr(ipex, "_load", lambda: (None, "IPEX unavailable: test"))
    skipped = ipex.variant("IPEX int8", lambda: made.append(1), torch.ones(1), precision="int8")
    assert not skipped.live and skipped.skipped == "IPEX unavailable: test" and made == []
    assert skipped.fields["precision"] == "int8"
    monkeypatch.setattr(ipex, "_load", lambda: (object(), "IPEX 2.8.0 loaded"))
    built = ipex.variant("IPEX fp32", lambda: (lambda x: x * 2), torch.ones(1), precision="fp32")
    assert built.live and built.name == "IPEX fp32" and torch.equal(built.fn(torch.ones(1)), torch.full((1,), 2.0))


def test_bf16_layer_norm_inference_with_ipex_imported_runs_or_says_it_is_ipex():
    """Once IPEX is imported, a bf16 input to an fp32 LayerNorm under no_grad (autocast's inference) goes to oneDNN:
    on a CPU without its bf16 kernels (AVX2-only) that raises, and the failure says why. In a subprocess: IPEX's
    kernels must not leak into the other tests of this process."""
    import pytest
    code = textwrap.dedent("""
        import torch
        from vitlab import ipex
        if not ipex.available():
            print("SKIP", ipex.status()); raise SystemExit
        try:
            with torch.no_grad():
                out = torch.nn.LayerNorm(16)(torch.randn(4, 16).bfloat16())
        except RuntimeError as error:
            print(ipex.bf16_prepack(), ipex.failure(error))
        else:
            print(ipex.bf16_prepack(), "ran", tuple(out.shape))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    if last.startswith("SKIP"):
        pytest.skip(last)
    prepack, said = last.split(" ", 1)
    if said.startswith("ran"):
        assert prepack == "True" and said == "ran (4, 16)"
    else:
        assert prepack == "False" and said.endswith("IPEX's bf16 needs AVX-512)"), said
