"""`python -m memfiles.cli` runs the memfiles command (used by benchmarks and tests)."""

from memfiles.cli.main import cli

cli()
