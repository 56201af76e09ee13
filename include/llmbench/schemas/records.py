"""The request record: one row of requests.jsonl / requests.parquet / the warehouse's `requests`
table, defined once. Each field declares its Arrow type next to it; the Parquet schema is derived
from the fields (request_schema), and tests/unit/test_layers.py checks the warehouse table against
it, so a column cannot be added to one place only.

Imports nothing of llmbench: the record builder process, the load generator and the metrics all
use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any


def _col(arrow: str) -> Any:
    """A record field and its Arrow type (a key of ARROW_TYPES)."""
    return field(metadata={"arrow": arrow})


@dataclass(slots=True)
class RequestRecord:
    """One request of a level: what happened (ok, or why not), its raw times (perf_counter_ns
    clock), and its timings (metrics.request_timings)."""

    concurrency: int = _col("int32")  # closed loop: the level's streams; open loop: its in-flight cap
    request_index: int = _col("int32")
    worker: int = _col("int32")  # the stream that sent it; -1 in an open-loop level
    ok: bool = _col("bool")
    error_kind: str | None = _col("string")  # metrics.ERROR_KINDS
    error_detail: str | None = _col("string")
    http_status: int | None = _col("int32")
    send_ns: int = _col("int64")
    first_content_ns: int | None = _col("int64")
    end_ns: int = _col("int64")
    send_lag_ms: float = _col("float64")  # how late it went out: the client's own lateness
    ttft_ms: float | None = _col("float64")
    e2e_ms: float = _col("float64")
    tpot_ms: float | None = _col("float64")
    itl_ms: list[float] = _col("list<float64>")  # gaps between the chunks that carried tokens
    content_chunks: int = _col("int32")
    output_tokens: int = _col("int32")
    output_tokens_source: str = _col("string")  # usage | counted
    output_tokens_counted: int = _col("int32")
    input_tokens: int | None = _col("int32")
    finish_reason: str | None = _col("string")
    repeat: int = _col("int32")
    arrival_rate_rps: float = _col("float64")  # open loop: the level's Poisson rate; 0: closed loop
    send_retried: bool = _col("bool")  # sent again on a fresh connection (the reused one had closed)
    # Issue 28 (the user's traffic); defaults: what a record written before them meant.
    session: int = field(default=-1, metadata={"arrow": "int32"})  # multi-turn: the session; -1 none
    turn_index: int = field(default=0, metadata={"arrow": "int32"})  # its turn in the session, 0 first
    history_chars: int = field(default=0, metadata={"arrow": "int32"})  # characters of earlier turns sent with it
    prefix_id: int = field(default=0, metadata={"arrow": "int32"})  # which shared prefix it carried (draw_prefix)
    scheduled_ms: float | None = field(default=None, metadata={"arrow": "float64"})  # open loop: due, ms after start
    # Issue 27 item 4 (tokens per chunk); defaults: a record written before, one token a chunk.
    # The tokens each chunk behind itl_ms carried (len(itl_ms) + 1 of them; [] for one each): with
    # speculation or batched output one chunk carries several, so per-token ITL is not the gap.
    chunk_tokens: list[int] = field(default_factory=list, metadata={"arrow": "list<int32>"})
    # usage: deltas of the cumulative usage each chunk carried (continuous_usage_stats);
    # content: no per-chunk usage, one token per non-empty content chunk assumed
    chunk_tokens_source: str = field(default="content", metadata={"arrow": "string"})
    # Issue 28 item 6: the prompt's tokens as the client counted them with the served model's
    # tokenizer (input_tokens is the server's count); None: not counted (words ~ tokens sizing, a
    # dataset prompt no tokenizer counted before its level).
    input_tokens_client: int | None = field(default=None, metadata={"arrow": "int32"})
    # Open loop: the part of send_lag_ms the arrival waited with every stream busy (the in-flight
    # cap held it, the server's pace, not the client's); send_lag_ms - stream_wait_ms is the
    # client's own lateness. 0: closed loop, or a record written before it was measured.
    stream_wait_ms: float = field(default=0.0, metadata={"arrow": "float64"})

    def to_row(self) -> dict[str, Any]:
        """The record as a plain dict, columns in order (a JSON line, a Parquet row)."""
        return dict(zip(COLUMNS, _values(self), strict=True))

    def values(self) -> tuple[Any, ...]:
        """The field values in column order: RequestRecord(*values) is the record again (what the
        record builder process sends back: a tuple pickles smaller and faster than an object)."""
        return _values(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RequestRecord:
        """A record from a dict with every column (a JSON line, a Parquet row); other keys are ignored."""
        return cls(**{name: row[name] for name in COLUMNS if name in row or name not in _DEFAULTED})


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(RequestRecord))
# Columns a record of an older run may lack (requests.jsonl written before them): their defaults.
_DEFAULTED = frozenset(
    (
        "session",
        "turn_index",
        "history_chars",
        "prefix_id",
        "scheduled_ms",
        "chunk_tokens",
        "chunk_tokens_source",
        "input_tokens_client",
    )
)
_values = attrgetter(*COLUMNS)


_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def schema_problem(record: RequestRecord) -> str | None:
    """Why `record` would not fit request_schema (a value of the wrong type, an integer out of its
    column's range, a missing value where the column is not nullable), or None when it fits.
    Checked field by field, without pyarrow: what the record builder asks of every record."""
    for f in fields(RequestRecord):
        v, arrow = getattr(record, f.name), f.metadata["arrow"]
        if v is None:
            if "None" not in str(f.type):
                return f"{f.name} is missing"
            continue
        if arrow in _INT_RANGE:
            lo, hi = _INT_RANGE[arrow]
            ok = type(v) is int and lo <= v <= hi
        elif arrow == "float64":
            ok = type(v) in (int, float)
        elif arrow == "bool":
            ok = type(v) is bool
        elif arrow == "string":
            ok = type(v) is str
        elif arrow == "list<int32>":
            ok = type(v) is list and all(type(x) is int and 0 <= x <= _INT_RANGE["int32"][1] for x in v)
        else:  # list<float64>
            ok = type(v) is list and all(type(x) in (int, float) for x in v)
        if not ok:
            return f"{f.name} {str(v)[:40]!r} is not {arrow}"
    return None


def request_schema():
    """The Parquet schema of requests.parquet, from the record's fields (explicit, so every level's
    batch has the same types whatever its values: a level with no failure still has a string
    error_kind column)."""
    import pyarrow as pa

    arrow = {
        "int32": pa.int32(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "string": pa.string(),
        "list<float64>": pa.list_(pa.float64()),
        "list<int32>": pa.list_(pa.int32()),
    }
    return pa.schema([(f.name, arrow[f.metadata["arrow"]]) for f in fields(RequestRecord)])


def to_table(records: list[RequestRecord]):
    """Records as a pyarrow Table of request_schema (column by column: no dict per row)."""
    import pyarrow as pa

    return pa.Table.from_pydict(
        {name: [getattr(r, name) for r in records] for name in COLUMNS}, schema=request_schema()
    )
