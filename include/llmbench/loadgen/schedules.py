"""When a level's requests are due (in the spirit of guidellm's scheduler strategies): a closed loop
of `concurrency` streams (ClosedLoop), Poisson or shaped open-loop arrivals at a rate with at most
`cap` in flight (PoissonArrivals), or a trace's own arrival times (TraceArrivals); the seeded
arrival offsets they draw (poisson_offsets_s, arrival_offsets_s, shaped_offsets_s), and the
number that keys a multi-turn session's turn (session_turn_key). The driver runs any of them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from llmbench.schemas.dataset import Trace


def poisson_offsets_s(rate_rps: float, key: str) -> Iterator[float]:
    """Arrival times (seconds after the level starts) of a Poisson process of rate_rps: the sum of
    exponential gaps of mean 1 / rate_rps. Seeded by key, so a level's arrivals are the same on
    every run of the same config."""
    import random

    rng = random.Random(key)
    t = 0.0
    while True:
        t += rng.expovariate(rate_rps)
        yield t


def arrival_offsets_s(rate_rps: float, key: str, kind: str = "poisson", burstiness: float = 1.0) -> Iterator[float]:
    """Arrival times (seconds after the level starts) at a mean of rate_rps, seeded by key. Gaps:
    poisson, exponential of mean 1 / rate; gamma, of shape k = burstiness and scale 1 / (rate k),
    so the mean gap is still 1 / rate and its coefficient of variation 1 / sqrt(k) (vLLM's
    --burstiness: 1 is Poisson, below 1 burstier); constant, 1 / rate each."""
    if kind == "poisson":
        yield from poisson_offsets_s(rate_rps, key)
        return
    import random

    rng = random.Random(key)
    scale = 1.0 / (rate_rps * burstiness)
    t = 0.0
    while True:
        t += rng.gammavariate(burstiness, scale) if kind == "gamma" else 1.0 / rate_rps
        yield t


def shaped_offsets_s(offsets: Iterator[float], step_s: float, multipliers: tuple[float, ...]) -> Iterator[float]:
    """Arrival times under a rate shape: each offset is read as time at the level's base rate and
    mapped to the clock time by which the shaped rate (multiplier m_k over step k; the last holds)
    has delivered as much: u = integral of m over [0, t]. A multiplier of 2 halves the gaps, 0 is
    an idle step. Monotone, so one pass over the steps serves the whole level."""
    k, t_k, u_k = 0, 0.0, 0.0  # the current step, its start (clock s) and the base time before it
    last = len(multipliers) - 1
    for u in offsets:
        while k < last and u_k + multipliers[k] * step_s < u:
            u_k += multipliers[k] * step_s
            t_k += step_s
            k += 1
        yield t_k + (u - u_k) / multipliers[k]


def session_turn_key(number: int, turn: int) -> int:
    """One number for turn `turn` of session (or dataset row) `number`, distinct for every pair
    (MultiTurn.max_turns is at most 1000): what seeds the turn's output length and keys its count."""
    return number * 1000 + turn


@dataclass(frozen=True)
class ClosedLoop:
    """`concurrency` streams, each with its own connection, each sending its next request as soon
    as its previous one ended. A request is due when its stream is free and its body ready:
    send lag = send - ready - connect. Records carry the stream's number as `worker`."""

    concurrency: int
    arrival_rate_rps = 0.0  # the records' and level's arrival_rate_rps: 0 is a closed-loop level

    @property
    def streams(self) -> int:
        return self.concurrency

    def arrivals(self) -> None:
        return None  # no arrival times: a stream's next request is due when the stream is free


@dataclass(frozen=True)
class PoissonArrivals:
    """Open loop: requests arrive as a Poisson process of `rate_rps` (exponential gaps, seeded by
    `key`: the same key gives the same arrival times), whatever the server's pace, at most
    `max_in_flight` at once. A request is due at its arrival: send lag = send - due - connect, the
    client's own lateness plus any wait for the in-flight cap. Records carry concurrency =
    max_in_flight, worker -1 and arrival_rate_rps."""

    rate_rps: float
    max_in_flight: int
    key: str
    kind: str = "poisson"  # the gaps: poisson, gamma or constant (arrival_offsets_s)
    burstiness: float = 1.0  # gamma's shape
    shape: tuple[float, tuple[float, ...]] | None = None  # (step s, multipliers): shaped_offsets_s

    @classmethod
    def for_level(
        cls,
        rate_rps: float,
        max_in_flight: int,
        seed: int,
        first_index: int,
        kind: str = "poisson",
        burstiness: float = 1.0,
        shape: tuple[float, tuple[float, ...]] | None = None,
    ) -> PoissonArrivals:
        """The sweep's schedule for a level: seeded by the workload's seed, the level's first request
        number and its rate, so every level (and repeat) has arrivals of its own."""
        return cls(rate_rps, max_in_flight, f"{seed}:{first_index}:{rate_rps}", kind, burstiness, shape)

    @property
    def streams(self) -> int:
        return self.max_in_flight

    @property
    def arrival_rate_rps(self) -> float:
        return self.rate_rps

    def arrivals(self) -> Iterator[float]:
        offsets = arrival_offsets_s(self.rate_rps, self.key, self.kind, self.burstiness)
        return offsets if self.shape is None else shaped_offsets_s(offsets, *self.shape)


@dataclass(frozen=True)
class TraceArrivals:
    """Open loop at a trace's own times: request i is due at its row's timestamp x time_scale after
    the level starts, with the row's lengths and prefix blocks (prompts.trace_prompt), at most
    `max_in_flight` at once. Records carry worker -1, load mode "trace" and the trace's mean rate."""

    trace: Trace
    time_scale: float
    max_in_flight: int
    block_tokens: int = 512

    @property
    def streams(self) -> int:
        return self.max_in_flight

    @property
    def arrival_rate_rps(self) -> float:
        """The trace's mean rate as replayed: its requests over its (scaled) span."""
        span_s = (self.trace.timestamps_ms[-1] - self.trace.timestamps_ms[0]) * self.time_scale / 1000
        return len(self.trace) / span_s if span_s > 0 else float(len(self.trace))

    def arrivals(self) -> Iterator[float]:
        t0 = self.trace.timestamps_ms[0]
        return ((t - t0) * self.time_scale / 1000 for t in self.trace.timestamps_ms)


Schedule = ClosedLoop | PoissonArrivals | TraceArrivals
