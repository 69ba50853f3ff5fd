"""`python -m vitlab ...`: the `vitlab` command without its console script (e.g. a checkout on PYTHONPATH)."""
import sys

from vitlab.cli import main

sys.exit(main())
