"""Rebuild or refresh the semantic index: a thin wrapper over `memfiles backfill` (same options)."""

from memfiles.cli.main import cli

if __name__ == "__main__":
    cli(["backfill", *__import__("sys").argv[1:]])
