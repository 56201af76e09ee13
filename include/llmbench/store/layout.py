"""Where a run key's attempts and their targets live under a results store's root.

Two layouts, one shape (runs / run key / attempt / target / file):
- LEGACY, a local data folder's: runs/<run key>/<attempt>/<target id>/ (as before the store);
- HIVE, an object store's: runs/date=YYYY-MM-DD/run_key=<run key>/attempt=<attempt>/target=<id>/,
  so that Athena or Glue read requests.parquet and levels.parquet with the date, run key, attempt
  and target as partition columns, without the project.
A task's local working copy (llmbench.store.scratch) always mirrors LEGACY, which the code reading
raw results expects.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HIVE", "LEGACY", "Layout"]


@dataclass(frozen=True)
class Layout:
    name: str
    hive: bool

    @staticmethod
    def date_of(run_key: str) -> str:
        """A run key's logical date: its last ten characters (`<config name>-<YYYY-MM-DD>`)."""
        return run_key[-10:]

    def _part(self, field: str, value: str) -> str:
        return f"{field}={value}" if self.hive else value

    def run_key_prefix(self, run_key: str) -> str:
        """Where every attempt of a run key lives."""
        if self.hive:
            return f"runs/date={self.date_of(run_key)}/run_key={run_key}"
        return f"runs/{run_key}"

    def attempt(self, run_key: str, stamp: str) -> str:
        return f"{self.run_key_prefix(run_key)}/{self._part('attempt', stamp)}"

    def target(self, attempt_key: str, target_id: str) -> str:
        return f"{attempt_key.rstrip('/')}/{self._part('target', target_id)}"

    def name_of(self, folder_key: str) -> str:
        """The attempt stamp or target id a folder key ends with."""
        last = folder_key.rstrip("/").rsplit("/", 1)[-1]
        return last.split("=", 1)[1] if self.hive and "=" in last else last

    def runs_prefix(self) -> str:
        return "runs"


LEGACY = Layout("legacy", hive=False)
HIVE = Layout("hive", hive=True)
