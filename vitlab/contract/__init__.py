"""The ground floor: the contract every other floor reads, torch-free (nothing under vitlab.contract imports torch).

- rows, store: the row contract and the append-only row files;
- findings: verdicts read from rows (ratio, noise band, status), glued into the chapters' prose;
- layout: where pages, rows and figures live per stack and backend, and one Backend record per backend;
- chapters: the chapter table (file pattern, the name rule, the GPU chapters, the presets);
- context: the RunContext, a chapter run's one papermill parameter;
- gpus: GPUs by name (data-sheet peaks, the short name in page titles);
- text, paths: leaves (one-line messages, Markdown tables; the cache and the hub's reachability).

The lab library (vitlab.*) builds on this package, the workers (vitlab.workers.*) on the lab, and the book pipeline
(vitlab.book, the CLI) on top; no arrow points up.
"""
