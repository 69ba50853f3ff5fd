"""The page budget (vitlab.book.pages): each rule catches its breach on a small notebook, and every chapter page,
executed or stored, is within the budget that notebooks/README.md states."""
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from vitlab.book import pages
from vitlab.book.pages import BUDGET

ROOT = Path(__file__).resolve().parent.parent
GLUED = "Found: {glue:text}`a` {glue:text}`b` {glue}`c` {glue:text}`d` {glue:text}`e`."


def code(lines: int = 5, tags=(), outputs=(), width: int = 20, prefix: str = "x") -> nbformat.NotebookNode:
    """A code cell of `lines` lines, each `width` characters wide."""
    source = "\n".join(f"{prefix}{i}".ljust(width, "_") for i in range(lines))
    return new_code_cell(source, metadata={"tags": list(tags)}, outputs=list(outputs))


def printed(text: str, name: str = "stdout"):
    return new_output("stream", name=name, text=text)


def shown(data: dict, kind: str = "display_data"):
    return new_output(kind, data=data, **({"execution_count": 1} if kind == "execute_result" else {}))


def good_cells() -> list:
    """A page within every rule: 40 visible code lines in cells of 10, two defs, one table, one figure, five glue refs."""
    return [new_markdown_cell("# A chapter\n\n" + GLUED),
            code(10, outputs=[printed("one short line\n")]),
            new_code_cell("def f(x):\n    return x\n\n\nclass A:\n    pass\n" + "y = 1\n" * 6),
            code(10, outputs=[shown({"text/markdown": "| a | b |\n|---|---|\n| 1 | 2 |", "text/plain": "t"})]),
            code(10, outputs=[shown({"image/png": "iVBOR", "text/plain": "<Figure>"})])]


def page_of(*extra, cells=None) -> pages.Page:
    return pages.measure(new_notebook(cells=(good_cells() if cells is None else cells) + list(extra)))


def test_a_good_page_is_within_the_budget_and_its_counts_are_what_a_reader_sees():
    page = page_of()
    assert pages.breaches(page) == []
    assert (page.code_lines, page.longest_cell, len(page.defs)) == (40, 10, 2)
    assert (page.glue_refs, page.figures, page.tables, page.empty_outputs) == (5, 1, 1, [])


def test_more_than_180_visible_code_lines_is_a_breach_and_removed_cells_do_not_count():
    over = page_of(*[code(14) for _ in range(11)])  # 40 + 154 = 194
    assert over.code_lines == 194
    assert pages.breaches(over) == ["194 visible code lines, more than 180"]
    assert pages.breaches(page_of(*[code(14, tags=["remove-cell"]) for _ in range(11)])) == []
    assert pages.breaches(page_of(*[code(14, tags=["remove-input"]) for _ in range(11)])) == []


def test_folded_input_is_not_on_the_page_until_opened():
    folded = page_of(*[code(14, tags=["hide-input"]) for _ in range(11)])
    assert folded.code_lines == 40 and pages.breaches(folded) == []


def test_fewer_than_30_visible_code_lines_is_a_breach():
    cells = good_cells()
    for cell in cells[1:]:
        cell.metadata["tags"] = ["remove-input"]
    [line] = pages.breaches(page_of(code(15), code(14), cells=cells))
    assert line.startswith("29 visible code lines, fewer than 30")


def test_a_visible_cell_over_15_lines_is_a_breach_blank_lines_aside():
    assert pages.breaches(page_of(code(15))) == []
    assert pages.breaches(page_of(new_code_cell("a = 1\n\n\n" * 15))) == []
    assert pages.breaches(page_of(code(16))) == ["visible cells over 15 lines: cell 5 (16)"]
    assert pages.breaches(page_of(code(16, tags=["remove-cell"]))) == []


def test_more_than_4_visible_defs_or_classes_is_a_breach():
    three = new_code_cell("def g():\n    pass\nasync def h():\n    pass\n    class Inner:\n        pass\n")
    [line] = pages.breaches(page_of(three))
    assert line.startswith("5 visible def/class, more than 4: cell 2 (def f(x):, class A:), ")
    assert line.endswith("cell 5 (def g():, async def h():, class Inner:)")
    assert pages.breaches(page_of(code(2), new_code_cell("define = 1\nclassic = 2"))) == []
    assert pages.breaches(page_of(new_code_cell(three.source, metadata={"tags": ["remove-input"]}))) == []


