"""A chapter page as a reader sees it in Jupyter Book, and the budget it is held to. Torch-free, standard library only.

`measure(notebook)` reads one executed notebook (a path, or a dict such as nbformat's) the way Jupyter Book shows it:

- a code cell's source is visible unless tagged `remove-cell` or `remove-input`, or folded behind a toggle by
  `hide-input` / `hide-cell` (harness code a reader may open; the budget counts what the page shows unopened);
- its outputs are shown unless tagged `remove-cell` or `remove-output`, or folded by `hide-output` / `hide-cell`;
  stderr is dropped (`nb_output_stderr: remove` in _config.yml), and glue's records (papermill.record data only)
  are never drawn;
- a markdown cell tagged `remove-cell` is not on the page; the others' glue roles and directives are counted.

Code lines are the non-blank lines of the visible cells. `breaches(page)` lists, one readable line each, where a
page breaks `BUDGET` (notebooks/README.md states the same budget for authors).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

REMOVE_INPUT = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
REMOVE_OUTPUT = {"remove-cell", "remove-output", "hide-output", "hide-cell"}
GLUE_ONLY = "application/papermill.record/"  # myst-nb's glue: a record for {glue} roles, never drawn itself
IMAGES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
DEF = re.compile(r"\s*(async\s+def|def|class)\s")
GLUE_REF = re.compile(r"\{glue(?::\w*)?\}(?:`|\s)")  # {glue}`k`, {glue:text}`k`, ```{glue:figure} k


@dataclass(frozen=True)
class Budget:
    """The limits a chapter page is held to (DESIGN: "The page"). Widths are in characters."""
    max_code_lines: int = 180   # visible code lines on the page
    min_code_lines: int = 30    # the recipes stay on the page: hiding all code is not the point
    max_cell_lines: int = 15    # lines in any one visible cell
    max_defs: int = 4           # visible def/class statements
    code_width: int = 88        # the code box's width
    print_width: int = 160      # a printed (stream or plain-text) output line
    max_empty_outputs: int = 0  # output boxes that show nothing
    min_glue_refs: int = 5      # glue references in the prose: its numbers come from the run


BUDGET = Budget()


@dataclass
class Page:
    """What a reader meets on one page. Lists hold (cell index, number) pairs, so a breach can say where."""
    name: str
    code_lines: int = 0
    cell_lines: list[tuple[int, int]] = field(default_factory=list)    # (cell, lines) per visible code cell
    defs: list[tuple[int, str]] = field(default_factory=list)          # (cell, the def/class line)
    wide_code: list[tuple[int, int]] = field(default_factory=list)     # (cell, width) of code lines over the width
    long_prints: list[tuple[int, int]] = field(default_factory=list)   # (cell, width) of printed lines over it
    empty_outputs: list[int] = field(default_factory=list)             # cell of each output box that shows nothing
    glue_refs: int = 0
    figures: int = 0
    tables: int = 0

    @property
    def longest_cell(self) -> int:
        return max((n for _, n in self.cell_lines), default=0)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def _lines(text: str) -> list[str]:
    """Printed text's lines as a terminal draws them: escape codes dropped, a carriage return restarts its line."""
    return [line.rsplit("\r", 1)[-1] for line in ANSI.sub("", text).split("\n")]


def _shows_nothing(data: dict) -> bool:
    """Whether a rich output's box stays blank: no image, and text, HTML or Markdown with no visible character."""
    if any(kind in data for kind in IMAGES):
        return False
    html = _text(data.get("text/html"))
    if re.search(r"<(img|svg|table|iframe|video|canvas)\b", html, re.I):
        return False
    shown = re.sub(r"<[^>]*>", "", html) + _text(data.get("text/markdown")) + _text(data.get("text/latex"))
    if not any(kind in data for kind in ("text/html", "text/markdown", "text/latex")):
        shown += _text(data.get("text/plain"))  # plain text is drawn only when nothing richer is there
    return not shown.strip()


def _is_table(data: dict) -> bool:
    markdown, html = _text(data.get("text/markdown")), _text(data.get("text/html"))
    return bool(re.search(r"^\s*\|?\s*:?-{3,}", markdown, re.M) or re.search(r"<table\b", html, re.I))


def _outputs(page: Page, index: int, outputs: list, budget: Budget) -> None:
    for out in outputs:
        kind, printed = out.get("output_type"), None
        if kind == "stream":
            if out.get("name") == "stderr":
                continue
            printed = _text(out.get("text"))
            if not printed.strip():
                page.empty_outputs.append(index)
        elif kind == "error":
            printed = "\n".join(out.get("traceback") or [f"{out.get('ename')}: {out.get('evalue')}"])
        elif kind in ("display_data", "execute_result"):
            data = out.get("data") or {}
            if data and all(key.startswith(GLUE_ONLY) for key in data):
                continue
            if any(key in data for key in IMAGES):
                page.figures += 1
            elif "application/vnd.jupyter.widget-view+json" in data or _shows_nothing(data):
                page.empty_outputs.append(index)  # e.g. a progress bar's leftover box, a widget without its state
            elif _is_table(data):
                page.tables += 1
            elif not any(key in data for key in ("text/html", "text/markdown", "text/latex")):
                printed = _text(data.get("text/plain"))
        if printed:
            page.long_prints += [(index, len(line)) for line in _lines(printed) if len(line) > budget.print_width]


