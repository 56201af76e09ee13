"""A SageMaker runtime stand-in that speaks the real wire format, in front of a real model server.

POST /endpoints/{name}/invocations-response-stream
  * the SigV4 signature (service `sagemaker`) is recomputed with botocore from the known
    credentials and compared: a wrong key, region, service or tampered body gets 403;
  * the body is forwarded to an OpenAI-compatible upstream (llama-server), or, with no upstream,
    answered by the calibration schedule in this same process, which then also serves that schedule
    over plain OpenAI HTTP at /v1/chat/completions: one server, two wire formats, so the client's
    event-stream path can be compared with its SSE path and nothing else differs; both wires'
    requests go into the calibration record (GET|POST /calibration/record[?requests=1]);
  * every upstream chunk goes back as AWS event-stream PayloadPart frames, split `split` ways, so
    SSE lines span several frames;
  * faults on request (both routes): `fail_endpoints` {name substring: every}, below; streaming
    only: `model_stream_error_after` frames -> a ModelStreamError exception frame;
    `bad_crc_after` frames -> a frame with a corrupt checksum; `fail_endpoints` {name substring:
    every} -> every `every`-th request to a matching endpoint is answered 424 ModelError (1: all).

POST /endpoints/{name}/invocations (InvokeEndpoint, non-streaming: what the quality stage sends)
  * the same SigV4 check, endpoint check and `fail_endpoints` faults;
  * the body is forwarded to the upstream's /v1/chat/completions as it is (the client asks for
    `stream: false`) and the upstream's answer is returned as InvokeEndpoint returns a container's:
    its body and Content-Type, with X-Amzn-Invoked-Production-Variant; an upstream error is a 424
    ModelError carrying the container's status and message, as SageMaker reports one. Needs an
    upstream (no calibration schedule here).

  python -m llmbench.testing.sagemaker_runtime --upstream http://127.0.0.1:8080 --port 8002
"""

from __future__ import annotations

import argparse
import hmac
import re

import aiohttp
from aiohttp import web

from llmbench.backends.awsstream import EVENTSTREAM
from llmbench.testing._serve import upstream_session
from llmbench.testing.eventstream import exception_frame, payload_part

CONFIG = web.AppKey("config", dict)
STATS = web.AppKey("stats", dict)
SESSION = web.AppKey("session", aiohttp.ClientSession)

_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[^,]+),\s*Signature=(?P<sig>[0-9a-f]{64})"
)


