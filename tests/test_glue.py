"""The committed book says what its committed rows give: every glued finding is recomputed from them.

A chapter glues each finding it states (vitlab.contract.findings.glue_values: `<key>_verdict`, `<key>_ratio`, ..., and
`<key>_rows`, which rows it compared). Here each executed page's `<key>_rows` is looked up among the rows of that
page's latest run, the finding recomputed, and the glued words compared with it. A page without glue passes, but a
page whose Markdown references a glue name must glue it.
"""
import ast
import json
import re

import nbformat
import pytest

from vitlab import chapter, results
from vitlab.contract import findings, layout

BOOK = layout.ROOT / "book"
PAGES = [(stack, backend, page) for stack in layout.STACKS for backend in layout.BACKENDS
         for page in sorted(layout.pages_dir(backend, stack, BOOK).glob("[0-9][0-9]_*.ipynb"))]
GLUE_ROLE = re.compile(r"\{glue(?::[\w-]+)?\}`([^`]+)`")                       # {glue:text}`name:.2f`
GLUE_DIRECTIVE = re.compile(r"^\s*(?:`{3,}|:{3,})\{glue(?::[\w-]+)?\}\s+(\S+)", re.M)  # ```{glue:figure} name


def glued(notebook) -> dict:
    """Every myst-nb glue output of an executed notebook: name -> value (read back from its text/plain repr)."""
    values = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            scrap = output.get("metadata", {}).get("scrapbook")
            if output.get("output_type") != "display_data" or not scrap:
                continue
            text = output.get("data", {}).get(scrap.get("mime_prefix", "") + "text/plain")
            try:
                values[scrap["name"]] = ast.literal_eval(text)
            except (ValueError, SyntaxError):  # not a literal's repr: compare the text
                values[scrap["name"]] = text
    return values


def referenced(notebook) -> set[str]:
    """The glue names the notebook's Markdown pastes (roles and directives; a format spec after ':' dropped)."""
    names = set()
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            names |= {ref.split(":")[0] for ref in GLUE_ROLE.findall(cell.source) if "::" not in ref}
            names |= set(GLUE_DIRECTIVE.findall(cell.source))
    return names


def glue_problems(notebook, rows: list[dict]) -> list[str]:
    """What the page's glue gets wrong against `rows` (its run's rows): names pasted but not glued, and each glued
    finding's values that differ from the finding recomputed from the rows it names."""
    values = glued(notebook)
    problems = [f"{name}: pasted in the text but never glued" for name in sorted(referenced(notebook) - set(values))]
    for name in sorted(n for n in values if n.endswith("_rows")):
        key, which = name[: -len("_rows")], json.loads(values[name])
        picked = {}
        for role in ("row", "baseline", "control"):
            if role == "control" and not which.get(role):
                continue
            matches = [r for r in rows if findings.row_id(r) == which[role]]
            if len(matches) == 1:
                picked[role] = matches[0]
            else:
                problems.append(f"{name}: {len(matches)} rows of the run match its {role} {which[role]}")
        problems += [f"{key}{suffix}: not glued beside {name}" for suffix in ("_verdict", "_ratio")
                     if f"{key}{suffix}" not in values]
        if {"row", "baseline"} <= set(picked):
            finding = findings.compare(picked["row"], picked["baseline"], picked.get("control"))
            problems += [f"{glue_name}: glued {values[glue_name]!r}, the rows give {value!r}"
                         for glue_name, value in findings.glue_values(key, finding).items()
                         if glue_name in values and values[glue_name] != value]
    return problems


def _run_rows(backend: str, stack: str, notebook: str, book=BOOK) -> list[dict]:
    path = layout.rows_file(backend, stack, book)
    every = results.load_file(path) if path.exists() else []
    return [r for r in results.latest_runs(every) if r.get("notebook") == notebook]


@pytest.mark.parametrize("stack,backend,page", PAGES, ids=[f"{s}-{b}-{p.stem}" for s, b, p in PAGES])
def test_every_glued_finding_is_what_the_rows_of_that_run_give(stack, backend, page):
    notebook = nbformat.read(page, as_version=4)
    assert glue_problems(notebook, _run_rows(backend, stack, page.stem)) == []


