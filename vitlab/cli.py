"""The `vitlab` command: env, run, check-rows, compare-runs, book."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr and exit 2 (no usage dump)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _env(args) -> int:
    from vitlab import ipex
    from vitlab.device import BackendError, pick_device
    from vitlab.machine import describe
    try:
        device = pick_device(args.backend)
    except BackendError as error:
        print(f"vitlab env: {error}", file=sys.stderr)
        return 2
    info = describe(device)
    info["ipex"] = ipex.status()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    peak = info["peak_fp32_flops"]
    print(f"device     {info['device']} ({info['backend']}): {info['device_name']}")
    print(f"cpu        {info['cpu']}, ISA {info['cpu_isa']}, {info['threads']} threads")
    print(f"memory     {info['memory_gb']} GB")
    print(f"bf16       {'native' if info['bf16_native'] else 'emulated (no native bf16)'}")
    print(f"peak fp32  {'unknown' if peak is None else f'{peak / 1e9:.0f} GFLOP/s'} ({info['peak_basis']})")
    print(f"torch      {info['versions']['torch']} ({info['torch_build']} build)")
    print(f"backends   {', '.join(info['available_backends'])}")
    print("versions   " + ", ".join(f"{k} {v or '-'}" for k, v in info["versions"].items()))
    print(f"ipex       {info['ipex']}")
    return 0


def _run(args) -> int:
    """Resolve every argument once (a bad one: one line, exit 2, nothing touched), then run the chapters."""
    from vitlab.book import runner as book
    from vitlab.contract import layout
    from vitlab.contract.chapters import PRESET_NAMES
    try:
        if args.preset not in PRESET_NAMES:
            raise ValueError(f"unknown preset {args.preset!r}: choose one of {', '.join(PRESET_NAMES)}")
        notebooks = book.select(args.only)
        from vitlab.device import backend_name, pick_device
        device = pick_device(args.backend)  # BackendError is a ValueError
        book_dir = layout.ROOT / "book" if args.into is None else book.writable_folder(args.into)
    except (ValueError, KeyError) as error:
        message = error.args[0] if isinstance(error, KeyError) else error
        print(f"vitlab run: {message}", file=sys.stderr)
        return 2
    outcomes = book.run(device.type, backend_name(device), args.preset, notebooks, book.stack(), book_dir)
    failed = [o for o in outcomes if not o.ok]
    if args.summary:  # for a program (the GPU lane): the outcomes as data, not the lines above
        from dataclasses import asdict
        args.summary.write_text(json.dumps([asdict(o) for o in outcomes]))
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} notebooks ran"
          + (f"; failed: {', '.join(o.notebook for o in failed)}" if failed else ""))
    return 1 if failed else 0


def _book(args) -> int:
    import subprocess

    from vitlab.book import runner as book
    try:
        index = book.build()
    except subprocess.CalledProcessError as error:
        print(f"vitlab book: jupyter-book failed (exit {error.returncode}); see the messages above", file=sys.stderr)
        return 1
    print(f"book: {index}")
    return 0


def _check_rows(args) -> int:
    """The rows of one stack under a book folder keep the contract (results.row_problems); the current stack has no
    IPEX. Exit 1 when there are no rows or any problem."""
    from vitlab.contract import layout
    from vitlab import results
    rows = results.latest_runs(results.load(layout.rows_dir(args.stack, args.book_dir or layout.ROOT / "book")))
    problems = results.row_problems(rows)
    if args.stack == "current":
        problems += [f"{r.get('notebook')}: row {r.get('variant')!r} ran with IPEX {r['versions']['ipex']} on the "
                     "current stack" for r in rows if (r.get("versions") or {}).get("ipex")]
    torch_versions = sorted({str((r.get("versions") or {}).get("torch")) for r in rows})
    print(f"{args.stack} stack: {len(rows)} result rows (latest runs) from {len({r.get('notebook') for r in rows})} "
          f"notebooks, torch {', '.join(torch_versions) or '-'}")
    print("\n".join(problems) if problems else "no rows" if not rows else
          "every comparison group has exactly one baseline row; no skipped or failed row carries a timing")
    return 1 if problems or not rows else 0


def _compare_runs(args) -> int:
    """Two runs of the same chapters: every comparison's two verdicts and the tally (--save: also as JSON)."""
    from vitlab.book import repeat
    try:
        first, second = (repeat.load_rows(path, rounds_only=args.rounds_only) for path in (args.first, args.second))
    except (OSError, ValueError) as error:
        print(f"vitlab compare-runs: {error}", file=sys.stderr)
        return 2
    matched = repeat.pairs(first, second)
    if not matched:
        print("vitlab compare-runs: the two runs share no comparison (same notebook, model, variant, batch)",
              file=sys.stderr)
        return 2
    said = repeat.summary(matched, first)
    if args.machine:
        said["machine"] = args.machine
    print("\n".join(repeat.lines(matched, said)))
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(said, indent=1) + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from vitlab.contract.layout import BACKEND_CHOICES as CHOICES, STACKS
    parser = _Parser(prog="vitlab", description="Run the vitlab book's notebooks and report the machine.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    env = commands.add_parser("env", help="print the hardware/software report")
    env.add_argument("--backend", default="auto", help=f"one of {', '.join(CHOICES)} (default auto)")
    env.add_argument("--json", action="store_true", help="print the report as JSON")
    env.set_defaults(handler=_env)
    run = commands.add_parser("run", help="execute the chapters with papermill into book/<backend>/")
    run.add_argument("--backend", default="auto", help=f"one of {', '.join(CHOICES)} (default auto)")
    run.add_argument("--preset", default="quick",
                     help="quick (minutes on 2 CPU cores), full (the seeds' settings) or gpu "
                          "(one GPU: chapters 01, 02 and 04 sized for about 8 minutes on an H200)")
    run.add_argument("--only", nargs="+", metavar="NAME", help="run only these notebooks (e.g. 02 or 02_torch_compile)")
    run.add_argument("--into", type=Path, metavar="DIR",
                     help="write executed notebooks and result rows under DIR instead of the book")
    run.add_argument("--summary", type=Path, metavar="FILE", help="also write the outcomes as JSON to FILE")
    run.set_defaults(handler=_run)
    check = commands.add_parser("check-rows", help="check that a book folder's result rows keep the row contract")
    check.add_argument("--stack", default="reference", choices=STACKS,
                       help="whose rows: reference (default) or current")
    check.add_argument("book_dir", nargs="?", type=Path, metavar="DIR",
                       help="a book folder, e.g. `vitlab run --into`'s DIR (default: the book)")
    check.set_defaults(handler=_check_rows)
    again = commands.add_parser("compare-runs", help="compare two runs of the same chapters, verdict by verdict")
    again.add_argument("first", type=Path, metavar="A", help="a result-row file (.jsonl) or a folder of them")
    again.add_argument("second", type=Path, metavar="B", help="the other run's rows")
    again.add_argument("--save", type=Path, metavar="FILE",
                       help="also write the tally as JSON (the results page reads book/results/repeatability*.json)")
    again.add_argument("--machine", metavar="NAME",
                       help="the machine as the tally names it (default: the rows' CPU name, ISA and threads)")
    again.add_argument("--rounds-only", action="store_true",
                       help="judge the rows on their rounds alone, as if they carried no run-to-run spread: the "
                            "calibration's last column is then the spread RUN_TO_RUN should hold")
    again.set_defaults(handler=_compare_runs)
    book = commands.add_parser("book", help="build the HTML book into _build/html (offline, strict)")
    book.set_defaults(handler=_book)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
