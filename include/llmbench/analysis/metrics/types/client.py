"""The load generator's health over a level: its CPU, its send lateness split in two, its wait for
a core, whether it was starved of one, and whether it was saturated (a level that measured the
client, not the server, fails validation). The rules are metrics.client's."""

from __future__ import annotations

from typing import Any

from llmbench.analysis.metrics.client import client_saturated, client_starved, send_lateness_split
from llmbench.analysis.metrics.types.base import Level, LevelFigures, LevelMetric, register

__all__ = ["ClientCpuPct", "ClientRunqueuePct", "ClientSaturated", "ClientStarved", "SendLateness"]


@register
class ClientCpuPct(LevelMetric):
    tag = "client_cpu_pct"
    header = "Client CPU (%)"
    unit = "% of a core"
    definition = "the load generator's CPU (its record builder included) / the window, per core it may use"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float | None:
        return (
            100.0 * level.client_cpu_s / level.window_s
            if level.client_cpu_s is not None and level.window_s > 0
            else None
        )


@register
class ClientRunqueuePct(LevelMetric):
    tag = "client_runqueue_pct"
    header = "Client waiting for a core (%)"
    unit = "% of the window"
    definition = "how long the client's event loop waited for a core / the window"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> float | None:
        if level.client_runqueue_s is None or level.window_s <= 0:
            return None
        return 100.0 * level.client_runqueue_s / level.window_s


@register
class SendLateness(LevelFigures):
    tag = "send_lateness"
    header = "Send lateness"
    unit = "ms"
    definition = (
        "send lag in its two parts, p99 over every attempted request: the client's own lag, and the wait "
        "for a free stream; in_flight_capped: that wait's p99 > 10 ms (metrics.send_lateness_split)"
    )
    parts = {
        "client_lag_ms_p99": ("Client lag p99 (ms)", "ms"),
        "stream_wait_ms_p99": ("Stream wait p99 (ms)", "ms"),
        "in_flight_capped": ("In-flight cap held arrivals", "bool"),
    }

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> dict[str, Any]:
        return send_lateness_split(level.records)


@register
class ClientStarved(LevelMetric):
    tag = "client_starved"
    header = "Client starved"
    kind = "bool"
    definition = "the client waited for a core at least as long as it ran (metrics.client_starved)"

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> bool:
        return client_starved(level.client_runqueue_s, level.client_cpu_s)


@register
class ClientSaturated(LevelMetric):
    tag = "client_saturated"
    header = "Client saturated"
    kind = "bool"
    definition = "the load generator, not the server, may have set the level's pace (metrics.client_saturated)"
    allowed = (False,)

    @classmethod
    def compute(cls, level: Level, row: dict[str, Any]) -> bool:
        return client_saturated(row["client_cpu_pct"], row["client_lag_ms_p99"], row["client_starved"])
