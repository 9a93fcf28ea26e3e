"""``python -m loadtest SCENARIO``: see :mod:`loadtest.command.main`."""

from __future__ import annotations

import sys

from loadtest.command.main import main

if __name__ == "__main__":
    sys.exit(main())
