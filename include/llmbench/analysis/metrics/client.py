"""The load generator's own health: whether a level's client was saturated or starved, how its send
lateness splits between the in-flight cap's wait and its own lag, and whether an open-loop level
went out as scheduled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from llmbench.schemas.records import RequestRecord

# A level's client is saturated when its load generator could not keep up: its processes kept the
# cores they may use busy, or free workers waited to send. Such a level measured the client, not
# the server, and validation fails it. 70 %, not 100 %: client CPU counts the record builder,
# which runs at idle priority, and make bench (benchmarks/results/client_fidelity.md) saw the
# timings hold at 25-55 % and drift once client and server together filled both cores (1024
# streams).
CLIENT_CPU_SATURATED_PCT = 70.0


# Send lateness splits in two (records.stream_wait_ms): the wait for a free stream (every one of
# an open-loop level's max_in_flight busy: the server's pace held the arrival, so the level was
# not offered as scheduled, `in_flight_capped`) and the client's own lag after a stream was free.
# Only the client's own lag can mean a saturated client.
SEND_LAG_SATURATED_MS_P99 = 10.0


IN_FLIGHT_CAPPED_MS_P99 = 10.0


# A client that waited for a core (the kernel's run-queue wait of its event loop's thread) at
# least as long as it ran was starved by the work beside it (on one machine: the server it
# measures), not saturated by its own: its lateness is the machine's, its own CPU is idle, and
# more load would not be its limit. Up to STARVED_LAG_MS_P99_MAX such lateness is excused (a few
# ms against the hundreds a TTFT SLO is written in); beyond it the level is saturated all the same.
STARVED_RUNQUEUE_PER_CPU = 1.0


STARVED_LAG_MS_P99_MAX = 100.0


def send_lateness_split(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """A level's send lateness in its two parts: stream_wait_ms_p99 (arrivals held with every
    stream busy: the in-flight cap, the server's pace), client_lag_ms_p99 (send lag less that wait:
    the client's own), and in_flight_capped (the cap held arrivals back: not offered as scheduled)."""
    if not records:
        return {"client_lag_ms_p99": None, "stream_wait_ms_p99": None, "in_flight_capped": False}
    waits = np.asarray([r.stream_wait_ms for r in records], dtype=float)
    own = np.asarray([r.send_lag_ms for r in records], dtype=float) - waits
    wait_p99 = float(np.percentile(waits, 99))
    return {
        "client_lag_ms_p99": float(np.percentile(np.maximum(own, 0.0), 99)),
        "stream_wait_ms_p99": wait_p99,
        "in_flight_capped": wait_p99 > IN_FLIGHT_CAPPED_MS_P99,
    }


def client_starved(client_runqueue_s: float | None, client_cpu_s: float | None) -> bool:
    """True when the client's event loop waited for a core at least as long as the client ran
    (STARVED_RUNQUEUE_PER_CPU): the work beside it, not its own, held it back."""
    if client_runqueue_s is None or client_cpu_s is None:
        return False
    return client_runqueue_s >= STARVED_RUNQUEUE_PER_CPU * client_cpu_s and client_runqueue_s > 0


def client_saturated(client_cpu_pct: float | None, client_lag_ms_p99: float | None, starved: bool = False) -> bool:
    """True when the load generator, not the server, may have set the pace of a level: it kept
    its cores busy, or it sent late with a stream free (its own lag, not the in-flight cap's wait)
    and was not merely starved of a core by the work beside it (up to STARVED_LAG_MS_P99_MAX)."""
    if client_cpu_pct is not None and client_cpu_pct >= CLIENT_CPU_SATURATED_PCT:
        return True
    if client_lag_ms_p99 is None or client_lag_ms_p99 <= SEND_LAG_SATURATED_MS_P99:
        return False
    return not starved or client_lag_ms_p99 > STARVED_LAG_MS_P99_MAX


def offered_as_scheduled(send_lag_ms_p99: float | None, bound_ms: float) -> bool | None:
    """Whether an open-loop level went out on time: its send lateness (send lag: actual send minus
    scheduled, connecting excluded) p99 within the bound; None without a sent request."""
    return None if send_lag_ms_p99 is None else send_lag_ms_p99 <= bound_ms
