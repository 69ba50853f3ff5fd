"""The results page: every backend's latest run of every chapter, side by side, said from the rows.

Torch-free. Rows keep their fields all the way: a run is the tuple (backend, stack), a comparison across
stacks pairs rows whose SAME_METHOD fields are equal, and every sentence is written from Findings.
"""
from __future__ import annotations

import re
import textwrap
from collections import Counter
from pathlib import Path

from vitlab.contract import layout
from vitlab.contract.findings import (BUSY_CORES, DRIFTED, MIN_ROUNDS, THRESHOLD, VERDICTS, Finding, compare, findings,
                                     judged_by)
from vitlab.contract.rows import latest_runs, status_of
from vitlab.contract.text import counted, markdown_table

# Two rows measure the same thing on two stacks only when all of these are equal (a field a row lacks is None,
# which matches only another row lacking it): same chapter, model, variant, batch and comparison, and the same
# method, precision, runtime and mode.
SAME_METHOD = ("backend", "notebook", "model", "variant", "batch", "group", "sweep",
               "method", "precision", "runtime", "mode")
ENTRY_FIELDS = ("variant", "method", "precision", "runtime", "mode")  # one line of a figure panel
OPTIONAL_COLUMNS = ("precision", "runtime", "method", "mode")         # shown where a chapter's rows carry them
MAX_SERIES = 8                                                        # runs per figure panel
TICKS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 2 / 3, 1, 1.5, 2, 3, 4, 6, 8, 16, 32)  # the ratio axis' ticks ...
FINE_TICKS = (0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 1.75, 2)             # ... where they span little


# ---- rows -> runs --------------------------------------------------------------------------------------------

def page_rows(reference: list[dict], current: list[dict] | None = None) -> list[dict]:
    """The latest run of each chapter per backend and stack; each row gets its `stack`."""
    out = []
    for stack, rows in (("reference", reference), ("current", current or [])):
        out += [{**row, "stack": stack} for row in latest_runs(rows)]
    return out


def run_of(row: dict) -> tuple[str, str]:
    """The run a row belongs to: (backend, stack)."""
    return row["backend"], row.get("stack", "reference")


def run_label(run: tuple[str, str]) -> str:
    """How the page names a run: 'cpu', 'cuda (current stack)'."""
    backend, stack = run
    return backend if stack == "reference" else f"{backend} ({stack} stack)"


def runs_in(rows: list[dict]) -> list[tuple[str, str]]:
    """The runs in `rows`, reference stack first, then by backend."""
    return sorted({run_of(r) for r in rows}, key=lambda run: (layout.STACKS.index(run[1]), run[0]))


def notebooks_in(rows: list[dict]) -> list[str]:
    """The chapters in `rows`, in order."""
    return sorted({r["notebook"] for r in rows})


def timed(row: dict) -> bool:
    """Whether the row carries a rate (skipped, failed and whole-run rows do not)."""
    return bool(row.get("throughput"))


def row_label(row: dict) -> str:
    """A row's name on the page: its variant, then its comparison group and 'sweep' where it has them, so rows of
    one model and batch in different comparisons never read alike: 'fp32 (without IPEX)', 'default (fp32, sweep)'."""
    marks = [mark for mark in (row.get("group"), "sweep" if row.get("sweep") else None)
             if mark and not str(row.get("variant")).startswith(mark)]  # not 'training run fp32 (training run)'
    return f"{row.get('variant')}" + (f" ({', '.join(marks)})" if marks else "")


def stack_findings(rows: list[dict]) -> list[Finding]:
    """Every finding of `rows`, each row against its own stack's baseline (the stacks never share a comparison)."""
    return [f for stack in layout.STACKS for f in findings([r for r in rows if r["stack"] == stack])]


def evidence(found: Finding | None) -> str | None:
    """The ratio a verdict was computed from, with its 95% interval and rounds (None where nothing was compared)."""
    return None if found is None or found.ratio is None else found.evidence()


# ---- what each run showed ------------------------------------------------------------------------------------

def headline_findings(rows: list[dict]) -> list[Finding]:
    """One run's chapter: every non-sweep variant against its comparison group's baseline."""
    return [f for f in findings(rows) if not f.row.get("sweep")]


def outcome(found: Finding) -> str:
    """What a finding counts as: its row's status where that is not ok, else its verdict."""
    status = status_of(found.row)
    return found.verdict if status == "ok" else status


def decided(found: list[Finding]) -> list[Finding]:
    """The findings the rule calls faster, the largest ratio first (a list, not a winner: no leader is crowned)."""
    return sorted((f for f in found if f.verdict == "faster" and status_of(f.row) == "ok"), key=lambda f: -f.ratio)


