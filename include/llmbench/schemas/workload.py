"""The workload: its one model (`Workload`, with every default declared once), and the
deterministic, seeded prompts sized to a token budget that the load generator sends.

Prompts are built from common short English words, each of which is one token for the Llama/
SmolLM/Qwen BPE vocabularies when preceded by a space, so N words ~ N tokens. The server-reported
prompt token count is what the results record; the estimate only sizes the request.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator, model_validator

from llmbench import paths
from llmbench.schemas.dataset import DatasetSpec, MultiTurn, TraceSpec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LengthDist(_Strict):
    """A request length drawn per request, seeded (workload.sample_length): fixed (value),
    normal (mean, sd, clipped to [min, max]), uniform (min, max), or empirical (one length per
    line of `file`, relative to include/llmbench/config/; read into `values` at load time)."""

    dist: Literal["fixed", "normal", "uniform", "empirical"]
    value: int | None = Field(None, ge=1)
    mean: float | None = Field(None, gt=0)
    sd: float | None = Field(None, ge=0)
    min: int | None = Field(None, ge=1)
    max: int | None = Field(None, ge=1)
    file: str | None = None
    values: list[int] | None = None

    @model_validator(mode="after")
    def _complete(self) -> LengthDist:
        need = {"fixed": ("value",), "normal": ("mean", "sd"), "uniform": ("min", "max"), "empirical": ("file",)}
        missing = [f for f in need[self.dist] if getattr(self, f) is None and not (f == "file" and self.values)]
        if missing:
            raise ValueError(f"dist {self.dist} needs {missing}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} > max {self.max}")
        if self.dist == "empirical" and not self.values:
            file = str(self.file)
            path = Path(file) if Path(file).is_absolute() else paths.CONFIG_DIR / file
            try:
                values = [int(x) for x in path.read_text().split()]
            except (OSError, ValueError) as e:
                raise ValueError(f"empirical lengths file {path}: {e}") from None
            if not values or min(values) < 1:
                raise ValueError(f"empirical lengths file {path}: needs positive integers, one per line")
            object.__setattr__(self, "values", values)
        return self


class RateShape(_Strict):
    """An open-loop level's rate over time, as multipliers of its arrival rate: `per_minute` (one a
    minute, given here or one a line in `file`, relative to the config's folder; 0 is an idle
    minute; the last one holds) or a linear `ramp_s` from `ramp_from` x the rate to the full rate.
    Arrivals keep their kind (poisson, gamma, constant) in the shape's own time: a multiplier of 2
    sends the same draws twice as fast (the strategy schedules.RateShape, through shaped_offsets_s)."""

    per_minute: list[Annotated[float, Field(ge=0, le=1000)]] | None = Field(None, min_length=1, max_length=10_000)
    file: str | None = None
    ramp_s: float | None = Field(None, gt=0, le=86_400.0)
    ramp_from: float = Field(0.1, gt=0, le=1)

    @model_validator(mode="after")
    def _one(self) -> RateShape:
        given = [k for k in ("per_minute", "file", "ramp_s") if getattr(self, k) is not None]
        if len(given) != 1 and not (given == ["per_minute", "file"]):
            raise ValueError(f"give one of per_minute, file or ramp_s, got {given or 'none'}")
        if self.file is not None and self.per_minute is None:
            path = Path(self.file) if Path(self.file).is_absolute() else paths.CONFIG_DIR / self.file
            try:
                values = [float(x) for x in path.read_text().split()]
            except (OSError, ValueError) as e:
                raise ValueError(f"rate shape file {path}: {e}") from None
            if not values or min(values) < 0:
                raise ValueError(f"rate shape file {path}: needs multipliers >= 0, one per line")
            object.__setattr__(self, "per_minute", values)
        if self.per_minute is not None and not self.per_minute[-1] > 0:
            raise ValueError("the last per-minute multiplier holds to the level's end: it must be > 0")
        return self

    def steps(self) -> tuple[float, tuple[float, ...]]:
        """(step seconds, multiplier of each step): per minute, or a ramp in 1 s steps (the last holds)."""
        if self.per_minute is not None:
            return 60.0, tuple(self.per_minute)
        n = max(1, round(float(self.ramp_s)))  # type: ignore[arg-type]
        return float(self.ramp_s) / n, tuple(  # type: ignore[arg-type]
            self.ramp_from + (1 - self.ramp_from) * (k + 0.5) / n for k in range(n)
        ) + (1.0,)


# Workloads of the seeds, by name: `workload: {preset: seed-002, requests_per_level: 8}`; what
# the config sets itself wins over the preset.
PRESETS: dict[str, dict[str, Any]] = {
    # seed 000: 2048 in / 512 out at concurrency 1 / 16 / 64.
    "seed-000": {"input_tokens": 2048, "output_tokens": 512, "concurrency": [1, 16, 64]},
    # seed 002: ~1,000 input tokens per request in all, of which the ~478-token system prompt every
    # request shares (input_tokens counts the rest: ~522, so the prompt is ~1,000, 700-1,300), ~560
    # out, concurrency 1..32.
    "seed-002": {
        "input_tokens": {"dist": "normal", "mean": 522, "sd": 100, "min": 222, "max": 822},
        "output_tokens": {"dist": "normal", "mean": 560, "sd": 60, "min": 380, "max": 740},
        "shared_prefix_tokens": 478,
        "concurrency": [1, 2, 4, 8, 16, 32],
    },
}


# Upper bounds of a workload (docs/dag.md#workload): beyond them a sweep is a typo or an attack,
# not a benchmark. Integers are strict: `true` or `2.0` where a count is meant is refused.
MAX_CONCURRENCY = 10_000  # streams (or open-loop in-flight cap) of one level
MAX_LEVELS = 64  # concurrency levels or arrival rates of one sweep
MAX_REQUESTS_PER_LEVEL = 1_000_000
MAX_WARMUP_REQUESTS = 10_000
MAX_WARMUP_EACH_LEVEL = 50  # warm-up requests per stream before each level
MAX_TOKENS = 1_000_000  # input, output or shared-prefix tokens of one request
MAX_TIMEOUT_S = 86_400.0
MAX_BYTES_PER_REQUEST = 1 << 30
DEFAULT_BYTES_PER_REQUEST = 16 << 20  # 16 MiB: far above any real streamed answer


class Workload(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    preset: Literal["seed-000", "seed-002"] | None = Field(
        None, description="a seed's workload by name; what the config sets itself wins over it"
    )
    input_tokens: Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)] | LengthDist = Field(
        256, description="input tokens of each request; a config may give a distribution"
    )
    output_tokens: Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)] | LengthDist = Field(
        64, description="output tokens asked of each request; a config may give a distribution"
    )
    shared_prefix_tokens: StrictInt = Field(
        0, ge=0, le=MAX_TOKENS, description="a system prompt every request shares, in tokens (seed 002: 478)"
    )
    prompt_style: Literal["words", "code-edit"] = Field(
        "words",
        description="words: continue a list of random words; code-edit: rewrite a piece of code with one change "
        "(an answer that repeats its prompt: what n-gram speculative decoding drafts from)",
    )
    concurrency: list[Annotated[StrictInt, Field(le=MAX_CONCURRENCY)]] = Field(
        default_factory=lambda: [1, 2, 4, 8],
        min_length=1,
        max_length=MAX_LEVELS,
        description="closed-loop levels: streams sending one request after another",
    )
    requests_per_level: StrictInt = Field(
        16, ge=1, le=MAX_REQUESTS_PER_LEVEL, description="requests of each level, across its streams"
    )
    warmup_requests: StrictInt = Field(
        2, ge=0, le=MAX_WARMUP_REQUESTS, description="warm-up requests before the first level, timings discarded"
    )
    # Seed 003's per-level warm-up: c x n requests in all, kept in warmup.jsonl, counted on the
    # level's row (level_warmup_requests) and in none of its metrics. Open-loop levels
    # (arrival_rates_rps) hold no concurrency to warm: refused.
    warmup_each_level: StrictInt = Field(
        0,
        ge=0,
        le=MAX_WARMUP_EACH_LEVEL,
        description="closed loop: before each level, this many warm-up requests per stream at its concurrency "
        "(warmup.jsonl; 0: off)",
    )
    request_timeout_s: float = Field(
        120.0, gt=0, le=MAX_TIMEOUT_S, description="per-request timeout, seconds (a hard deadline)"
    )
    # Past it the request ends as error_kind response_too_large and the connection is dropped; no
    # more than this of it is ever held.
    max_response_bytes: StrictInt = Field(
        DEFAULT_BYTES_PER_REQUEST,
        ge=1024,
        le=MAX_BYTES_PER_REQUEST,
        description="one response's byte budget, bytes (16 MiB: far above any real streamed answer)",
    )
    seed: StrictInt = Field(0, description="seeds the prompts and the drawn lengths (the same seed, the same requests)")
    level_duration_s: float | None = Field(
        None,
        gt=0,
        le=MAX_TIMEOUT_S,
        description="end a level after this many seconds too (no request starts later; those in flight finish)",
    )
    repeats: StrictInt = Field(
        1,
        ge=1,
        le=20,
        description="run each level this many times in a row; its row then carries 95 % confidence intervals "
        "of throughput and TTFT p50",
    )
    client_processes: StrictInt | None = Field(
        None, ge=1, le=64, description="load-generator processes per level (unset: one per 128 streams, one per core)"
    )
    arrival_rates_rps: list[float] | None = Field(
        None,
        min_length=1,
        max_length=MAX_LEVELS,
        description="open loop instead: Poisson arrival rates, requests/s, one level each (e.g. 0.5,1,2)",
    )
    max_in_flight: StrictInt = Field(256, ge=1, le=MAX_CONCURRENCY, description="open loop: requests in flight at most")
    # Issue 28: the user's own traffic. Gaps between open-loop arrivals: exponential (Poisson),
    # gamma of shape `burstiness` (vLLM's --burstiness: 1 is Poisson, below 1 burstier, above 1
    # steadier; the mean gap stays 1 / rate) or constant (1 / rate each).
    arrivals: Literal["poisson", "gamma", "constant"] = Field(
        "poisson", description="open loop: inter-arrival times, poisson, gamma (shape burstiness) or constant"
    )
    burstiness: float = Field(
        1.0, gt=0, le=100, description="open loop, gamma arrivals: the gamma shape (1: Poisson; < 1: burstier)"
    )
    rate_shape: RateShape | None = Field(
        None, description="open loop: each level's rate over time, per-minute multipliers or a ramp"
    )
    dataset: DatasetSpec | None = Field(
        None, description="prompts from a file (openai / sharegpt JSONL, or text) instead of generated word lists"
    )
    multi_turn: MultiTurn | None = Field(
        None, description="closed loop, with a dataset: each row a session, turn by turn on one stream, history carried"
    )
    trace: TraceSpec | None = Field(
        None, description="one open-loop level replaying a Mooncake JSONL trace at its own (scaled) times"
    )
    # Prefix reuse you can dial: K distinct shared prefixes of shared_prefix_tokens each; a request
    # draws one, uniformly or by Zipf (prefix k with weight 1 / k^s), so prefix caching has
    # something to hit (K = 1: every request shares one, as seed 002's system prompt).
    prefix_count: StrictInt = Field(
        1, ge=1, le=100_000, description="distinct shared prefixes (of shared_prefix_tokens each) requests draw from"
    )
    prefix_draw: Literal["uniform", "zipf"] = Field("uniform", description="how a request draws its shared prefix")
    prefix_zipf_s: float = Field(1.0, gt=0, le=10, description="Zipf exponent s of prefix_draw zipf")

    @field_validator("arrival_rates_rps")
    @classmethod
    def _rates(cls, v: list[float] | None) -> list[float] | None:
        if v is None:
            return v
        bad = [r for r in v if not r > 0]
        if bad:
            raise ValueError(f"every arrival rate must be > 0 requests/s, got {bad}")
        if len(set(v)) != len(v):
            raise ValueError(f"arrival rates must be distinct, got {v}")
        return sorted(v)

    @model_validator(mode="after")
    def _warmup_each_level_closed_loop(self) -> Workload:
        if self.warmup_each_level and self.arrival_rates_rps:
            raise ValueError(
                "warmup_each_level warms closed-loop levels (each stream of a level sends that many requests "
                "first); an open-loop workload (arrival_rates_rps) has no streams to warm: set it to 0"
            )
        return self

    @model_validator(mode="after")
    def _arrivals_open_loop(self) -> Workload:
        if (self.arrivals != "poisson" or self.burstiness != 1.0) and not self.arrival_rates_rps:
            raise ValueError("arrivals and burstiness shape open-loop levels: set arrival_rates_rps too")
        if self.rate_shape is not None and not self.arrival_rates_rps:
            raise ValueError("rate_shape shapes open-loop levels: set arrival_rates_rps too")
        if self.burstiness != 1.0 and self.arrivals != "gamma":
            raise ValueError(f"burstiness is the gamma shape: set arrivals: gamma (not {self.arrivals})")
        return self

    def level_concurrencies(self) -> list[int]:
        """The concurrency keys of the levels a sweep runs (what validation expects): the closed-loop
        levels, or a trace's one level at its in-flight cap."""
        return [self.max_in_flight] if self.trace is not None else list(self.concurrency)

    @model_validator(mode="after")
    def _traffic_kinds(self) -> Workload:
        if self.multi_turn and not self.dataset:
            raise ValueError("multi_turn sends a dataset's conversations: set dataset too")
        if self.multi_turn and self.arrival_rates_rps:
            raise ValueError("multi_turn sessions run on closed-loop streams: leave arrival_rates_rps unset")
        if self.trace and (self.dataset or self.arrival_rates_rps):
            raise ValueError("a trace brings its own lengths and times: leave dataset and arrival_rates_rps unset")
        if self.prefix_count > 1 and not self.shared_prefix_tokens:
            raise ValueError("prefix_count shared prefixes of shared_prefix_tokens each: set shared_prefix_tokens")
        return self

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preset"):
            if data["preset"] not in PRESETS:
                return data  # the Literal refuses it, naming the allowed presets
            return {**PRESETS[data["preset"]], **data}
        return data

    @field_validator("input_tokens", "output_tokens", mode="before")
    @classmethod
    def _length(cls, v: Any) -> Any:
        # A mapping is a distribution: validate it as one, so its error is the one reported.
        if isinstance(v, dict):
            try:
                return LengthDist.model_validate(v)
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(str(x) for x in err["loc"])
                raise ValueError((f"{where}: " if where else "") + err["msg"].removeprefix("Value error, ")) from None
        return v

    @field_validator("concurrency")
    @classmethod
    def _levels(cls, v: list[int]) -> list[int]:
        bad = [c for c in v if c < 1]
        if bad:
            raise ValueError(f"every concurrency level must be >= 1, got {bad}")
        if len(set(v)) != len(v):
            raise ValueError(f"concurrency levels must be distinct, got {v}")
        return sorted(v)


