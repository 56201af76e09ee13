"""What a run leaves and what is made of it: stage events (events), the tables (tables) and the
traffic-weighted cost rows in them (traffic), their validation (validation), the HTML report
(report), the weekly history page (history), recomputation from raw results (reprocess), what a
date's publish keeps from earlier attempts (union), retention of raw results (retention), the
code version stamped on every row (codeversion), and where a task works: the store's folders or a
local copy of them (workspace)."""

__all__ = [
    "codeversion",
    "events",
    "history",
    "report",
    "reprocess",
    "retention",
    "tables",
    "traffic",
    "union",
    "validation",
    "workspace",
]