def verify_sigv4(
    request: web.Request, body: bytes, access_key: str, secret_key: str, token: str | None, region: str
) -> str | None:
    """None if the request is signed correctly for service sagemaker in `region`, else why not."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    m = _AUTH.fullmatch(request.headers.get("Authorization", ""))
    if not m:
        return "missing or malformed Authorization header"
    if m["service"] != "sagemaker":
        return f"credential scope names service {m['service']!r}, expected 'sagemaker'"
    if m["region"] != region:
        return f"credential scope names region {m['region']!r}, this endpoint is in {region!r}"
    if m["key"] != access_key:
        return "unknown access key"
    if token is not None and request.headers.get("X-Amz-Security-Token") != token:
        return "missing or wrong security token"
    signed = m["signed"].split(";")
    headers = {h: request.headers.get(h, "") for h in signed if h != "host"}
    url = f"http://{request.headers['Host']}{request.raw_path}"
    req = AWSRequest(method=request.method, url=url, data=body, headers=headers)
    req.context["timestamp"] = request.headers.get("X-Amz-Date", "")
    auth = SigV4Auth(Credentials(access_key, secret_key, token), "sagemaker", region)
    if sorted(signed) != sorted(auth.headers_to_sign(req).keys()):
        return f"signed headers {signed} do not match the request"
    expected = auth.signature(auth.string_to_sign(req, auth.canonical_request(req)), req)
    if not hmac.compare_digest(expected, m["sig"]):
        return "signature mismatch"
    return None


async def _admit(request: web.Request, body: bytes) -> web.Response | None:
    """The checks both routes make before the model sees a request: the signature, the endpoint's
    name and the injected endpoint faults. None: go on; else the error response."""
    cfg, stats = request.app[CONFIG], request.app[STATS]
    why = verify_sigv4(request, body, cfg["access_key"], cfg["secret_key"], cfg.get("session_token"), cfg["region"])
    if why:
        stats["rejected"] += 1
        return web.json_response({"__type": "InvalidSignatureException", "message": why}, status=403)
    name = request.match_info["name"]
    if cfg.get("endpoints") is not None and name not in cfg["endpoints"]:
        return web.json_response({"__type": "ValidationError", "message": f"Endpoint {name} not found."}, status=400)
    stats["accepted"] += 1
    for part, every in (cfg.get("fail_endpoints") or {}).items():
        if part in name:
            n = stats.setdefault(f"requests:{name}", 0) + 1
            stats[f"requests:{name}"] = n
            if n % every == 0:
                return web.json_response(
                    {
                        "__type": "ModelError",
                        "OriginalStatusCode": 500,
                        "message": "injected fault: the model container answered 500",
                    },
                    status=424,
                )
    return None


async def invoke(request: web.Request) -> web.Response:
    """InvokeEndpoint: the upstream's non-streaming answer, as SageMaker returns a container's."""
    cfg, stats = request.app[CONFIG], request.app[STATS]
    body = await request.read()
    refused = await _admit(request, body)
    if refused is not None:
        return refused
    if cfg["upstream"] is None:
        return web.json_response(
            {"__type": "ValidationError", "message": "this test server answers invocations only with --upstream"},
            status=400,
        )
    async with request.app[SESSION].post(
        cfg["upstream"].rstrip("/") + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
    ) as up:
        data = await up.read()
        if up.status != 200:
            return web.json_response(
                {
                    "__type": "ModelError",
                    "message": f"Received client error ({up.status}) from primary with message "
                    f'"{data[:500].decode("utf-8", "replace")}".',
                    "OriginalStatusCode": up.status,
                },
                status=424,
            )
        stats["invocations"] += 1
        return web.Response(
            body=data,
            content_type=up.content_type or "application/json",
            headers={"X-Amzn-Invoked-Production-Variant": "AllTraffic"},
        )


async def invoke_stream(request: web.Request) -> web.StreamResponse:
    cfg, stats = request.app[CONFIG], request.app[STATS]
    body = await request.read()
    refused = await _admit(request, body)
    if refused is not None:
        return refused
    if cfg["upstream"] is None:
        return await _calibrated(request, body, cfg, stats)
    async with request.app[SESSION].post(
        cfg["upstream"].rstrip("/") + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
    ) as up:
        if up.status != 200:
            text = await up.text()
            return web.json_response(
                {"__type": "ModelError", "message": text[:500], "OriginalStatusCode": up.status}, status=424
            )
        resp = web.StreamResponse(
            headers={"Content-Type": EVENTSTREAM, "X-Amzn-SageMaker-Content-Type": "text/event-stream"}
        )
        await resp.prepare(request)
        frames, split = 0, max(1, int(cfg.get("split", 2)))
        async for data in up.content.iter_any():
            step = max(1, -(-len(data) // split))
            for i in range(0, len(data), step):
                frames += 1
                if cfg.get("model_stream_error_after") is not None and frames > cfg["model_stream_error_after"]:
                    await resp.write(exception_frame("ModelStreamError", "model container failed mid-stream"))
                    await resp.write_eof()
                    return resp
                frame = payload_part(data[i : i + step])
                if cfg.get("bad_crc_after") is not None and frames > cfg["bad_crc_after"]:
                    frame = frame[:-1] + bytes([frame[-1] ^ 0xFF])
                await resp.write(frame)
        stats["frames"] += frames
        await resp.write_eof()
        return resp


async def _calibrated(request: web.Request, body: bytes, cfg: dict, stats: dict) -> web.StreamResponse:
    """The calibration schedule over the event-stream wire, recorded in the same server record as
    the OpenAI route (GET|POST /calibration/record), so each wire's client measurements can be
    checked against what the server did for that wire's requests."""
    import json
    import time

    from llmbench.testing.calibration import SCHEDULE, SENT, scheduled_stream

    arrival = time.perf_counter()
    resp = web.StreamResponse(
        headers={"Content-Type": EVENTSTREAM, "X-Amzn-SageMaker-Content-Type": "text/event-stream"}
    )
    await resp.prepare(request)
    split = max(1, int(cfg.get("split", 2)))

    async def write(data: bytes) -> None:
        step = max(1, -(-len(data) // split))
        await resp.write(b"".join(payload_part(data[i : i + step]) for i in range(0, len(data), step)))
        stats["frames"] += -(-len(data) // step)

    sent: list[float] = []
    await scheduled_stream(json.loads(body), request.app[SCHEDULE], arrival, write, sent)
    await resp.write_eof()
    request.app[SENT].append({"arrival": arrival, "sent": sent})
    return resp


def make_app(
    upstream: str | None,
    access_key: str,
    secret_key: str,
    session_token: str | None = None,
    split: int = 2,
    endpoints: set[str] | None = None,
    upstream_keep_alive: bool = True,
    calibration: dict | None = None,
    region: str = "us-east-1",
    **faults,
) -> web.Application:
    """upstream None: serve the calibration schedule (`calibration`: ttft_ms, itl_ms, tokens) on
    both wire formats from this process."""
    app = web.Application(client_max_size=16 * 1024 * 1024)
    if upstream is None:
        from llmbench.testing.calibration import add_routes

        add_routes(app, **(calibration or {}))
    app[CONFIG] = {
        "upstream": upstream,
        "access_key": access_key,
        "secret_key": secret_key,
        "session_token": session_token,
        "split": split,
        "endpoints": endpoints,
        "upstream_keep_alive": upstream_keep_alive,
        "region": region,
        **faults,
    }
    app[STATS] = {"accepted": 0, "rejected": 0, "frames": 0, "invocations": 0}
    app.cleanup_ctx.append(upstream_session(SESSION, CONFIG))
    app.router.add_post("/endpoints/{name}/invocations-response-stream", invoke_stream)
    app.router.add_post("/endpoints/{name}/invocations", invoke)
    return app


def main() -> None:
    p = argparse.ArgumentParser(description="SageMaker runtime wire-format server (tests and benchmarks)")
    p.add_argument("--upstream", help="OpenAI-compatible server base URL (without /v1); none: calibration schedule")
    p.add_argument("--ttft-ms", type=float, default=100.0, help="calibration schedule (no --upstream)")
    p.add_argument("--itl-ms", type=float, default=10.0, help="calibration schedule (no --upstream)")
    p.add_argument("--port", type=int, default=8002)
    p.add_argument("--access-key", default="AKIDLLMBENCHTEST")
    p.add_argument("--secret-key", default="llmbench-test-secret")
    p.add_argument("--split", type=int, default=2, help="frames per upstream chunk")
    p.add_argument("--region", default="us-east-1", help="the region requests must be signed for")
    p.add_argument("--fresh-upstream-connections", action="store_true", help="for llama-server upstreams")
    p.add_argument(
        "--fail-endpoint",
        action="append",
        default=[],
        metavar="SUBSTRING:EVERY",
        help="answer every EVERY-th request to endpoints whose name contains SUBSTRING with 424",
    )
    a = p.parse_args()
    fail = {part: int(every) for part, every in (f.rsplit(":", 1) for f in a.fail_endpoint)}
    app = make_app(
        a.upstream,
        a.access_key,
        a.secret_key,
        split=a.split,
        upstream_keep_alive=not a.fresh_upstream_connections,
        calibration={"ttft_ms": a.ttft_ms, "itl_ms": a.itl_ms},
        region=a.region,
        fail_endpoints=fail,
    )
    web.run_app(app, host="127.0.0.1", port=a.port, access_log=None)


if __name__ == "__main__":
    main()
