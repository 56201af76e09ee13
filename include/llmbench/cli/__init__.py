"""The `llmbench` command: a parser and one function per command (main)."""

from llmbench.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
