"""``python -m wsserver.cli``: the ``wsserver`` command."""

from wsserver.cli.main import main

main()
