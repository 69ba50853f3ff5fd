"""The results page: every backend's latest run of every chapter, side by side."""
from __future__ import annotations

from pathlib import Path

from vitlab import layout
from vitlab.chapter import markdown_table
from vitlab.results import latest_runs, with_speedups


def _number(value) -> str:
    """The results page's numbers: 2 decimals with thousands separators, small values in 2 significant digits."""
    if value == "":
        return "–"
    if isinstance(value, float):
        return f"{value:.2g}" if abs(value) < 1e-2 and value != 0 else f"{value:,.2f}"
    return str(value)


def _table(header: list[str], body: list[list]) -> str:
    return str(markdown_table([dict(zip(header, line)) for line in body], {h: _number for h in header}, header))


def _speedup_plot(rows: list[dict], notebook: str, path: Path) -> bool:
    """Grouped bars: speedup vs baseline per variant, one colour per backend. False if nothing to plot."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [r for r in rows if r.get("speedup") is not None]
    if not points:
        return False
    label = lambda r: f"{r['model']} · {r['variant']}{' (sweep)' if r.get('sweep') else ''} · b{r['batch']}"
    labels = list(dict.fromkeys(label(r) for r in points))
    backends = list(dict.fromkeys(r["backend"] for r in points))
    width = 0.8 / len(backends)
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(labels) + 1.5))
    for i, backend in enumerate(backends):
        values = {label(r): r["speedup"] for r in points if r["backend"] == backend}
        ax.barh([j + i * width for j in range(len(labels))], [values.get(label, 0) for label in labels],
                height=width, label=backend)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([j + width * (len(backends) - 1) / 2 for j in range(len(labels))], labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("speedup vs the baseline on the same backend (throughput ratio, >1 is faster)")
    ax.set_title(f"{notebook}: speedup per variant")
    ax.legend(title="backend")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _ceiling_plot(rows: list[dict], path: Path) -> bool:
    """Achieved FLOP/s as a fraction of the GEMM ceiling measured in the same run, against batch size, per backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    series: dict[tuple, dict] = {}
    for r in rows:
        if r.get("flops_per_s") and r.get("ceiling_flops_per_s"):
            name = f"{r['model']} · {r['variant']}"
            series.setdefault((r["backend"], name), {})[r["batch"]] = 100 * r["flops_per_s"] / r["ceiling_flops_per_s"]
    if not series:
        return False
    backends = list(dict.fromkeys(backend for backend, _ in series))
    names = list(dict.fromkeys(name for _, name in series))
    models = {name.split(" · ")[0] for name in names}
    colours = {name: f"C{i % 10}" for i, name in enumerate(names)}  # a variant has one colour in every panel
    fig, axes = plt.subplots(1, len(backends), figsize=(5 * len(backends) + 1, 5.5), sharey=True, squeeze=False)
    handles = {}
    for ax, backend in zip(axes[0], backends):
        for (where, name), points in series.items():
            if where == backend:
                batches = sorted(points)
                line, = ax.plot(batches, [points[b] for b in batches], color=colours[name],
                                marker="o" if len(batches) > 1 else "x", linestyle="-" if len(batches) > 1 else "none",
                                label=name.split(" · ", 1)[1] if len(models) == 1 else name)
                handles.setdefault(name, line)
        ax.axhline(100, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.set_xlabel("batch size")
        ax.set_title(backend)
    axes[0][0].set_ylabel("% of the measured GEMM ceiling")
    fig.suptitle("How close each variant gets to the hardware's limit (dashed: a large GEMM, same run and precision)"
                 + (f" — {models.pop()}" if len(models) == 1 else ""))
    fig.legend(handles=[handles[n] for n in names], loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04 * ((len(names) + 1) // 2), 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def stack_comparison(reference: list[dict], current: list[dict]) -> list[list]:
    """Rows of a table: the variants both stacks ran (same backend, chapter, model, variant, batch)."""
    key = lambda r: (r.get("backend"), r.get("notebook"), r.get("model"), r.get("variant"), r.get("batch"),
                     r.get("group"), bool(r.get("sweep")))
    theirs = {key(r): r for r in with_speedups(latest_runs(current))}
    run = lambda r: f"torch {r['versions'].get('torch')}, {r.get('preset')}"
    table = []
    for ours in with_speedups(latest_runs(reference)):
        other = theirs.get(key(ours))
        if other is None or not ours.get("throughput") or not other.get("throughput"):  # skipped: no timing
            continue
        table.append([ours["backend"], ours["notebook"], ours["model"], ours["variant"], ours["batch"],
                      run(ours), ours["throughput"], ours.get("speedup"),
                      run(other), other["throughput"], other.get("speedup"),
                      other["throughput"] / ours["throughput"]])
    return table


def write_results_page(rows: list[dict], book_dir: Path, current: list[dict] | None = None) -> Path:
    """book/results.md (and its figures) from all result rows of all backends (and the current stack's)."""
    comparison = stack_comparison(rows, current or [])
    reference_backends = {r["backend"] for r in rows}
    rows = rows + [{**r, "backend": f"{r['backend']} (current stack)"} for r in current or []]
    rows = with_speedups(latest_runs(rows))
    figures = layout.figures_dir(book_dir)
    text = ["# Results across backends", "",
            f"Built by `vitlab book` from {len(rows)} result rows (the latest run of each chapter on each "
            "backend) in `book/results/<backend>.jsonl` and `book/results/current/<backend>.jsonl`. Speedups "
            "compare variants on the *same* backend, as throughput ratios against the row each comparison "
            "names as its baseline (`baseline: true`, usually eager fp32); correctness is against eager fp32. Timings are medians after warm-up with the device synchronised. "
            "In the tables, ◆ marks each comparison's baseline row.", ""]
    ran = sorted({r["backend"] for r in rows})
    text += ["## Where the numbers come from", ""]
    prov = []
    for backend in ran:
        for notebook in sorted({r["notebook"] for r in rows if r["backend"] == backend}):
            r = next(x for x in rows if x["backend"] == backend and x["notebook"] == notebook)
            v = r.get("versions", {})
            prov.append([backend, notebook, r.get("preset"), r.get("device_name"), r.get("cpu_isa"),
                         r.get("threads"), v.get("torch"), v.get("ipex") or "–", v.get("transformers"),
                         r.get("git_sha"), str(r.get("time", ""))[:10]])
    if prov:
        text += [_table(["backend", "chapter", "preset", "device", "CPU ISA", "threads", "torch", "ipex",
                         "transformers", "git", "date"], prov), ""]
    missing = [b for b in layout.BACKENDS if b not in reference_backends]
    if missing:
        text += ["Not run yet on the reference stack:", ""]
        current_backends = {r["backend"] for r in current or []}
        for b in missing:
            preset = "full" if b == "cpu" else "gpu"  # a GPU's budget: every chapter in minutes (or --preset full)
            text.append(f"- **{b}** — " + ("ran on the current stack only (above); the reference stack (torch 2.8 + "
                                            "IPEX) has not run there yet: " if b in current_backends else "not run yet: ")
                        + f"on {layout.BACKENDS[b].where}, run "
                        f"`vitlab run --backend {layout.BACKENDS[b].device_type} --preset {preset} && vitlab book`")
        text.append("")
    if _ceiling_plot(rows, figures / "ceiling_fraction.png"):
        text += ["## Achieved FLOP/s", "", "![achieved FLOP/s as a fraction of the measured ceiling](figures/ceiling_fraction.png)", "",
                 "The ceiling is measured in the same run, on the same device and in the same precision: one large "
                 "matrix multiply timed like every variant (its basis is in each row's `ceiling_basis`). A nominal "
                 "peak from the clock and vector width is kept in the rows beside it; a CPU that boosts above its "
                 "nominal clock can exceed that figure, which is why it is not the yardstick here.", ""]
    for notebook in sorted({r["notebook"] for r in rows}):
        chapter = [r for r in rows if r["notebook"] == notebook]
        text += [f"## {notebook}", ""]
        if _speedup_plot(chapter, notebook, figures / f"{notebook}_speedup.png"):
            text += [f"![speedup per variant for {notebook}](figures/{notebook}_speedup.png)", ""]
        body = [[r["backend"], r.get("model"), r.get("variant") + (" (sweep)" if r.get("sweep") else "")
                 + (" ◆" if r.get("baseline") else ""), r.get("batch"), r.get("median_ms"),
                 r.get("p90_ms"), r.get("throughput"), r.get("speedup"), r.get("max_abs_diff"),
                 r.get("top1_agreement"), r.get("accuracy"),
                 ("skipped" if r.get("skipped") else "yes" if r.get("engaged") else "no")
                 + (f" — {r['reason']}" if r.get("reason") else "")]
                for r in chapter]
        text += [_table(["backend", "model", "variant", "batch", "median ms", "p90 ms", "items/s",
                         "speedup", "max-abs diff", "top-1 agree", "accuracy", "engaged"], body), ""]
    text += ["## Reference stack vs current stack", "",
             "The reference stack (torch 2.8, IPEX 2.8, transformers 4) is the only one where IPEX runs; "
             "the current stack is today's PyTorch without IPEX (`tools/setup.sh current`). Below: the "
             "variants both ran, on the same machine class. *current/reference* is the throughput ratio "
             "(>1: today's stack is faster); each stack's speedup is against its own baseline.", ""]
    if comparison:
        text += [_table(["backend", "chapter", "model", "variant", "batch", "reference run", "items/s (ref.)",
                         "speedup (ref.)", "current run", "items/s (current)", "speedup (current)",
                         "current/reference"], comparison), ""]
        text += ["A chapter's quick and full presets time the same variants with more or fewer repetitions, "
                 "so rows of different presets compare; chapters whose presets use different models "
                 "(chapter 02: ViT-Ti in quick, ViT-B in full) only appear here once both stacks ran the same "
                 "preset.", ""]
    else:
        text += ["No variant has been run on both stacks yet: run `.venv-current/bin/vitlab run --backend cpu` "
                 "after `bash tools/setup.sh current`.", ""]
    path = book_dir / "results.md"
    path.write_text("\n".join(text) + "\n")
    return path
