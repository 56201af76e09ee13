"""What the Asset `llmbench_price_performance` says when llm_benchmark emits it: the contract
between a run and whatever it triggers (the dashboard DAG, a user's own DAGs). Emitted by the
`check` task only, after check passed, so an event means the run's own targets landed and are
sound; its `extra` is this model as JSON. Never credentials: the warehouse is named by kind and
Airflow connection id (or a DuckDB file's path)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["AssetWarehouse", "PublishedAsset"]


class AssetWarehouse(BaseModel):
    """Where the rows landed, without credentials."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["duckdb", "postgres", "redshift"]
    conn_id: str | None = None  # postgres / redshift: the Airflow connection published through
    path: str | None = None  # duckdb: the file

    @model_validator(mode="after")
    def _named(self) -> AssetWarehouse:
        if (self.kind == "duckdb") != (self.path is not None) or (self.kind != "duckdb") != (self.conn_id is not None):
            raise ValueError(f"a {self.kind} warehouse is named by {'path' if self.kind == 'duckdb' else 'conn_id'}")
        return self


class PublishedAsset(BaseModel):
    """The Asset event's extra (version 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    contract: Literal[1] = 1
    run_key: str
    logical_date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    config: str  # the config's name
    status: Literal["succeeded", "partial", "failed"]  # runs.status: over every published target
    targets: list[str]  # every target the run key's rows hold now
    targets_replaced: list[str]  # those this run ran (the others kept their earlier rows)
    rows: dict[str, int]  # rows written per warehouse table
    warehouse: AssetWarehouse

    @model_validator(mode="after")
    def _replaced_are_published(self) -> PublishedAsset:
        if not set(self.targets_replaced) <= set(self.targets):
            raise ValueError(f"targets_replaced {sorted(set(self.targets_replaced) - set(self.targets))} not published")
        return self