def finding_sentence(found: Finding) -> str:
    """'**X** (model, batch 1): 1.23× Y (95% interval 1.20–1.26×)', each row named by its `label` where it has one
    (the words its chapter's sentences use), else by its variant."""
    row, i = found.row, found.interval
    return (f"**{row.get('label') or row_label(row)}** ({row.get('model')}, batch {row.get('batch')}): "
            f"{found.ratio:.2f}× {found.baseline.get('label') or found.baseline.get('variant')} "
            f"(95% interval {i.low:.2f}–{i.high:.2f}×)")


# A timed comparison's verdicts, then the words of a row that did not time (Finding.verdict gives both).
VERDICT_ORDER = VERDICTS + (DRIFTED, "not engaged", "not timed", "skipped", "failed")


def tally(found: list[Finding]) -> str:
    """'of 8 variants against a baseline: 2 faster, 4 within noise, 1 not engaged (judged anyway: 1 faster), 1
    skipped': a variant whose feature did not engage counts apart, with the verdict its chapter still gives it."""
    counts = Counter(outcome(f) for f in found)
    idle = Counter(f.verdict for f in found if outcome(f) == "not engaged")
    judged = ", ".join(f"{idle[v]} {v}" for v in VERDICT_ORDER if idle[v])
    parts = [f"{counts[word]} {word}" + (f" (judged anyway: {judged})" if word == "not engaged" else "")
             for word in VERDICT_ORDER if counts[word]]
    return f"of {counted(len(found), 'variant')} against a baseline: " + ", ".join(parts)


