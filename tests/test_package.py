"""The package's shape: the folders are the floors, imports point down them, and the book side needs no torch."""
import ast
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "vitlab"


def _module(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path) -> set[str]:
    """The vitlab modules and the top-level outside packages that `path` imports anywhere (module level or inside
    functions): `from vitlab.contract import rows` counts as vitlab.contract.rows."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {n if n.startswith("vitlab") else n.split(".")[0] for n in found} - {_module(path)}


TORCH = ("torch", "torchvision", "timm", "transformers")
PACKAGES = ("vitlab", "vitlab.contract", "vitlab.book", "vitlab.workers")


def _floor(module: str) -> int:
    """The folders are the floors: contract (torch-free) < the lab library (top level) < workers < the book
    pipeline and the CLI."""
    if module.startswith("vitlab.contract"):
        return 0
    if module.startswith("vitlab.book") or module in ("vitlab.cli", "vitlab.__main__"):
        return 3
    return 2 if module.startswith("vitlab.workers") else 1


def _module_level_imports(path: Path) -> set[str]:
    """The top-level packages imported at module level (not inside a function)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
    return found


def test_imports_point_down_the_floors_and_the_ground_floor_never_imports_torch():
    assert {"vitlab.contract.rows", "vitlab.results", "vitlab.workers.ddp", "vitlab.book.runner"} <= set(MODULES)
    assert {_floor(m) for m in MODULES} == {0, 1, 2, 3}
    up, torch_below = [], []
    for module, path in MODULES.items():
        for target in _imports(path):
            if target.startswith("vitlab") and target not in PACKAGES and _floor(target) > _floor(module):
                up.append(f"{module} -> {target}")
            if module.startswith("vitlab.contract") and target in TORCH:
                torch_below.append(f"{module} imports {target}")
    assert up == []
    assert torch_below == []


def test_the_top_floor_imports_no_torch_at_module_level():
    top = [m for m in MODULES if _floor(m) == 3]
    assert {"vitlab.cli", "vitlab.book.runner", "vitlab.book.lane"} <= set(top)
    assert [f"{m} imports {t}" for m in top for t in _module_level_imports(MODULES[m]) if t in TORCH] == []


def test_no_import_cycle_in_vitlab():
    graph = {m: {t for t in _imports(p) if t in MODULES and t != "vitlab"} for m, p in MODULES.items()}
    assert graph["vitlab.data"] and "vitlab.models" not in graph["vitlab.data"]  # the old data <-> models cycle
    state = {}

    def visit(node, trail):
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", "import cycle: " + " -> ".join(trail + [node])
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            visit(target, trail + [node])
        state[node] = "done"

    for module in sorted(graph):
        visit(module, [])


BLOCK_TORCH = "import sys; sys.modules['torch'] = None  # any `import torch` now raises ImportError\n"


def test_the_book_side_imports_without_torch():
    code = BLOCK_TORCH + (
        "import vitlab, vitlab.cli, vitlab.book.report, vitlab.book.runner, vitlab.book.lane, vitlab.results\n"
        "rows = [{'backend': 'cpu', 'notebook': 'n', 'model': 'm', 'batch': 1, 'variant': 'eager',\n"
        "         'throughput': 2.0, 'baseline': True, 'run_id': 'r', 'time': '1'}]\n"
        "print(vitlab.results.with_speedups(rows)[0]['speedup'], vitlab.cli.build_parser().prog)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1.0", "vitlab"]


def test_the_environments_scripts_point_into_the_environment_itself():
    """pip writes each console script's shebang from the python it ran under: it must be the
    environment's real path, not a checkout's .venv link (which dies with that checkout)."""
    env = Path(sys.prefix).resolve()
    scripts = [p for p in (env / "bin").iterdir() if p.is_file() and not p.is_symlink()]
    shebangs = {p.name: p.read_bytes().split(b"\n", 1)[0].decode(errors="replace") for p in scripts}
    python_ones = {name: line for name, line in shebangs.items() if line.startswith("#!") and "python" in line
                   and not line.startswith("#!/usr/bin/env")}
    assert "pytest" in python_ones
    outside = {name: line for name, line in python_ones.items() if not line.startswith(f"#!{env}/bin/python")}
    assert not outside, f"scripts whose interpreter lies outside {env}: {outside}"


@pytest.fixture
def restored_process_state():
    """Warning filters, the loggers and Inductor settings quiet_known_messages changes: put back after the test."""
    import logging

    import torch._inductor.config as inductor_config
    # Saved and set back by hand: monkeypatch's undo deletes the entry from torch 2.14's config module
    # ("compile_threads does not exist" at the next compile), so a later test could not compile.
    names = ("compile_threads", "autotune_num_choices_displayed", "max_autotune_report_choices_stats")
    saved = {name: getattr(inductor_config, name) for name in names if hasattr(inductor_config, name)}
    levels = {name: logging.getLogger(name).level for name in ("torch.utils.cpp_extension", "torch.utils._pytree")}
    with warnings.catch_warnings():  # the filter list as it was, restored on exit
        yield inductor_config
    for name, value in saved.items():
        setattr(inductor_config, name, value)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_quiet_known_messages_mutes_what_it_says_and_leaves_inductors_compile_workers_alone(restored_process_state):
    import logging

    from vitlab import chapter
    inductor_config = restored_process_state
    workers = inductor_config.compile_threads
    line = chapter.quiet_known_messages()
    assert inductor_config.compile_threads == workers and f"compile_threads = {workers} " in line
    assert inductor_config.autotune_num_choices_displayed == 0
    assert logging.getLogger("torch.utils.cpp_extension").getEffectiveLevel() == logging.ERROR
    with warnings.catch_warnings(record=True) as caught:
        warnings.warn("IProgress not found. Please update jupyter and ipywidgets.")
        warnings.warn("something else")
    assert [str(w.message) for w in caught] == ["something else"]


_FAULTS = """
import resource, torch, vitlab
from vitlab import chapter

torch.manual_seed(0)
model = vitlab.build("vit-32px").train()
images, labels = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))

def faults():  # minor page faults over 10 training steps
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        model.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(images), labels).backward()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

faults()
plain = sum(faults() for _ in range(5))  # five windows each: one window's count varies several-fold run to run
line = chapter.steady_allocator()
faults()
print(plain, sum(faults() for _ in range(5)), line)
"""


@pytest.mark.timing
def test_steady_allocator_keeps_freed_buffers_mapped():
    import platform
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    done = subprocess.run([sys.executable, "-c", _FAULTS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    plain, steady, line = done.stdout.split(maxsplit=2)
    assert line.startswith("allocator: glibc keeps freed memory"), line
    # glibc's defaults hand the steps' buffers back and fault them in again; kept mapped, few return
    # (measured on a Zen 5, 30 steps: 3,900-33,000 faults with the defaults, 0-1,500 kept mapped)
    assert int(plain) > 2000 and int(steady) < int(plain) // 4, (plain, steady)
