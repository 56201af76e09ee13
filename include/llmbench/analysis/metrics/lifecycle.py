"""A target's life around its levels: time to ready, the first (cold) request's TTFT, and how much of
the billed endpoint time was spent measuring."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


def time_to_ready_s(events: Sequence[dict[str, Any]]) -> float | None:
    """Cold start (seed 003, seed 001's ~9 min to InService): seconds from the deploy's create call
    to the first readiness look that found the endpoint ready, from a target's events.jsonl rows:
    the last `deploy` `created` event (a retried deploy: the attempt whose endpoint was used) gives
    `deployed_at`, the first `wait_ready` `succeeded` event after it gives the time. None where the
    deploy created nothing (`creates_endpoint` false: an endpoint that already ran, a per-token
    API), where it never became ready, or for events written before deploys recorded `created`."""
    from datetime import datetime

    created = max((i for i, e in enumerate(events) if e.get("stage") == "deploy" and e.get("status") == "created"),
                  default=None)  # fmt: skip
    if created is None or not events[created].get("creates_endpoint", True):
        return None
    ready = next(
        (e for e in events[created + 1 :] if e.get("stage") == "wait_ready" and e.get("status") == "succeeded"), None
    )
    deployed_at = events[created].get("deployed_at")
    if ready is None or not deployed_at:
        return None
    return (datetime.fromisoformat(ready["at"]) - datetime.fromisoformat(deployed_at)).total_seconds()


# The stages during which a billed endpoint is being measured: everything else it is up for
# (deploy, the wait until ready, validation, teardown, the executor's gaps between tasks) is overhead.
MEASURING_STAGES = ("warm_up", "quality", "sweep")


def measuring_seconds(events: Sequence[dict[str, Any]]) -> float | None:
    """Seconds a target's endpoint spent being measured (issue 45), from its events.jsonl rows: for
    each of MEASURING_STAGES, from its last `started` event before its last `succeeded` one to that
    success (a failed or superseded try was billed but measured nothing: overhead). None when none
    of them succeeded."""
    from datetime import datetime

    total, found = 0.0, False
    for name in MEASURING_STAGES:
        done = max(
            (i for i, e in enumerate(events) if e.get("stage") == name and e.get("status") == "succeeded"), default=None
        )
        if done is None:
            continue
        start = max(
            (i for i, e in enumerate(events[:done]) if e.get("stage") == name and e.get("status") == "started"),
            default=None,
        )
        if start is None:
            continue
        began, ended = datetime.fromisoformat(events[start]["at"]), datetime.fromisoformat(events[done]["at"])
        total += (ended - began).total_seconds()
        found = True
    return total if found else None


def measuring_fraction(measuring_s: float | None, endpoint_s: float | None) -> float | None:
    """The share of the billed endpoint time that was spent measuring (measuring_seconds over the
    endpoint's seconds from deploy to teardown): 1 - the overhead the user pays for. None without
    either figure (a per-token API bills no endpoint time)."""
    if measuring_s is None or endpoint_s is None or endpoint_s != endpoint_s or endpoint_s <= 0:
        return None
    return measuring_s / endpoint_s


def first_request_ttft_ms(records: Iterable[Any]) -> float | None:
    """TTFT of the first request a target served, cold caches and all (seed 003): of the records
    given (the target's first warm-up, else its first level), the one sent first (smallest
    send_ns); None if it failed (its error is in the records) or there is none."""
    first = min(records, key=lambda r: r.send_ns, default=None)
    if first is None or not first.ok:
        return None
    return first.ttft_ms
