"""The ground floor: the contract every other floor reads, torch-free (nothing under vitlab.contract imports torch).

- rows, store: the row contract and the append-only row files;
- findings: verdicts read from rows (ratio, noise band, status), glued into the chapters' prose;
- layout: where pages, rows and figures live per stack and backend, and the backends;
- text, paths: leaves (one-line messages, Markdown tables; the cache and the hub's reachability).

The lab library (vitlab.*) builds on this package, the workers (vitlab.workers.*) on the lab, and the book pipeline
(vitlab.book, the CLI) on top; no arrow points up.
"""
