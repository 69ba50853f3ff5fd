"""Worker processes: programs the chapters start in their own interpreters (`python -m vitlab.workers.NAME`).

- ddp: one rank of the data-parallel training run under torchrun, and its launcher;
- serve: one serving instance that meets the others at a barrier and prints a JSON line per batch;
- train: trains and saves a digits model in a fresh interpreter (when IPEX is imported in the caller).

Workers build on the lab library (vitlab.*), which builds on the torch-free ground floor (vitlab.contract);
the book pipeline (vitlab.book) and the CLI sit above them.
"""