def resolution_line(found: list[Finding]) -> list | None:
    """What size of difference one chapter's run could decide: [comparisons with an interval, the median and widest
    interval half-width, the smallest difference the median interval calls faster or slower]; None without one."""
    widths = sorted(f.band for f in found if f.band is not None and f.interval.rounds >= MIN_ROUNDS)
    if not widths:
        return None
    median = widths[len(widths) // 2]
    return [len(widths), f"±{median:.0%}", f"±{widths[-1]:.0%}", f"±{(1 + THRESHOLD) * (1 + median) - 1:.0%}"]


def resolution_section(rows: list[dict]) -> list[str]:
    """Per chapter and run: how wide its intervals were, so what size of difference it could tell apart."""
    body = []
    for run in runs_in(rows):
        for notebook in notebooks_in([r for r in rows if run_of(r) == run]):
            line = resolution_line(findings([r for r in rows if run_of(r) == run and r["notebook"] == notebook]))
            body += [[notebook, run_label(run)] + line] if line else []
    return ["## What size of difference each run could tell apart", "",
            "A comparison's 95% interval spans its ratio times or divided by (1 + its half-width). The rule calls a "
            f"variant faster or slower only when the whole interval clears the ±{THRESHOLD:.0%} threshold, so with "
            "the run's median half-width *h* a difference is told apart once it is larger than about "
            f"{1 + THRESHOLD:.2f} × (1 + *h*) − 1; smaller ones read as inconclusive, or as within noise where the "
            f"interval fits inside ±{THRESHOLD:.0%} (possible only where *h* is under {THRESHOLD:.0%}). Every "
            "comparison of the chapter's run with a verdict's rounds counts, batch sweeps included.", "",
            table(["chapter", "run", "comparisons", "median half-width", "widest", "told apart beyond about"],
                  body), ""]


def chapter_link(run: tuple[str, str], notebook: str, book_dir: Path) -> str:
    """A link to the run's page of the chapter (Sphinx writes in the page's title), else the chapter's name."""
    backend, stack = run
    page = layout.pages_dir(backend, stack, book_dir) / f"{notebook}.ipynb"
    return f"[]({page.relative_to(book_dir).as_posix()})" if page.exists() else notebook  # [](...): the page's title


def run_summary(rows: list[dict], run: tuple[str, str], book_dir: Path) -> list[str]:
    """One bullet per chapter of a run: its best variant against its baseline, and how the others came out."""
    lines = [f"**{run_label(run)}** ({device_of(rows, run)})", ""]
    for notebook in notebooks_in([r for r in rows if run_of(r) == run]):
        found = headline_findings([r for r in rows if run_of(r) == run and r["notebook"] == notebook])
        faster = decided(found)
        if not found:
            said = "no variant measured against a baseline"
        elif not faster:
            idle = any(f.verdict == "faster" for f in found)  # faster, but not through the feature it names
            said = (f"no variant{' with its feature engaged' if idle else ''} beat its baseline under the rule; "
                    f"{tally(found)}")
        else:
            more = f", and {len(faster) - 2} more" if len(faster) > 2 else ""
            said = (f"faster than their baselines: {'; '.join(finding_sentence(f) for f in faster[:2])}{more}; "
                    f"{tally(found)}")
        lines.append(f"- {chapter_link(run, notebook, book_dir)} — {said}.")
    return lines + [""]


def device_of(rows: list[dict], run: tuple[str, str]) -> str:
    """'AMD EPYC, 2 threads, torch 2.8.0' for a run (its first row's provenance)."""
    row = next(r for r in rows if run_of(r) == run)
    parts = [row.get("device_name"), f"{row['threads']} threads" if row.get("threads") else None,
             f"torch {row.get('versions', {}).get('torch')}" if row.get("versions", {}).get("torch") else None]
    return ", ".join(p for p in parts if p)


def summary_section(rows: list[dict], book_dir: Path) -> list[str]:
    text = ["## What each run showed", "",
            "Per chapter and run: the variants the rule calls faster than their comparison's baseline (the largest "
            "ratios first, batch sweeps left out; a list, not a winner) and how every variant of the chapter came out "
            "against its own baseline.", ""]
    for run in runs_in(rows):
        text += run_summary(rows, run, book_dir)
    return text


# ---- provenance ----------------------------------------------------------------------------------------------

PROVENANCE_COLUMNS = ["backend", "chapter", "preset", "device", "CPU ISA", "threads", "torch", "ipex",
                      "transformers", "git", "date"]


def provenance_line(row: dict) -> list:
    versions = row.get("versions", {})
    return [run_label(run_of(row)), row["notebook"], row.get("preset"), row.get("device_name"), row.get("cpu_isa"),
            row.get("threads"), versions.get("torch"), versions.get("ipex") or "–", versions.get("transformers"),
            row.get("git_sha"), str(row.get("time", ""))[:10]]


def provenance_section(rows: list[dict]) -> list[str]:
    firsts = {}
    for row in rows:
        firsts.setdefault((run_of(row), row["notebook"]), row)
    order = runs_in(rows)
    body = [provenance_line(firsts[key]) for key in sorted(firsts, key=lambda k: (order.index(k[0]), k[1]))]
    return (["## Where the numbers come from", "",
             "Each run's machine, software and commit, one line per chapter and run.", ""]
            + dropdown("Machine, versions, preset and commit of every run", table(PROVENANCE_COLUMNS, body)))


def missing_section(reference: list[dict], current: list[dict]) -> list[str]:
    ran, current_backends = {r["backend"] for r in reference}, {r["backend"] for r in current}
    missing = [name for name in layout.BACKENDS if name not in ran]
    if not missing:
        return []
    lines = ["Not run yet on the reference stack:", ""]
    for name in missing:
        backend = layout.BACKENDS[name]
        preset = "full" if name == "cpu" else "gpu"  # a GPU's budget: every chapter in minutes (or --preset full)
        state = ("ran on the current stack only (above); the reference stack has not run there yet: "
                 if name in current_backends else "not run yet: ")
        lines.append(f"- **{name}** — {state}on {backend.where}, run "
                     f"`vitlab run --backend {backend.device_type} --preset {preset} && vitlab book`")
    return lines + [""]


# ---- figures -------------------------------------------------------------------------------------------------

def entry_key(row: dict) -> tuple:
    return tuple(row.get(k) for k in ENTRY_FIELDS)


def panels(rows: list[dict]) -> dict[tuple, dict[tuple, dict[tuple, Finding]]]:
    """A chapter's timed findings: panel (model, batch, group) -> entry (variant and method fields) -> run -> Finding.
    Batch sweeps, and variants skipped, failed or untimed, stay in the table."""
    out: dict = {}
    for run in runs_in(rows):
        for found in headline_findings([r for r in rows if run_of(r) == run]):
            if found.ratio is None or status_of(found.row) in ("skipped", "failed"):
                continue
            row = found.row
            panel = out.setdefault((row.get("model"), row.get("batch"), row.get("group")), {})
            panel.setdefault(entry_key(row), {})[run] = found
    return out


def drawn_findings(groups: dict[tuple, dict[tuple, dict[tuple, Finding]]]) -> list[Finding]:
    """Every finding that `panels` put in a figure."""
    return [f for entries in groups.values() for runs in entries.values() for f in runs.values()]


def judged_on(found: list[Finding]) -> str:
    """What the ratios of `found` are ratios of: 'throughput', 'latency', or both, as each comparison is judged."""
    bys = sorted({f.by for f in found})
    return bys[0] if len(bys) == 1 else "latency or throughput, as each comparison is judged"


def entry_labels(entries: list[tuple]) -> list[str]:
    """Each entry's variant name; the method fields are added where two entries share a name."""
    names = Counter(entry[0] for entry in entries)
    labels = []
    for entry in entries:
        extra = [str(value) for value in entry[1:] if value is not None]
        label = str(entry[0]) + (f" ({', '.join(extra) or 'method not recorded'})" if names[entry[0]] > 1 else "")
        labels.append(textwrap.fill(label, 34))
    return labels


def panel_title(key: tuple, entries: dict) -> str:
    model, batch, group = key
    found = drawn_findings({key: entries})
    against = sorted({str(f.baseline.get("variant")) for f in found})
    title = f"{model}, batch {batch}" + (f", {group}" if group else "")
    return textwrap.fill(f"{title} — against {' / '.join(against)}, on {judged_on(found)}", 70)


def x_limits(found: list[Finding]) -> tuple[float, float]:
    """A log axis that holds 1×, every ratio and its noise band, with a margin."""
    low = min([1.0] + [f.interval.low if f.interval else f.ratio for f in found])
    high = max([1.0] + [f.interval.high if f.interval else f.ratio for f in found])
    return low / 1.15, high * 1.15


def draw_panel(ax, key: tuple, entries: dict, runs: list, colours: dict) -> None:
    """One comparison group: a line per variant, a marker per run at its ratio, whiskers for its 95% interval."""
    order = list(entries)
    step = 0.7 / max(len(runs), 1)
    for j, entry in enumerate(order):
        for i, run in enumerate(runs):
            found = entries[entry].get(run)
            if found is None:
                continue
            y = j - 0.35 + step * (i + 0.5)
            i = found.interval
            whisker = [[found.ratio - i.low], [i.high - found.ratio]] if i else None
            engaged = status_of(found.row) == "ok"
            ax.errorbar(found.ratio, y, xerr=whisker, fmt="o", color=colours[run], markersize=6, capsize=2,
                        markerfacecolor=colours[run] if engaged else "white", linewidth=1)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(order)), entry_labels(order), fontsize=8)
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.set_title(panel_title(key, entries), fontsize=9, loc="left")
    ax.grid(axis="x", color="0.9")


