"""``python -m wsserver.cli``: the ``wsserver`` command."""

from __future__ import annotations

import sys

from wsserver.cli.main import main

sys.exit(main())
