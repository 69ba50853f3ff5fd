"""The book pipeline, torch-free by this package's boundary: nothing under vitlab.book imports torch.

- rows, store: the row contract and the append-only row files;
- findings: verdicts read from rows (ratio, noise band, status), glued into the chapters' prose;
- report, layout: the results page and where pages, rows and figures live per stack and backend;
- runner: `vitlab run` (papermill, one chapter per backend with an explicit context) and the table of contents;
- lane: the GPU lane's caps and import;
- pages: a chapter page as a reader sees it, and the page budget it is held to;
- text, paths: leaves (one-line messages, Markdown tables; the cache and the hub's reachability).

The lab library (vitlab.*) builds on this package and the workers (vitlab.workers.*) on the lab; no arrow points up.
"""
