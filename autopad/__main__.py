"""``python -m autopad COMMAND ...``: the same command line as the ``autopad`` console script (autopad.cli).

Why a module entry point: it works where the console script is not on PATH (a virtual environment that is
not activated, a checkout on PYTHONPATH) and names the interpreter explicitly.
"""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
