"""What a metric is: one class per metric (after aiperf's metrics/types), carrying its column (tag),
how a person reads it (header, unit, cell format), its one-line definition, how it is computed from
a level's records, and the bounds Great Expectations holds it to. `Level` is the view of one level's
records every metric computes from; `register` adds a class to the one registry (REGISTRY)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from llmbench.analysis.metrics.requests import PERCENTILES, distribution

if TYPE_CHECKING:
    from llmbench.schemas.records import RequestRecord
    from llmbench.schemas.slo import Slo

__all__ = [
    "REGISTRY",
    "STATS",
    "Level",
    "LevelBased",
    "LevelFigures",
    "LevelMetric",
    "Metric",
    "RequestMetric",
    "TargetMetric",
    "by_repeat",
    "register",
]

# A distribution's columns: <tag>_p50 ... <tag>_max (metrics.distribution), in this order.
STATS = (*(f"p{p}" for p in PERCENTILES), "mean", "min", "max")


def by_repeat(records: Sequence[RequestRecord]) -> list[list[RequestRecord]]:
    """A level's records grouped by repeat (a repeat is a run of the level of its own, with its own window)."""
    groups: dict[int, list[RequestRecord]] = {}
    for r in records:
        groups.setdefault(r.repeat or 0, []).append(r)
    return list(groups.values())


@dataclass(frozen=True)
class Level:
    """One level's request records and what every metric of it shares: the successful ones (`ok`)
    and the window, first send -> last completion, summed over the level's repeats (the pauses
    between repeats are nobody's throughput). client_cpu_s and client_runqueue_s: the load
    generator's CPU and run-queue wait over the level (None: not measured); slo: the objectives
    goodput is judged against (None: no SLO)."""

    records: Sequence[RequestRecord]
    ok: list[RequestRecord] = field(default_factory=list)
    window_s: float = 0.0
    client_cpu_s: float | None = None
    client_runqueue_s: float | None = None
    slo: Slo | None = None

    @classmethod
    def of(
        cls,
        records: Sequence[RequestRecord],
        client_cpu_s: float | None = None,
        client_runqueue_s: float | None = None,
        slo: Slo | None = None,
    ) -> Level:
        window_s = sum((max(r.end_ns for r in g) - min(r.send_ns for r in g)) / 1e9 for g in by_repeat(records))
        return cls(records, [r for r in records if r.ok], window_s, client_cpu_s, client_runqueue_s, slo)

    def per_s(self, amount: float) -> float | None:
        """amount / the window, None for a level without one."""
        return amount / self.window_s if self.window_s > 0 else None


class Metric:
    """One metric. tag: its column (for a distribution, the stem of <tag>_p50 ...); header: what a
    person reads (a distribution's, without its statistic); unit: the tag's unit in words; kind: how
    a report cell writes it (results.report.cells.fmt); definition: one line, the docs' table's.
    Bounds (Great Expectations, results.validation): not_null, min_value (strict_min: above it),
    max_value, max_setting (a run setting that bounds it from above: error_rate's max_error_rate),
    allowed (the only values it may take)."""

    tag: ClassVar[str]
    header: ClassVar[str]
    unit: ClassVar[str] = ""
    kind: ClassVar[str] = "num"
    definition: ClassVar[str]
    not_null: ClassVar[bool] = False
    min_value: ClassVar[float | None] = None
    strict_min: ClassVar[bool] = False
    max_value: ClassVar[float | None] = None
    max_setting: ClassVar[str | None] = None
    allowed: ClassVar[tuple[Any, ...] | None] = None

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return (cls.tag,)

    @classmethod
    def label(cls, column: str) -> str:
        return cls.header

    @classmethod
    def kind_of(cls, column: str) -> str:
        return cls.kind

    @classmethod
    def bounds(cls) -> str:
        """The bounds in words, for the docs' table."""
        said = (["not null"] if cls.not_null else []) + (
            [f"{'>' if cls.strict_min else '>='} {cls.min_value:g}"] if cls.min_value is not None else []
        )
        if cls.max_value is not None:
            said.append(f"<= {cls.max_value:g}")
        if cls.max_setting:
            said.append(f"<= the run's {cls.max_setting}")
        if cls.allowed is not None:
            said.append("one of " + ", ".join(str(a) for a in cls.allowed))
        return ", ".join(said)