def test_a_visible_code_line_over_88_characters_is_a_breach():
    assert pages.breaches(page_of(code(2, width=88))) == []
    assert pages.breaches(page_of(code(2, width=89))) == ["2 visible code lines over 88 characters: cell 5 (89, 89)"]
    assert pages.breaches(page_of(new_code_cell("x = 1" + " " * 100))) == []  # trailing blanks show nothing
    assert pages.breaches(page_of(code(2, width=89, tags=["remove-input"]))) == []
    assert pages.breaches(page_of(code(2, width=89, tags=["hide-input"]))) == []


def test_a_printed_line_over_160_characters_is_a_breach_and_stderr_is_not_on_the_page():
    assert pages.breaches(page_of(code(1, outputs=[printed("x" * 160 + "\n")]))) == []
    long = "short\n" + "y" * 161 + "\n"
    assert pages.breaches(page_of(code(1, outputs=[printed(long)]))) == [
        "1 printed lines over 160 characters: cell 5 (161)"]
    assert len(pages.breaches(page_of(code(1, outputs=[shown({"text/plain": "z" * 200}, "execute_result")])))) == 1
    assert pages.breaches(page_of(code(1, outputs=[printed(long, name="stderr")]))) == []
    assert pages.breaches(page_of(code(1, tags=["remove-output"], outputs=[printed(long)]))) == []
    assert pages.breaches(page_of(code(1, outputs=[printed("\x1b[31m" + "x" * 158 + "\x1b[0m\n")]))) == []


def test_an_output_box_that_shows_nothing_is_a_breach_and_glue_records_are_not_boxes():
    for empty in (printed("\n  \n"), shown({"text/plain": ""}), shown({"text/html": "<div> </div>", "text/plain": ""}),
                  shown({"application/vnd.jupyter.widget-view+json": {"model_id": "m"}, "text/plain": "HBox()"})):
        [line] = pages.breaches(page_of(code(1, outputs=[empty])))
        assert line == "1 empty output boxes: cell 5 (empty)"
    glue = shown({"application/papermill.record/text/plain": "'1.5'"})
    assert pages.breaches(page_of(code(1, outputs=[glue]))) == []
    assert pages.breaches(page_of(code(1, tags=["remove-output"], outputs=[printed("\n")]))) == []


def test_fewer_than_5_glue_references_is_a_breach_and_removed_prose_does_not_count():
    cells = good_cells()
    cells[0] = new_markdown_cell("Found: {glue:text}`a` and {glue}`b`, ```{glue:figure} c\n```")
    assert page_of(cells=cells).glue_refs == 3
    assert pages.breaches(page_of(cells=cells)) == [
        "3 glue references, fewer than 5: the prose's numbers must come from the run"]
    cells[0] = new_markdown_cell(GLUED, metadata={"tags": ["remove-cell"]})
    assert page_of(cells=cells).glue_refs == 0


def test_figures_and_tables_are_counted_and_a_caption_is_not_a_table():
    page = page_of(code(1, outputs=[shown({"text/markdown": "**vit-32px**, 450 images", "text/plain": "c"}),
                                    shown({"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "t"}),
                                    shown({"image/svg+xml": "<svg/>", "text/plain": "<Figure>"})]))
    assert (page.figures, page.tables, page.empty_outputs) == (2, 2, [])


def test_the_budget_is_the_one_notebooks_readme_states():
    readme = (ROOT / "notebooks" / "README.md").read_text()
    for line in (f"≤ {BUDGET.max_code_lines} visible code lines", f"≥ {BUDGET.min_code_lines} visible code lines",
                 f"no visible cell over {BUDGET.max_cell_lines} lines", f"≤ {BUDGET.max_defs} visible def/class",
                 f"no visible code line over {BUDGET.code_width} characters",
                 f"no printed line over {BUDGET.print_width} characters", "no empty output box",
                 f"≥ {BUDGET.min_glue_refs} glue references"):
        assert line in readme, line
    assert BUDGET.max_empty_outputs == 0


CHAPTERS = sorted(p.relative_to(ROOT).as_posix() for folder in ("book/cpu", "book/current/cpu", "notebooks")
                  for p in (ROOT / folder).glob("[0-9][0-9]_*.ipynb"))


def test_every_chapter_has_pages_to_check():
    assert len(CHAPTERS) >= 15 and {p.split("/")[0] for p in CHAPTERS} == {"book", "notebooks"}


@pytest.mark.parametrize("notebook", CHAPTERS)
def test_every_committed_page_and_stored_notebook_is_within_the_budget(notebook):
    found = pages.breaches(pages.measure(ROOT / notebook, name=notebook))
    assert not found, "\n".join(found)
