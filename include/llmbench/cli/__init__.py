"""The `llmbench` command: a parser and main() (main), one module per command (commands), and
what the commands share (output)."""

from llmbench.cli.main import build_parser, main

__all__ = ["build_parser", "commands", "main", "output"]
