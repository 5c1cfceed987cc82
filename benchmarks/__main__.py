"""``python -m benchmarks``: run the benchmarks and write docs/benchmarks.md (run_all.py)."""

import sys

from benchmarks.run_all import main

sys.exit(main())
