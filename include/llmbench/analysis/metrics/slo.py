"""The SLO: whether a request or a level meets the user's objectives, and goodput."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llmbench.analysis.metrics.requests import per_token_itl_ms
from llmbench.schemas.slo import Slo

if TYPE_CHECKING:
    from llmbench.schemas.records import RequestRecord


def goodput(records: Sequence[RequestRecord], window_s: float, slo: Slo | None) -> dict[str, Any]:
    """Goodput as DistServe and vLLM's `--goodput` define it: the requests that met every
    objective of the SLO (request_meets_slo) per second of the level's window, and their output
    tokens per second; and slo_latency_met, whether the level's own percentiles meet every
    objective (latency_objectives_met). All None without an SLO or a window."""
    keys = ("goodput_rps", "goodput_output_tokens_per_s", "slo_latency_met")
    if slo is None or window_s <= 0:
        return dict.fromkeys(keys)
    good = [r for r in records if request_meets_slo(r, slo)]
    return {
        "goodput_rps": len(good) / window_s,
        "goodput_output_tokens_per_s": sum(r.output_tokens for r in good) / window_s,
        "slo_latency_met": latency_objectives_met(records, slo),
    }


def _request_values(record: RequestRecord, metric: str) -> list[float]:
    """One request's values of an SLO metric: its ttft, tpot or e2e (one value, none where
    undefined), or its per-token inter-token latencies (itl: per_token_itl_ms, as the level's itl_ms_*)."""
    if metric == "itl":
        return per_token_itl_ms(record.itl_ms, record.chunk_tokens)
    v = getattr(record, f"{metric}_ms")
    return [] if v is None else [float(v)]


def request_meets_slo(record: RequestRecord, slo: Slo) -> bool:
    """A successful request within every objective of the SLO, each judged on the request's own
    value (vLLM's goodput: ttft, tpot, e2e per request); an ITL objective on the objective's
    percentile of the request's own gaps. A value the request does not have (tpot of a one-token
    answer, ITL of a one-chunk one) does not count against it; a request with no first token fails."""
    if not record.ok or record.ttft_ms is None:
        return False
    for o in slo.objectives_list():
        vals = _request_values(record, o.metric)
        if not vals:
            continue
        v = vals[0] if len(vals) == 1 else float(np.percentile(vals, o.percentile))
        if v > o.max_ms:
            return False
    return True


def latency_objectives_met(records: Sequence[RequestRecord], slo: Slo) -> bool | None:
    """Whether a level's latencies meet every objective: for each, the objective's percentile
    (linear interpolation, as distribution) of the metric over the level's successful requests
    (ITL: over all their gaps) is at most its threshold. None when no request succeeded."""
    ok = [r for r in records if r.ok]
    if not ok:
        return None
    for o in slo.objectives_list():
        vals = [v for r in ok for v in _request_values(r, o.metric)]
        if not vals:
            if o.metric == "ttft":  # every successful request had no first token: nothing met it
                return False
            continue
        if float(np.percentile(np.asarray(vals, dtype=float), o.percentile)) > o.max_ms:
            return False
    return True


def meets_slo(record: RequestRecord, slo_ttft_ms: float, slo_tpot_ms: float) -> bool:
    """A successful request whose ttft and tpot are both within the SLO (tpot of a one-token
    answer is undefined and does not count against it)."""
    return (
        record.ok
        and record.ttft_ms is not None
        and record.ttft_ms <= slo_ttft_ms
        and (record.tpot_ms is None or record.tpot_ms <= slo_tpot_ms)
    )


def level_meets_slo(level: dict[str, Any], slo: Slo, max_error_rate: float) -> bool:
    """A level meets the SLO when its latencies meet every objective and its error rate is within
    the validation bound. (A level, not a request: see request_meets_slo for one request.) The
    latencies: the level's slo_latency_met (latency_objectives_met, computed from its records
    when the row was built with this SLO); for a row without it, each objective's
    `<metric>_ms_p<percentile>` column, and a percentile the row does not have fails."""
    latency = level.get("slo_latency_met")
    if latency is None or latency != latency:  # None or NaN: judge on the row's columns
        values = [level.get(f"{o.metric}_ms_p{o.percentile:g}") for o in slo.objectives_list()]
        latency = all(
            v is not None and v == v and v <= o.max_ms for v, o in zip(values, slo.objectives_list(), strict=True)
        )
    return bool(latency and (level.get("error_rate") or 0) <= max_error_rate)