def measure(notebook, budget: Budget = BUDGET, name: str | None = None) -> Page:
    """The page one executed notebook makes: `notebook` is a path or an already-read notebook (a dict)."""
    if isinstance(notebook, (str, Path)):
        name = name or Path(notebook).as_posix()
        notebook = json.loads(Path(notebook).read_text())
    page = Page(name or "notebook")
    for index, cell in enumerate(notebook.get("cells", [])):
        tags = set((cell.get("metadata") or {}).get("tags") or [])
        source = _text(cell.get("source"))
        if cell.get("cell_type") == "markdown":
            if "remove-cell" not in tags:
                page.glue_refs += len(GLUE_REF.findall(source))
            continue
        if cell.get("cell_type") != "code":
            continue
        if not tags & REMOVE_INPUT:
            lines = [line for line in source.splitlines() if line.strip()]
            page.code_lines += len(lines)
            page.cell_lines.append((index, len(lines)))
            page.defs += [(index, line.strip()) for line in lines if DEF.match(line)]
            page.wide_code += [(index, n) for n in map(len, map(str.rstrip, lines)) if n > budget.code_width]
        if not tags & REMOVE_OUTPUT:
            _outputs(page, index, cell.get("outputs") or [], budget)
    return page


def _where(pairs) -> str:
    """'cell 3 (95), cell 7 (91, 90)': each cell once, with its numbers."""
    cells: dict[int, list] = {}
    for index, value in pairs:
        cells.setdefault(index, []).append(str(value))
    return ", ".join(f"cell {i} ({', '.join(v)})" for i, v in cells.items())


def breaches(page: Page, budget: Budget = BUDGET) -> list[str]:
    """Every way `page` breaks `budget`, one readable line each; [] when it is within the budget."""
    out = []
    if page.code_lines > budget.max_code_lines:
        out.append(f"{page.code_lines} visible code lines, more than {budget.max_code_lines}")
    if page.code_lines < budget.min_code_lines:
        out.append(f"{page.code_lines} visible code lines, fewer than {budget.min_code_lines}: the recipes are hidden")
    tall = [(i, n) for i, n in page.cell_lines if n > budget.max_cell_lines]
    if tall:
        out.append(f"visible cells over {budget.max_cell_lines} lines: {_where(tall)}")
    if len(page.defs) > budget.max_defs:
        out.append(f"{len(page.defs)} visible def/class, more than {budget.max_defs}: {_where(page.defs)}")
    if page.wide_code:
        out.append(f"{len(page.wide_code)} visible code lines over {budget.code_width} characters: "
                   f"{_where(page.wide_code)}")
    if page.long_prints:
        out.append(f"{len(page.long_prints)} printed lines over {budget.print_width} characters: "
                   f"{_where(page.long_prints)}")
    if len(page.empty_outputs) > budget.max_empty_outputs:
        out.append(f"{len(page.empty_outputs)} empty output boxes: {_where((i, 'empty') for i in page.empty_outputs)}")
    if page.glue_refs < budget.min_glue_refs:
        out.append(f"{page.glue_refs} glue references, fewer than {budget.min_glue_refs}: the prose's numbers "
                   "must come from the run")
    return out


def summary(page: Page) -> str:
    """One line of counts, like the old page statistics: for a person comparing pages."""
    return (f"{page.name}: code_lines={page.code_lines} longest_cell={page.longest_cell} defs={len(page.defs)} "
            f"wide_code_lines={len(page.wide_code)} long_out_lines={len(page.long_prints)} "
            f"empty_outputs={len(page.empty_outputs)} glue_refs={page.glue_refs} figures={page.figures} "
            f"tables={page.tables}")


if __name__ == "__main__":  # python -m vitlab.book.pages [DIR or .ipynb ...]: counts and breaches, exit 1 on any
    import sys

    from vitlab.contract.chapters import notebooks
    paths = [p for arg in (sys.argv[1:] or ["book/cpu", "book/current/cpu"])
             for p in (notebooks(Path(arg)) if Path(arg).is_dir() else [Path(arg)])]
    over = 0
    for path in paths:
        page = measure(path)
        print(summary(page))
        found = breaches(page)
        over += bool(found)
        print("".join(f"  over budget: {line}\n" for line in found), end="")
    print(f"{over} page(s) over budget" if over else "every page within budget")
    sys.exit(1 if over else 0)