class LevelBased(Metric):
    """A metric of a level's row (metrics.levels.LEVEL_ROW)."""

    @classmethod
    def values(cls, level: Level, row: dict[str, Any]) -> dict[str, Any]:
        """This metric's column(s) of the level's row; `row` holds what was computed before it."""
        raise NotImplementedError


class TargetMetric(Metric):
    """A figure of a whole target, one column of its targets row, computed from what its life left
    (types.lifecycle.TargetLife) and the row so far."""

    @classmethod
    def compute(cls, life: Any, row: dict[str, Any]) -> Any:
        raise NotImplementedError

    @classmethod
    def of(cls, life: Any, row: dict[str, Any]) -> dict[str, Any]:
        return {cls.tag: cls.compute(life, row)}


class LevelMetric(LevelBased):
    """A figure of the whole level: one column, computed from the Level (and the row so far)."""

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> Any:
        raise NotImplementedError

    @classmethod
    def values(cls, level: Level, row: dict[str, Any]) -> dict[str, Any]:
        return {cls.tag: cls.compute(level, row)}


class LevelFigures(LevelBased):
    """Several figures of the level computed together, in one pass over its records (steady state,
    goodput, ...): parts maps each column to its (header, cell format); compute returns them all."""

    parts: ClassVar[dict[str, tuple[str, str]]]

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(cls.parts)

    @classmethod
    def label(cls, column: str) -> str:
        return cls.parts[column][0]

    @classmethod
    def kind_of(cls, column: str) -> str:
        return cls.parts[column][1]

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def values(cls, level: Level, row: dict[str, Any]) -> dict[str, Any]:
        return cls.compute(level, row)


class RequestMetric(LevelBased):
    """A figure of each request (a column of the requests table when `in_table`), which a level
    sums up as a distribution (<tag>_p50 ... <tag>_max, when `stats`) over `over`: the successful
    requests ("ok") or every attempted one ("all"). The bounds hold each request's value, over
    the rows `checked`; level_checked: the level's <tag>_p50 is not null and its percentiles rise."""

    over: ClassVar[str] = "ok"
    checked: ClassVar[str] = "ok"
    in_table: ClassVar[bool] = True
    stats: ClassVar[bool] = True
    level_checked: ClassVar[bool] = False

    @classmethod
    def sample(cls, r: RequestRecord) -> Iterable[float | None]:
        """The request's value(s): one, or several (per-token ITL: one per token)."""
        return (getattr(r, cls.tag),)

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f"{cls.tag}_{s}" for s in STATS) if cls.stats else ()

    @classmethod
    def label(cls, column: str) -> str:
        stat = column.removeprefix(cls.tag + "_")
        return f"{cls.header} {stat} ({cls.unit})" if cls.unit else f"{cls.header} {stat}"

    @classmethod
    def values(cls, level: Level, row: dict[str, Any]) -> dict[str, Any]:
        rows = level.ok if cls.over == "ok" else level.records
        return distribution((v for r in rows for v in cls.sample(r)), cls.tag)


REGISTRY: dict[str, type[Metric]] = {}
M = TypeVar("M", bound=type[Metric])


def register(cls: M) -> M:
    """Add a metric class to REGISTRY under its tag (a tag defined twice is a mistake: it raises)."""
    if cls.tag in REGISTRY:
        raise ValueError(f"metric {cls.tag!r} is defined twice: {REGISTRY[cls.tag].__name__} and {cls.__name__}")
    REGISTRY[cls.tag] = cls
    return cls
