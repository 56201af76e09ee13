"""The `llmbench` commands, one module each: `add_parser(sub)` declares the command and its flags,
`run(args)` does it and returns its exit status, or raises an LlmbenchError, which
llmbench.cli.main turns into the error's exit status and one line.

Commands: sweep, plan, show, history, rebuild, publish, reprocess, prune, settings."""

from llmbench.cli.commands import history, plan, prune, publish, rebuild, reprocess, settings, show, sweep

# In the order `llmbench --help` lists them.
COMMANDS = (sweep, plan, show, history, rebuild, publish, reprocess, prune, settings)

__all__ = ["COMMANDS", "history", "plan", "prune", "publish", "rebuild", "reprocess", "settings", "show", "sweep"]