Length = int | LengthDist  # a request's input or output length: fixed, or drawn per request


def spec_of(value: int | dict | LengthDist) -> Length:
    """A length as the models hold it (a mapping is validated into a LengthDist)."""
    return LengthDist.model_validate(value) if isinstance(value, dict) else value


def sample_length(spec: Length, seed: int, index: int, which: str) -> int:
    """The length of request `index` (which: "input" or "output"): seeded, so the same workload
    gives every request the same length in every run; normal draws are clipped to [min, max]."""
    if isinstance(spec, int):
        return spec
    spec = spec_of(spec)
    if isinstance(spec, int):
        return spec
    rng = random.Random(f"{seed}:{which}:{index}")
    if spec.dist == "fixed":
        return int(spec.value)  # type: ignore[arg-type]
    if spec.dist == "uniform":
        return rng.randint(int(spec.min), int(spec.max))  # type: ignore[arg-type]
    if spec.dist == "normal":
        lo, hi = length_range(spec)
        return min(hi, max(lo, round(rng.gauss(spec.mean, spec.sd))))  # type: ignore[arg-type]
    return int(rng.choice(spec.values))  # type: ignore[arg-type]


def length_range(spec: Length | dict) -> tuple[int, int]:
    """(smallest, largest) length a spec can give: what context-size checks must allow for."""
    spec = spec_of(spec)
    if isinstance(spec, int):
        return spec, spec
    if spec.dist == "fixed":
        return int(spec.value), int(spec.value)  # type: ignore[arg-type]
    if spec.dist == "empirical":
        return min(spec.values), max(spec.values)  # type: ignore[arg-type]
    if spec.dist == "normal":
        return int(spec.min or 1), int(spec.max or round(spec.mean + 4 * spec.sd))  # type: ignore[operator]
    return int(spec.min), int(spec.max)  # type: ignore[arg-type]


def length_mean(spec: Length | dict) -> float:
    """The expected length (for cost and duration estimates)."""
    spec = spec_of(spec)
    if isinstance(spec, int):
        return float(spec)
    if spec.dist == "normal":
        return float(spec.mean)  # type: ignore[arg-type]
    if spec.dist == "empirical":
        return sum(spec.values) / len(spec.values)  # type: ignore[arg-type]
    lo, hi = length_range(spec)
    return (lo + hi) / 2
