"""Price-performance arithmetic: one function per economic figure ($/M tokens, monthly cost, the
break-even against a per-token API, what the benchmark itself cost). Performance figures live in
llmbench.analysis.metrics."""

from __future__ import annotations

HOURS_PER_MONTH = 730  # 24 x 365 / 12: the 24x7 month AWS prices use
SECONDS_PER_HOUR = 3600


def usd_per_million_tokens(usd_per_hour: float, tokens_per_s: float | None) -> float | None:
    """$ per million tokens at a sustained rate: usd_per_hour / (tokens_per_s * 3600) * 1e6.
    Seed 001: $0.8048/h at 131.9 tok/s -> $1.69 per million."""
    if tokens_per_s is None or tokens_per_s <= 0:
        return None
    return usd_per_hour / (tokens_per_s * SECONDS_PER_HOUR) * 1e6


def usd_per_m_goodput_tokens(usd_per_hour: float | None, goodput_output_tokens_per_s: float | None) -> float | None:
    """$ per million output tokens at the SLO: the hour's price over the output tokens of the
    requests that met every objective (metrics.goodput), not over every token produced."""
    if usd_per_hour is None:
        return None
    return usd_per_million_tokens(usd_per_hour, goodput_output_tokens_per_s)


def usd_per_m_goodput_paid_per_token(
    usd_per_m_output_with_input: float | None,
    output_tokens_per_s: float | None,
    goodput_output_tokens_per_s: float | None,
) -> float | None:
    """A per-token path's $ per million output tokens at the SLO: it bills every token, so a
    million goodput tokens cost the price with input x all output tokens / goodput tokens."""
    if usd_per_m_output_with_input is None or not output_tokens_per_s or not goodput_output_tokens_per_s:
        return None
    return usd_per_m_output_with_input * output_tokens_per_s / goodput_output_tokens_per_s


def monthly_usd(usd_per_hour: float) -> float:
    """Cost of keeping the endpoint up 24x7 for a month."""
    return usd_per_hour * HOURS_PER_MONTH


def break_even_output_tokens_per_s(
    usd_per_hour: float,
    api_usd_per_m_input: float,
    api_usd_per_m_output: float,
    input_tokens_per_output_token: float,
) -> float:
    """Output tok/s the endpoint must sustain 24x7 to cost no more than a per-token API priced
    `in`/`out` per million, when each output token comes with k input tokens:
    monthly_usd / ((k*in + out)/1e6 * 730 * 3600). Seed 001: g6 needs ~710 tok/s vs Nova Micro."""
    k = input_tokens_per_output_token
    usd_per_output_token = (k * api_usd_per_m_input + api_usd_per_m_output) / 1e6
    return monthly_usd(usd_per_hour) / (usd_per_output_token * HOURS_PER_MONTH * SECONDS_PER_HOUR)


def benchmark_cost_usd(usd_per_hour: float | None, endpoint_seconds: float | None) -> float | None:
    """What the benchmark itself cost: endpoint-seconds (deploy to deleted) x $/hour."""
    if endpoint_seconds is None or usd_per_hour is None:
        return None
    return usd_per_hour * endpoint_seconds / SECONDS_PER_HOUR


def per_token_usd_per_m_output_with_input(
    usd_per_m_input: float, usd_per_m_output: float, input_tokens_per_output_token: float
) -> float:
    """What a million output tokens of a per-token API cost together with the input tokens that
    came with them (k per output token): out + k x in. The figure to hold against an hourly
    target's $/M output tokens, which carries the cost of its input tokens too."""
    return usd_per_m_output + input_tokens_per_output_token * usd_per_m_input


def per_token_usd_per_m_total(
    usd_per_m_input: float, usd_per_m_output: float, input_tokens_per_output_token: float
) -> float:
    """The blended $ per million tokens (input and output) at k input tokens per output token."""
    k = input_tokens_per_output_token
    return (k * usd_per_m_input + usd_per_m_output) / (k + 1)


def per_token_benchmark_cost_usd(
    usd_per_m_input: float, usd_per_m_output: float, input_tokens: int, output_tokens: int
) -> float:
    """What the requests of a per-token target cost: their tokens at list price."""
    return (input_tokens * usd_per_m_input + output_tokens * usd_per_m_output) / 1e6


def api_prices() -> dict:
    """The per-token API catalog (catalog/api_prices.yaml)."""
    import yaml

    from llmbench import paths

    return yaml.safe_load((paths.CATALOG_DIR / "api_prices.yaml").read_text())


def default_api() -> tuple[str, float, float, float]:
    """(name, $/M input, $/M output, input tokens per output token) of the per-token API every
    hourly target's break-even is computed against (api_prices.yaml `default_api`, in its
    `default_region`)."""
    apis = api_prices()
    api, region = apis["apis"][apis["default_api"]], apis["default_region"]
    return (
        apis["default_api"],
        float(api["usd_per_m_input"][region]),
        float(api["usd_per_m_output"][region]),
        float(apis["input_tokens_per_output_token"]),
    )
