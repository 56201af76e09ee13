"""A vLLM stand-in for speculative decoding: the paced OpenAI streaming server (testing.paced)
plus what vLLM serves beside /v1: GET /version ({"version": ...}) and GET /metrics, Prometheus
text with vLLM's speculative-decoding counters, labelled per engine as vLLM V1 labels them.

Each chat request advances the counters the moment it arrives (so a client that reads /metrics
after its last response sees every request of its level): a request of N output tokens is
decoded in ceil(N / (accepted + 1)) steps, each proposing `draft` tokens, of which `accepted` are
taken (the last step only as many as remain): draft tokens += steps x draft, accepted tokens +=
N - steps. With N a multiple of accepted + 1 the acceptance rate is exactly accepted / draft.
spec_decode=False serves /metrics without those counters (a server with no speculative config).

  python -m llmbench.testing.specdecode --port 8003 [--draft 3 --accepted 2 --ttft-ms 5 --itl-ms 1]
"""

from __future__ import annotations

import math

from aiohttp import web

from llmbench.testing import paced

COUNTERS = web.AppKey("counters", dict)
VERSION = "0.15.1-llmbench-test"


async def chat(request: web.Request) -> web.StreamResponse:
    c = request.app[COUNTERS]
    try:
        body = await request.json()  # aiohttp keeps the body: paced.chat reads it again
    except ValueError:
        body = None
    if isinstance(body, dict):
        n = paced.output_tokens(body, request.app[paced.SCHEDULE]["tokens"])
        steps = math.ceil(n / (c["accepted_per_step"] + 1)) if n else 0
        c["requests"] += 1
        c["draft_tokens"] += steps * c["draft_per_step"]
        c["accepted_tokens"] += n - steps
    return await paced.chat(request)


async def metrics(request: web.Request) -> web.Response:
    c = request.app[COUNTERS]
    lines = [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        'vllm:num_requests_running{engine="0",model_name="paced"} 0.0',
        "# TYPE vllm:request_success_total counter",
        f'vllm:request_success_total{{engine="0",finished_reason="length",model_name="paced"}} {c["requests"]}.0',
    ]
    if c["spec_decode"]:
        # Two engines' label sets, as a data-parallel vLLM serves them: a reader must sum them.
        half_d, half_a = c["draft_tokens"] // 2, c["accepted_tokens"] // 2
        for name, total, half in (
            ("vllm:spec_decode_num_draft_tokens_total", c["draft_tokens"], half_d),
            ("vllm:spec_decode_num_accepted_tokens_total", c["accepted_tokens"], half_a),
        ):
            lines += [f"# TYPE {name.removesuffix('_total')} counter",
                      f'{name}{{engine="0",model_name="paced"}} {half}.0',
                      f'{name}{{engine="1",model_name="paced"}} {total - half}.0']  # fmt: skip
    return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")


async def version(request: web.Request) -> web.Response:
    return web.json_response({"version": VERSION})


def make_app(
    draft: int = 3,
    accepted: int = 2,
    spec_decode: bool = True,
    ttft_ms: float = 5.0,
    itl_ms: float = 1.0,
    tokens: int = 6,
) -> web.Application:
    if not 0 <= accepted <= draft:
        raise ValueError("accepted tokens per step must be within 0..draft")
    app = paced.make_app(ttft_ms, itl_ms, tokens, chat_handler=chat)
    app[COUNTERS] = {
        "draft_per_step": draft,
        "accepted_per_step": accepted,
        "spec_decode": spec_decode,
        "requests": 0,
        "draft_tokens": 0,
        "accepted_tokens": 0,
    }
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/version", version)
    return app


def main() -> None:
    from llmbench.testing._serve import schedule_parser

    p = schedule_parser(__doc__.splitlines()[0], 8003)
    p.add_argument("--draft", type=int, default=3, help="draft tokens proposed per decode step")
    p.add_argument("--accepted", type=int, default=2, help="draft tokens accepted per decode step")
    p.add_argument("--no-spec-decode", action="store_true", help="serve /metrics without the spec-decode counters")
    a = p.parse_args()
    web.run_app(
        make_app(a.draft, a.accepted, not a.no_spec_decode, a.ttft_ms, a.itl_ms, a.tokens),
        host="127.0.0.1",
        port=a.port,
        print=None,
        access_log=None,
    )


if __name__ == "__main__":
    main()
