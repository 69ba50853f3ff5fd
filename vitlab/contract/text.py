"""Text for people: an error in one line, Markdown tables with cells cut at a word. Torch-free; nothing parses it back."""
from __future__ import annotations

import math


def shorten(text: str, limit: int = 160) -> str:
    """`text` cut to at most `limit` characters on a word boundary, with an ellipsis when cut; a bracket the cut
    left open is closed after the ellipsis, so the sentence around it still reads."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    opened = lambda part: max(0, part.count("(") - part.count(")"))
    room = limit - 1
    while True:  # leave room for the brackets the cut leaves open
        cut = text[:room].rsplit(" ", 1)[0] if " " in text[:room] else text[:room]
        cut = cut.rstrip(" ,;:")
        if len(cut) + 1 + opened(cut) <= limit or room <= 1:
            return cut + "…" + ")" * opened(cut)
        room -= 1


def headline(name: str, message: str, limit: int = 160) -> str:
    """'name: the first line of message' (just `name` without one), cut to `limit` characters on a word boundary."""
    first = (str(message).strip().splitlines() or [""])[0]
    return shorten(f"{name}: {first}" if first else name, limit)


def first_line(error: BaseException, limit: int = 160) -> str:
    """'ErrorType: the first line of its message', cut to `limit` characters on a word boundary."""
    return headline(error.__class__.__name__, str(error), limit)


def _cell(value, spec, limit: int = 80) -> str:
    """One table cell: '–' for missing, yes/no for booleans, else `spec` (a format spec or a function); text longer
    than `limit` is cut at a word with an ellipsis (the whole text stays in the rows)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = spec(value) if callable(spec) else format(value, spec)
    return shorten(text, limit).replace("|", "\\|")


class Markdown(str):
    """A Markdown string that Jupyter displays rendered (no IPython import needed)."""

    def _repr_markdown_(self) -> str:
        return str(self)


def markdown_table(rows: list[dict], formats: dict[str, str] | None = None, columns: list[str] | None = None,
                   limit: int = 80) -> Markdown:
    """A list of dicts as a Markdown table; `formats` maps a column to a format spec ('.1f') or a function; a text
    cell longer than `limit` characters is cut at a word boundary with an ellipsis."""
    if not rows:
        return Markdown("*(no rows)*")
    formats = formats or {}
    columns = columns or list(dict.fromkeys(key for row in rows for key in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(c), formats.get(c, ""), limit) for c in columns) + " |" for row in rows]
    return Markdown("\n".join(lines))


NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def counted(n: int, noun: str, words: bool = False) -> str:
    """`n` of `noun`, the noun plural unless n is 1: '2 instances', '1 core'; `words`: 'two ranks' (up to eight)."""
    return f"{NUMBER_WORDS.get(n, n) if words else n} {noun}{'s' * (n != 1)}"


def yes_no(value) -> str:
    """A check said as a word: 'yes', 'no', or 'unknown' where it was not measured (None)."""
    return "unknown" if value is None else "yes" if value else "no"


def notes_in_full(notes: dict[str, str], width: int = 150) -> str:
    """Each label's note whole, wrapped at `width` (a table cuts its notes; this shows them in a folded detail).
    Notes repeated under several labels are printed once, under the first label."""
    import textwrap
    seen, lines = set(), []
    for label, note in notes.items():
        note = " ".join(str(note or "").split())
        if note and note not in seen:
            seen.add(note)
            lines.append(textwrap.fill(f"{label}: {note}", width, subsequent_indent="    "))
    return "\n".join(lines) or "(no notes)"
