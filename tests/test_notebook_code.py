"""The chapters' own Python: a function a notebook defines at top level reads notebook globals when it runs, so a
top-level loop elsewhere must not rebind one of them. Chapter 03 once did: `for name, bf16 in ...` turned the
IPEX arguments that `ipex_bf16()` unpacks with `**bf16` into a bool, and a later row failed with a TypeError
that only the rendered page showed."""
import ast
import json
from pathlib import Path

import pytest

from vitlab.contract.chapters import notebooks

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = notebooks(ROOT / "notebooks")


def top_level(source: str) -> ast.Module:
    """A cell's code, IPython magics and shell lines dropped."""
    kept = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(kept))


def names_in(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def free_globals(fn: ast.FunctionDef) -> set[str]:
    """Names `fn` reads that it neither takes nor binds: at call time they are the notebook's globals."""
    params = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}  # its own and its inner functions'
    bound = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    inner = {n.name for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n is not fn}
    loaded = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loaded - params - bound - inner


def loop_targets(tree: ast.Module) -> set[str]:
    """Names that for loops bind in a cell's top-level code (not inside a def, class or lambda)."""
    out, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.For):
            out |= names_in(node.target)
        todo.extend(ast.iter_child_nodes(node))
    return out


def shadowed(cells: list[str]) -> dict[str, set[str]]:
    """{function: globals it reads that some top-level loop in the notebook rebinds}."""
    trees = [top_level(source) for source in cells]
    rebound = set().union(*map(loop_targets, trees))
    functions = (node for tree in trees for node in tree.body if isinstance(node, ast.FunctionDef))
    read = {fn.name: free_globals(fn) & rebound for fn in functions}
    return {name: names for name, names in read.items() if names}


def test_the_check_finds_chapter_03s_old_bug_and_passes_its_fix():
    define = "opts = dict(dtype=1)\n\ndef make(model):\n    return f(model, **opts)"
    assert shadowed([define, "for name, opts in (('a', False), ('b', True)):\n    pass"]) == {"make": {"opts"}}
    assert shadowed([define, "for name, mixed in (('a', False), ('b', True)):\n    pass"]) == {}
    assert shadowed([define, "def g():\n    for opts in range(3):\n        pass"]) == {}  # a local loop is fine


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_top_level_loop_rebinds_a_global_that_a_chapter_function_reads(path):
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert shadowed(cells) == {}, f"{path.name}: a loop rebinds what these functions read at call time"