def ratio_axes(axes, found: list[Finding]) -> None:
    """Every panel on one log axis that holds 1×, every ratio and its band, with tick labels under each panel."""
    from matplotlib.ticker import FixedLocator, NullLocator

    low, high = x_limits(found)
    ticks = [t for t in TICKS if low <= t <= high]
    ticks = ticks if len(ticks) >= 3 else [t for t in FINE_TICKS if low <= t <= high]
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlim(low, high)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(ticks, [f"{t:.2g}×" for t in ticks], fontsize=8)
        ax.tick_params(labelbottom=True)
    axes[-1].set_xlabel("speed over the baseline (log scale; > 1× is faster); whiskers: 95% interval")


def legend(fig, runs: list, colours: dict, found: list[Finding]) -> None:
    """The runs' colours (and the hollow marker's meaning, where one is drawn), above the panels."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", linestyle="none", color=colours[run], label=run_label(run)) for run in runs]
    if any(status_of(f.row) != "ok" for f in found):
        handles.append(Line2D([], [], marker="o", linestyle="none", color="grey", markerfacecolor="white",
                              label="hollow: not engaged"))
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(len(handles), 4),
               frameon=False, fontsize=9)


def speedup_figure(rows: list[dict], path: Path, colours: dict[tuple, str]) -> bool:
    """A chapter's figure: a panel per comparison group, each variant's finding (its speed over its baseline, on what
    the row is judged by, with the 95% interval) on a log axis, one colour per run (`colours`: the page's, so a run
    keeps its colour). False if nothing was timed against a baseline. The caller gives it at most MAX_SERIES runs."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = panels(rows)
    if not groups:
        return False
    runs = [run for run in runs_in(rows) if any(run in e for entries in groups.values() for e in entries.values())]
    heights = [0.32 * len(entries) + 0.5 for entries in groups.values()]
    fig, axes = plt.subplots(len(groups), 1, figsize=(8, sum(heights) + 0.95 * len(groups) + 0.6), sharex=True,
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (key, entries) in zip(axes[:, 0], groups.items()):
        draw_panel(ax, key, entries, runs, colours)
    found = drawn_findings(groups)
    ratio_axes(list(axes[:, 0]), found)
    legend(fig, runs, colours, found)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


# ---- a chapter's section -------------------------------------------------------------------------------------

def number(value) -> str:
    """The page's numbers: 2 decimals with thousands separators, small values in 2 significant digits."""
    if value is None or value == "":
        return "–"
    if isinstance(value, float):
        return f"{value:.2g}" if abs(value) < 1e-2 and value != 0 else f"{value:,.2f}"
    return str(value)


def percent(value) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def table(header: list[str], body: list[list], formats: dict | None = None) -> str:
    """A Markdown table; the results page cuts no text (it is where a whole reason is one click away)."""
    formats = {**{h: number for h in header}, **(formats or {})}
    return str(markdown_table([dict(zip(header, line)) for line in body], formats, header, limit=10_000))


def dropdown(title: str, body: str) -> list[str]:
    """A folded block (sphinx-design's dropdown, which Jupyter Book 1 loads)."""
    return [f"```{{dropdown}} {title}", body, "```", ""]


def row_line(row: dict, extra: list[str], found: Finding | None) -> list:
    """A row of a chapter's table; `found`: the row against its comparison's baseline (None for the baseline)."""
    return ([run_label(run_of(row)), row.get("model"), row_label(row) + (" ◆" if row.get("baseline") else ""),
             row.get("batch"), row.get("median_ms"), row.get("p90_ms"), row.get("throughput"),
             judged_by(row) if timed(row) else None, evidence(found), verdict_of(row, found),
             row.get("ceiling_fraction"), row.get("max_abs_diff"), row.get("top1_agreement"), row.get("accuracy"),
             status_of(row)] + [row.get(field) for field in extra] + [note(row)])


def note(row: dict) -> str:
    """The row's reason in full (skipped and failed rows carry theirs in those fields too)."""
    return row.get("reason") or row.get("skipped") or row.get("failed") or ""


def literal(text) -> str:
    """`text` with Markdown's emphasis, code and link marks escaped, so that a reason shows as written: an error's
    '__torch__.torch.classes' would otherwise render as a bold 'torch'."""
    return re.sub(r"([\\`*_\[\]<>])", r"\\\1", str(text))


def chapter_table(chapter: list[dict]) -> str:
    extra = [field for field in OPTIONAL_COLUMNS if any(r.get(field) is not None for r in chapter)]
    header = (["backend", "model", "variant", "batch", "median ms", "p90 ms", "items/s", "judged by",
               "vs baseline (95% interval)", "verdict", "of ceiling", "max-abs diff", "top-1 agree", "accuracy",
               "status"] + extra + ["note"])
    found = own_findings(chapter)
    return table(header, [row_line(r, extra, found.get((r["stack"], method_key(r)))) for r in chapter],
                 {"of ceiling": percent, "note": literal})


def chapter_figures(chapter: list[dict], notebook: str, figures: Path,
                    colours: dict[tuple, str]) -> list[tuple[Path, list[dict]]]:
    """The chapter's figure (one more per MAX_SERIES further runs, so no panel holds more series), each with the
    rows it was drawn from."""
    runs = runs_in(chapter)
    drawn = []
    for start in range(0, len(runs), MAX_SERIES):
        path = figures / f"{notebook}_speedup{f'_{start // MAX_SERIES + 1}' if start else ''}.png"
        shown = [r for r in chapter if run_of(r) in runs[start:start + MAX_SERIES]]
        if speedup_figure(shown, path, colours):
            drawn.append((path, shown))
    return drawn


def figure_alt(notebook: str, rows: list[dict]) -> str:
    """What speedup_figure draws from `rows`, in words: the figure's alt text."""
    groups = panels(rows)
    runs = [run_label(run) for run in runs_in(rows)
            if any(run in e for entries in groups.values() for e in entries.values())]
    names = [f"{model}, batch {batch}" + (f", {group}" if group else "") for model, batch, group in groups]
    listed = "; ".join(names) if len(names) <= 8 else f"{len(names)} comparisons"
    found = drawn_findings(groups)
    hollow = any(status_of(f.row) != "ok" for f in found)  # as legend() says it
    return (f"Dot plot of {notebook}'s comparisons, one panel per comparison ({listed}): each variant's speed over "
            f"its baseline (on {judged_on(found)}) on a log scale with a line at 1×, one marker per run "
            f"({', '.join(runs)}) with whiskers for its 95% interval"
            + ("; a hollow marker: not engaged" if hollow else ""))


def chapter_section(rows: list[dict], notebook: str, figures: Path,
                    colours: dict[tuple, str]) -> tuple[list[str], list[Path]]:
    """A chapter's heading, figure and (folded) rows; returns the text and the figures drawn."""
    chapter = [r for r in rows if r["notebook"] == notebook]
    text = [f"## {notebook}", ""]
    drawn = chapter_figures(chapter, notebook, figures, colours)
    paths = [path for path, _ in drawn]
    for path, shown in drawn:  # the directive's alt is plain text (a Markdown image's is parsed as inline markup)
        text += [f"```{{image}} figures/{path.name}", f":alt: {figure_alt(notebook, shown)}", "```", ""]
    if paths:
        text += ["One panel per comparison, its title naming what it is judged on; one marker per run at the ratio "
                 "its verdict was computed from, whiskers for the 95% interval; a variant skipped, failed or untimed "
                 "in a run has no marker there (the rows below say why).", ""]
    text += dropdown(f"All {len(chapter)} rows of {notebook}", chapter_table(chapter))
    return text, paths


# ---- across stacks -------------------------------------------------------------------------------------------

def method_key(row: dict) -> tuple:
    return tuple(bool(row.get(k)) if k == "sweep" else row.get(k) for k in SAME_METHOD)


def stack_pairs(reference: list[dict], current: list[dict]) -> list[tuple[dict, dict]]:
    """(reference row, current row) for each timed variant both stacks ran the same way (SAME_METHOD)."""
    rows = page_rows(reference, current)
    theirs = {method_key(r): r for r in rows if r["stack"] == "current" and timed(r)}
    return [(ours, theirs[method_key(ours)]) for ours in rows
            if ours["stack"] == "reference" and timed(ours) and method_key(ours) in theirs]


def run_name(row: dict) -> str:
    return f"torch {row.get('versions', {}).get('torch')}, {row.get('preset')}"


def own_findings(rows: list[dict]) -> dict[tuple, Finding]:
    """(stack, method key) -> that row against its own stack's baseline (a baseline has none)."""
    return {(f.row["stack"], method_key(f.row)): f for f in stack_findings(rows)}


def verdict_of(row: dict, found: Finding | None) -> str | None:
    """The row's verdict against its own baseline: 'baseline' for a baseline, None where it is compared with none."""
    return "baseline" if row.get("baseline") else None if found is None else found.verdict


def agreement(ours: str | None, theirs: str | None) -> str:
    """Whether two verdicts on the same comparison agree: same, one undecided (within noise or inconclusive), or
    opposite (one faster, the other slower)."""
    if ours == theirs:
        return "same"
    if {ours, theirs} == {"faster", "slower"}:
        return "opposite"
    return "one undecided" if {ours, theirs} & {"within noise", "inconclusive"} else "not compared"


def own_verdicts(pair: tuple[dict, dict], found: dict[tuple, Finding]) -> tuple[str | None, str | None]:
    """The reference row's and the current row's verdicts against their own stack's baselines."""
    ours, theirs = pair
    return (verdict_of(ours, found.get(("reference", method_key(ours)))),
            verdict_of(theirs, found.get(("current", method_key(theirs)))))


def pair_line(pair: tuple[dict, dict], found: dict[tuple, Finding]) -> list:
    ours, theirs = pair
    across = compare(theirs, ours)
    method = ", ".join(str(ours[k]) for k in ("method", "precision") if ours.get(k) is not None) or "not recorded"
    mine, other = own_verdicts(pair, found)
    return [ours["backend"], ours["notebook"], ours["model"], row_label(ours), ours["batch"], method,
            run_name(ours), ours["throughput"], mine, run_name(theirs), theirs["throughput"], other,
            agreement(mine, other) if "baseline" not in (mine, other) else "baseline", across.by, evidence(across),
            across.verdict]


PAIR_COLUMNS = ["backend", "chapter", "model", "variant", "batch", "method, precision", "reference run",
                "items/s (ref.)", "verdict (ref.)", "current run", "items/s (current)", "verdict (current)",
                "verdicts agree", "judged by", "current/reference (95% interval)", "current vs reference"]


def stack_tally(pairs: list[tuple[dict, dict]], found: dict[tuple, Finding]) -> list[str]:
    """Per backend and chapter: how the current stack compared with the reference, and whether the two stacks'
    verdicts against their own baselines agree."""
    counts: dict[tuple, Counter] = {}
    for ours, theirs in pairs:
        count = counts.setdefault((ours["backend"], ours["notebook"]), Counter())
        count[compare(theirs, ours).verdict] += 1
        mine, other = own_verdicts((ours, theirs), found)
        if "baseline" not in (mine, other):
            count["agree: " + agreement(mine, other)] += 1
    keys = ["faster", "slower", "within noise", "inconclusive", "agree: same", "agree: one undecided",
            "agree: opposite"]
    body = [[backend, notebook, sum(c[k] for k in keys[:4])] + [c[k] for k in keys]
            for (backend, notebook), c in sorted(counts.items())]
    return [table(["backend", "chapter", "variants compared", "current faster", "current slower", "within noise",
                   "inconclusive", "verdicts same", "one undecided", "opposite"], body), ""]


def stack_section(reference: list[dict], current: list[dict]) -> list[str]:
    text = ["## Reference stack vs current stack", "",
            "The reference stack is the one where IPEX runs; the current stack is today's PyTorch without IPEX "
            "(their versions are in the provenance table above). A variant is compared across the stacks only when "
            "both ran it the same way: same backend, chapter, model, variant, batch and comparison, and the same "
            "method, precision, runtime and mode where the rows record them (a field one row records and the other "
            "lacks is a difference). *current/reference* is the current row's speed over the reference row's (> 1: the "
            "current stack is faster), on what the rows are judged by (*judged by*: latency or throughput), with the "
            "95% interval the rule judges (unpaired: the stacks ran apart). Each stack's "
            "verdict against its own baseline is shown beside it, and whether the two agree. "
            "Rows of different presets compare where the model and batch are the same.", ""]
    pairs = stack_pairs(reference, current)
    if not pairs:
        return text + ["No variant has been run the same way on both stacks yet: run "
                       "`.venv-current/bin/vitlab run --backend cpu` after `bash tools/setup.sh current`.", ""]
    found = own_findings(page_rows(reference, current))
    return (text + stack_tally(pairs, found)
            + dropdown(f"All {len(pairs)} variants both stacks ran",
                       table(PAIR_COLUMNS, [pair_line(pair, found) for pair in pairs])))


# ---- the page ------------------------------------------------------------------------------------------------

def introduction(rows: list[dict]) -> list[str]:
    return ["# Results across backends", "",
            f"Built by `vitlab book` from {len(rows)} result rows (the latest run of each chapter on each backend and "
            "stack) in `book/results/<backend>.jsonl` and `book/results/current/<backend>.jsonl`. Ratios compare "
            "variants on the *same* backend and stack against the row each comparison names as its baseline "
            "(`baseline: true`, usually eager fp32); correctness is against eager fp32. Timings are medians after "
            "warm-up with the device synchronised. *Of ceiling* is the achieved FLOP/s over a large matrix multiply "
            "timed in the same run, device and precision (the highest of the run's measurements of it). In the "
            "tables, ◆ marks each comparison's baseline row, and a variant's parentheses name its comparison group "
            "and mark batch-sweep rows (*sweep*), so rows of one model and batch in different comparisons never read "
            "alike. *vs baseline* is the ratio its row's verdict was computed from (the rule below), with its 95% "
            "interval.", ""] + rule_section(rows)


def rule_section(rows: list[dict]) -> list[str]:
    """The verdict rule, in plain words (vitlab.contract.findings is its one implementation); its numbers are the
    rule's constants and the rounds the comparisons in `rows` got."""
    rounds = sorted(f.interval.rounds for f in stack_findings(rows) if f.interval is not None)
    had = f"the comparisons on this page have {rounds[0]} to {rounds[-1]} rounds" if rounds else "rounds are few"
    return ["## How a verdict is decided", "",
            "Variants are timed in interleaved rounds: every variant once per round, in turn, the order rotating, "
            "so a noisy spell hits all of them alike. A chapter plans its rounds from its seconds of timing, and a "
            "comparison still inconclusive at the end of them gets more rounds (up to as many seconds again), in which "
            "only the baseline and the undecided variants run. Each row keeps its per-round medians (`round_medians_ms`), and a row's round k pairs with its baseline's "
            "round k. The speed ratio of a comparison is the geometric mean of its paired per-round ratios, with a "
            f"95% Student-t confidence interval (t rather than a bootstrap: {had}, too few for a bootstrap's "
            "interval to be trusted). Rows timed apart (two launches, two stacks) get Welch's unpaired interval. "
            "Where a chapter timed a second copy of the baseline beside it, the distance between the two copies is "
            "the run's drift, and it widens every interval of that comparison; the copy itself, set against the "
            "baseline, is said to have **drifted** where its interval clears the threshold, never to be faster or "
            "slower than itself. What moves from one run to the next (another compile, another memory layout, "
            "another spell of a shared host) is not in a run's rounds: `vitlab compare-runs` measures it from two "
            "runs of the same chapters on one machine (the table below), and each CPU row records its chapter's "
            "measured value (`run_to_run`), which widens the interval, so that a verdict says what a second run "
            "would also find; where that spread alone is wider than the threshold, a difference smaller than it is "
            "**inconclusive**, never a tie. Rows without the field (older runs, devices where it was never "
            "measured) are judged on their rounds alone. The practical threshold is "
            f"±{THRESHOLD:.0%}: **faster** only when the whole interval lies above {1 + THRESHOLD:.2f}×, **slower** "
            f"only when it lies below 1/{1 + THRESHOLD:.2f} ≈ {1 / (1 + THRESHOLD):.3f}×, **within noise** when it "
            "lies inside both, and **inconclusive** otherwise: too wide to say, or narrow but across a threshold (a "
            f"difference of about the threshold's size), or fewer than {MIN_ROUNDS} rounds. A comparison is judged "
            "on latency (the time one call waits: batch 1 in one process) or on throughput (items per second, summed "
            "over instances), as its row records (`judged_by`); the chapter's page and this page read the same field. "
            "Each row records the rounds it got and the seconds of timing it was given (`rounds`, `budget_s`), and how "
            "much CPU other programs on the machine took while it was timed (`host_busy`, in cores, read from "
            f"/proc): where either side saw more than {BUSY_CORES:.2f} of a core, the comparison is **inconclusive** "
            "whatever its interval, since another program's load is not noise a second run would share.", ""]


def repeatability_section(book_dir: Path) -> list[str]:
    """The committed tallies of two runs of the same chapters on one machine (`vitlab compare-runs --save`):
    book/results/repeatability.json, and one repeatability-<machine>.json per further machine, each a paragraph."""
    import json
    paths = sorted(layout.rows_dir("reference", book_dir).glob("repeatability*.json"),
                   key=lambda path: (path.name != "repeatability.json", path.name))  # the first machine first
    if not paths:
        return []
    out = ["## Verdicts that held when the book was run twice", ""]
    for path in paths:
        said = json.loads(path.read_text())
        counts = said["tally"]
        out += [f"The {said['preset']} chapters were run twice on {said['machine']} ({said['stack']}, "
                f"{said['date']}), and every comparison's two verdicts compared (`vitlab compare-runs`): of "
                f"{said['compared']} comparisons, {counts.get('same', 0)} kept their verdict, "
                f"{counts.get('one undecided', 0)} changed it without a contradiction ({moves(said)}), and "
                f"{counts.get('opposite', 0)} flipped between faster and slower. The intervals' half-widths were "
                f"±{said['half_width_median']:.0%} at the median and ±{said['half_width_p90']:.0%} at the 90th "
                f"percentile of comparisons.{controls_said(said)}", ""] + calibration_lines(said)
    return out


def controls_said(said: dict) -> str:
    """The re-timed baselines (controls), tallied apart from the comparisons: they measure the machine."""
    checks = said.get("controls")
    if not checks or not checks.get("compared"):
        return ""
    return (f" The {checks['compared']} re-timed baselines (controls: the baseline again, which measure the machine, "
            f"not an optimisation) are counted apart: {checks['same']} said the same in both runs, and "
            f"{checks['drifted']} drifted in one run or both.")


def moves(said: dict) -> str:
    """What the "one undecided" changes were: a call against no call, or within noise against inconclusive."""
    changed = said["tally"].get("one undecided", 0)
    if "neither_a_call" not in said:  # a tally saved before the split was recorded
        return "a call in one run, within noise or inconclusive in the other"
    neither = said["neither_a_call"]
    return (f"{changed - neither} between a call and no call, {neither} between within noise and inconclusive, "
            "neither a call")


def calibration_lines(said: dict) -> list[str]:
    """How honest those intervals were across the two runs: per chapter, how many comparisons' two ratios lay
    further apart than their intervals allow, and the run-to-run spread beyond them (vitlab.book.repeat)."""
    found = said.get("calibration")
    if not found or not found.get("all", {}).get("compared"):
        return []
    every = found["all"]
    body = [{"chapter": name, "comparisons": c["compared"], "further apart than their intervals allow": c["beyond"],
             "run-to-run spread beyond the intervals": f"±{c['run_to_run']:.0%}"} for name, c in found.items()]
    return ["Had each run's 95% interval held everything that varies from one run to the next, about 1 comparison "
            "in 20 would have had its two ratios further apart than the two intervals allow; "
            f"{every['beyond']} of {every['compared']} did. What a single run cannot see is what stays the same "
            "for the whole of it and changes in the next: the state of a shared machine, or of the process (where "
            "its memory landed, which kernels were chosen). The last column is that spread, estimated from the "
            f"two runs: a verdict whose interval ends within it of the ±{THRESHOLD:.0%} threshold may move in a "
            "second run."
            + (" These runs' rows carried their chapter's run-to-run spread (`run_to_run`), so their intervals "
               "held it already: the last column is what was left beyond it." if said.get("with_run_to_run") else
               " These runs' rows carried no run-to-run spread: the last column is what the rule's `RUN_TO_RUN` "
               "holds."), "",
            str(markdown_table(body)), ""]


def remove_stale(figures: Path, kept: list[Path]) -> None:
    """The figures folder holds this page's figures only: drop those this build did not draw."""
    for old in figures.glob("*.png"):
        if old not in kept:
            old.unlink()


def write_results_page(rows: list[dict], book_dir: Path, current: list[dict] | None = None) -> Path:
    """book/results.md (and its figures) from all result rows of all backends (and the current stack's)."""
    current = current or []
    shown = page_rows(rows, current)
    figures = layout.figures_dir(book_dir)
    text = (introduction(shown) + repeatability_section(book_dir) + summary_section(shown, book_dir)
            + resolution_section(shown) + provenance_section(shown))
    text += missing_section(rows, current)
    colours = {run: f"C{i % 10}" for i, run in enumerate(runs_in(shown))}
    drawn = []
    for notebook in notebooks_in(shown):
        section, paths = chapter_section(shown, notebook, figures, colours)
        text += section
        drawn += paths
    text += stack_section(rows, current)
    if figures.exists():
        remove_stale(figures, drawn)
    path = book_dir / "results.md"
    path.write_text("\n".join(text) + "\n")
    return path