@pytest.mark.parametrize("stack", layout.STACKS)
def test_the_committed_rows_keep_the_contract(stack):
    """Every comparison group has exactly one baseline; no skipped or failed row carries a timing."""
    rows = results.latest_runs(results.load(layout.rows_dir(stack, BOOK)))
    assert results.row_problems(rows) == []
    assert [r.get("variant") for r in rows if "baseline" not in r or "sweep" not in r] == []


# --- the check itself can fail: a synthetic executed page, glued through the chapters' own door ------------------

COMMON = {"backend": "cpu", "notebook": "02_toy", "model": "vit-ti16", "batch": 1, "group": None, "sweep": False,
          "run_id": "r", "time": "1"}


def _page(tmp_path, monkeypatch, rows: list[dict], markdown: str):
    """An executed notebook whose code cell glued the finding of rows[1] against rows[0] as `compile`, the way a
    chapter does it (Run.glue_finding -> myst-nb glue), and whose Markdown is `markdown`."""
    import myst_nb.ext.glue as myst_glue
    outputs = []
    monkeypatch.setattr(myst_glue, "ipy_display", lambda data, raw, metadata: outputs.append(
        nbformat.v4.new_output("display_data", data=data, metadata=metadata)))
    run = chapter.Run("02_toy", "quick", {}, None, {}, None)
    run.glue_finding("compile", findings.compare(rows[1], rows[0]))
    code = nbformat.v4.new_code_cell("run.glue_finding('compile', findings.compare(default, eager))")
    code.outputs = outputs
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(markdown), code])
    nbformat.write(notebook, tmp_path / "02_toy.ipynb")  # through the file format and back, as the book stores it
    return nbformat.read(tmp_path / "02_toy.ipynb", as_version=4)


def test_the_glue_check_passes_a_page_that_says_what_its_rows_give_and_fails_one_that_does_not(tmp_path, monkeypatch):
    eager = {**COMMON, "variant": "eager", "baseline": True, "median_ms": 10.0, "throughput": 100.0,
             "round_medians_ms": [10.0, 10.1, 9.9, 10.0, 10.1, 9.9]}
    default = {**COMMON, "variant": "default", "median_ms": 8.0, "throughput": 125.0,
               "round_medians_ms": [8.0, 8.1, 7.9, 8.1, 8.0, 7.9]}
    text = "Compiled, the model ran {glue:text}`compile_ratio`× eager: {glue:text}`compile_verdict`."
    page = _page(tmp_path, monkeypatch, [eager, default], text)
    assert glued(page)["compile_verdict"] == "faster" and referenced(page) == {"compile_ratio", "compile_verdict"}
    assert glue_problems(page, [eager, default]) == []
    # the committed rows say otherwise (a re-run whose rows were committed without its page): caught
    slower = {**default, "median_ms": 12.0, "throughput": 83.3, "round_medians_ms": [12.0] * 6}
    problems = glue_problems(page, [eager, slower])
    assert "compile_ratio: glued '1.25', the rows give '0.83'" in problems
    assert "compile_verdict: glued 'faster', the rows give 'slower'" in problems
    # the rows it names are not in the run
    assert glue_problems(page, [eager]) == ["compile_rows: 0 rows of the run match its row "
                                            "{'model': 'vit-ti16', 'variant': 'default', 'batch': 1, 'group': None, "
                                            "'sweep': False}"]
    # the text pastes a name nothing glued
    page.cells[0].source += " The band was {glue:text}`compile_noise:.0%`; {glue:text}`other::x` is another page's."
    assert glue_problems(page, [eager, default]) == ["compile_noise: pasted in the text but never glued"]


def test_a_page_without_glue_passes_only_if_its_text_pastes_nothing(tmp_path):
    page = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Old page\n\nNo glue here.")])
    assert glue_problems(page, []) == []
    page.cells.append(nbformat.v4.new_markdown_cell("```{glue:figure} speed_plot\n:name: fig\n```"))
    assert glue_problems(page, []) == ["speed_plot: pasted in the text but never glued"]
