"""When a level's requests are due: one registered strategy class per way of pacing a level, in the
spirit of guidellm's scheduler strategies. Each has one small interface (Strategy): `closed` (a
request is due as soon as a stream is free, its previous request completed) or `arrivals()` (when
each request is due, seconds after the level starts), how many streams it holds, and the arrival
rate its records carry. ClosedLoop; the open loops PoissonArrivals, GammaArrivals and
ConstantArrivals (at most `max_in_flight` in flight); RateShape, an open loop under a rate shape;
TraceArrivals, a trace's own times. STRATEGIES names them; open_loop builds a workload's open-loop
level. Also the seeded arrival offsets they draw (poisson_offsets_s, arrival_offsets_s,
shaped_offsets_s), and the number that keys a multi-turn session's turn (session_turn_key). The
driver runs any of them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from llmbench.schemas.dataset import Trace

__all__ = [
    "STRATEGIES",
    "ClosedLoop",
    "ConstantArrivals",
    "GammaArrivals",
    "OpenLoop",
    "PoissonArrivals",
    "RateShape",
    "Strategy",
    "TraceArrivals",
    "arrival_offsets_s",
    "open_loop",
    "poisson_offsets_s",
    "register_strategy",
    "session_turn_key",
    "shaped_offsets_s",
]


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


class Strategy:
    """How a level is paced. closed: a request is due when a stream is free (its previous request
    completed), and arrivals() gives nothing; otherwise arrivals() gives when each request is due,
    in seconds after the level starts, and a stream takes the next arrival when it is free.
    streams: the streams (connections, requests in flight at most) the level holds;
    arrival_rate_rps: what its records and its level row carry (0: a closed-loop level)."""

    name: ClassVar[str]
    closed: ClassVar[bool] = False

    @property
    def streams(self) -> int:
        raise NotImplementedError

    @property
    def arrival_rate_rps(self) -> float:
        raise NotImplementedError

    def arrivals(self) -> Iterator[float] | None:
        raise NotImplementedError


STRATEGIES: dict[str, type[Strategy]] = {}
S = TypeVar("S", bound=type[Strategy])


def register_strategy(cls: S) -> S:
    """Name a strategy class in STRATEGIES (a workload's `arrivals` names an open-loop one)."""
    if cls.name in STRATEGIES:
        raise ValueError(f"strategy {cls.name!r} is registered already ({STRATEGIES[cls.name].__name__})")
    STRATEGIES[cls.name] = cls
    return cls


@register_strategy
@dataclass(frozen=True)
class ClosedLoop(Strategy):
    """`concurrency` streams, each with its own connection, each sending its next request as soon
    as its previous one ended. A request is due when its stream is free and its body ready:
    send lag = send - ready - connect. Records carry the stream's number as `worker`."""

    name: ClassVar[str] = "closed"
    closed: ClassVar[bool] = True
    concurrency: int

    @property
    def streams(self) -> int:
        return self.concurrency

    @property
    def arrival_rate_rps(self) -> float:
        return 0.0

    def arrivals(self) -> None:
        return None  # no arrival times: a stream's next request is due when the stream is free


@dataclass(frozen=True)
class OpenLoop(Strategy):
    """Open loop: requests arrive at a mean of `rate_rps` whatever the server's pace (seeded by
    `key`: the same key gives the same arrival times), at most `max_in_flight` at once. A request is
    due at its arrival: send lag = send - due - connect, the client's own lateness plus any wait for
    the in-flight cap. Records carry concurrency = max_in_flight, worker -1 and arrival_rate_rps."""

    rate_rps: float
    max_in_flight: int
    key: str

    @classmethod
    def key_for_level(cls, rate_rps: float, seed: int, first_index: int) -> str:
        """The sweep's key for a level: the workload's seed, the level's first request number and
        its rate, so every level (and repeat) has arrivals of its own."""
        return f"{seed}:{first_index}:{rate_rps}"

    @property
    def streams(self) -> int:
        return self.max_in_flight

    @property
    def arrival_rate_rps(self) -> float:
        return self.rate_rps

    def arrivals(self) -> Iterator[float]:
        raise NotImplementedError


@register_strategy
@dataclass(frozen=True)
class PoissonArrivals(OpenLoop):
    """Exponential gaps of mean 1 / rate_rps (poisson_offsets_s)."""

    name: ClassVar[str] = "poisson"

    @classmethod
    def for_level(cls, rate_rps: float, max_in_flight: int, seed: int, first_index: int) -> PoissonArrivals:
        return cls(rate_rps, max_in_flight, cls.key_for_level(rate_rps, seed, first_index))

    def arrivals(self) -> Iterator[float]:
        return poisson_offsets_s(self.rate_rps, self.key)


@register_strategy
@dataclass(frozen=True)
class GammaArrivals(OpenLoop):
    """Gamma gaps of shape k = burstiness, mean 1 / rate_rps (vLLM's --burstiness: 1 is Poisson,
    below 1 burstier)."""

    name: ClassVar[str] = "gamma"
    burstiness: float = 1.0

    def arrivals(self) -> Iterator[float]:
        return arrival_offsets_s(self.rate_rps, self.key, "gamma", self.burstiness)


@register_strategy
@dataclass(frozen=True)
class ConstantArrivals(OpenLoop):
    """One request every 1 / rate_rps seconds."""

    name: ClassVar[str] = "constant"

    def arrivals(self) -> Iterator[float]:
        return arrival_offsets_s(self.rate_rps, self.key, "constant")


@register_strategy
@dataclass(frozen=True)
class RateShape(Strategy):
    """An open loop under a rate shape: `base`'s arrivals read as time at its rate and mapped to the
    clock by the multipliers, one per `step_s` (the last holds; shaped_offsets_s). The level's
    arrival rate is its base rate."""

    name: ClassVar[str] = "shaped"
    base: OpenLoop
    step_s: float
    multipliers: tuple[float, ...]

    @property
    def streams(self) -> int:
        return self.base.streams

    @property
    def arrival_rate_rps(self) -> float:
        return self.base.rate_rps

    def arrivals(self) -> Iterator[float]:
        return shaped_offsets_s(self.base.arrivals(), self.step_s, self.multipliers)


def open_loop(
    kind: str,
    rate_rps: float,
    max_in_flight: int,
    seed: int,
    first_index: int,
    burstiness: float = 1.0,
    shape: tuple[float, tuple[float, ...]] | None = None,
) -> Strategy:
    """A workload's open-loop level: the `kind` strategy (poisson, gamma or constant) keyed for the
    level (OpenLoop.key_for_level), under the rate shape (step s, multipliers) when there is one."""
    key = OpenLoop.key_for_level(rate_rps, seed, first_index)
    cls = STRATEGIES.get(kind)
    if cls is None or not issubclass(cls, OpenLoop):
        raise ValueError(f"arrivals: unknown {kind!r}; allowed: poisson, gamma, constant")
    base = (
        GammaArrivals(rate_rps, max_in_flight, key, burstiness)
        if cls is GammaArrivals
        else cls(rate_rps, max_in_flight, key)
    )
    return base if shape is None else RateShape(base, *shape)


@register_strategy
@dataclass(frozen=True)
class TraceArrivals(Strategy):
    """Open loop at a trace's own times: request i is due at its row's timestamp x time_scale after
    the level starts, with the row's lengths and prefix blocks (prompts.trace_prompt), at most
    `max_in_flight` at once. Records carry worker -1, load mode "trace" and the trace's mean rate."""

    name: ClassVar[str] = "trace"
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
