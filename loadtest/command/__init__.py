"""The one load-test command, ``python -m loadtest SCENARIO`` (see ``loadtest/README.md``)."""
