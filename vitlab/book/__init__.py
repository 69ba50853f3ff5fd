"""The book pipeline, the top floor: it drives everything and imports no torch (that runs in the chapters' kernels).

- runner: `vitlab run` (papermill, one chapter per backend with an explicit context), the table of contents and
  the run each page shows, which book/_ext/page_titles.py adds to the page's title;
- figures: what each chapter figure shows, its alt text on the page (book/_ext/figure_alt.py fills it in);
- report: the results page, per stack and backend;
- lane: the GPU lane's caps and import;
- pages: a chapter page as a reader sees it, and the page budget it is held to;
- repeat: two runs of the same chapters on one machine, compared verdict by verdict.

The floors, no arrow pointing up: vitlab.contract (torch-free ground floor) < the lab library (vitlab.*) <
vitlab.workers < this package and the CLI (vitlab.cli, vitlab.__main__).
"""
