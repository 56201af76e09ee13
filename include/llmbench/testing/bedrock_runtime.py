"""An Amazon Bedrock runtime stand-in that speaks ConverseStream's real wire format (no AWS is
reachable from tests), in front of a real model server or a calibrated schedule.

POST /model/{modelId}/converse-stream
  * the SigV4 signature (service `bedrock`) is recomputed with botocore from the known
    credentials over the exact path and body received: a wrong key, secret, region or service, or
    a tampered body, gets 403 with an AWS-style error (`x-amzn-ErrorType` header, JSON `message`);
  * the model id (percent-decoded from the path) must be one of `model_ids` (None: any), else
    400 ValidationException, as Bedrock answers an unknown model identifier;
  * the Converse body is answered as AWS event-stream frames, one JSON event each: messageStart,
    a contentBlockDelta per token, contentBlockStop, messageStop (stopReason), metadata (usage,
    latencyMs). The tokens come either from an OpenAI-compatible upstream (llama-server: the body
    translated to a streamed chat completion with include_usage and ignore_eos, so a request gets
    exactly maxTokens; real Bedrock stops at the end of the model's turn, stopReason end_turn), or,
    with no upstream, from the calibration schedule (token k written at arrival + ttft + k * itl,
    absolute deadlines), recorded as testing/calibration records it (GET|POST /calibration/record),
    so client measurements can be checked against what this server did;
  * faults on request: `throttle_every` N -> every N-th request is answered HTTP 429
    ThrottlingException before the stream; `throttle_models` {model id substring: N} -> the same,
    counted per matching model id; `throttle_in_stream_after` K -> after K frames, a
    throttlingException frame ends the stream; `stream_error_after` K -> a
    modelStreamErrorException frame instead; `bad_crc_after` K -> frames after the K-th carry a
    corrupt checksum. `fault_models` {model id substring: {fault: K, ..., "every": N}} -> those
    in-stream faults only on requests to matching model ids, on every N-th of them (default every
    one; counted per model id, over the requests that reach the stream), so one server can fail
    each model of a run differently.
POST /model/{modelId}/converse (Converse, non-streaming: what the quality stage sends)
  * the same SigV4 check, model-id check and throttle faults (429 before the model);
  * the Converse body (messages, system, inferenceConfig, toolConfig with toolChoice) is
    translated to a non-streaming OpenAI chat completion (tools as functions, their inputSchema.json
    as parameters; no ignore_eos: the model ends its turn) and the upstream's answer back to
    Converse's response: output.message.content with a text block and a toolUse block per tool call
    (toolUseId, name, input: the arguments as a JSON object), stopReason (end_turn, tool_use,
    max_tokens), usage and metrics.latencyMs. An upstream 4xx (a model or template that refuses
    tools) is a 400 ValidationException with its message, as Bedrock answers a model without tool
    use; another upstream error a 424 ModelErrorException. Needs an upstream.
  * GET /bedrock/stats: what was served (requests, frames, tokens, rejections), for tests of the
    process form; the in-process form's is app[STATS].

  python -m llmbench.testing.bedrock_runtime --upstream http://127.0.0.1:8080 --port 8003
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import re
import time
import uuid
from typing import Any

import aiohttp
from aiohttp import web

from llmbench.backends.awsstream import EVENTSTREAM
from llmbench.testing._serve import upstream_session
from llmbench.testing.eventstream import event_frame, exception_frame

CONFIG = web.AppKey("bedrock_config", dict)
STATS = web.AppKey("bedrock_stats", dict)
SESSION = web.AppKey("bedrock_session", aiohttp.ClientSession)
SERVICE = "bedrock"

_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[^,]+),\s*Signature=(?P<sig>[0-9a-f]{64})"
)
# OpenAI finish reasons (the upstream's) as ConverseStream stop reasons
_STOP_REASON = {"length": "max_tokens", "stop": "end_turn", "tool_calls": "tool_use"}


def aws_error(status: int, error_type: str, message: str) -> web.Response:
    """An error as Bedrock's REST-JSON protocol sends it: botocore reads the code from
    x-amzn-ErrorType and the message from the body."""
    return web.json_response({"message": message}, status=status, headers={"x-amzn-ErrorType": error_type})


def verify_sigv4(
    request: web.Request,
    body: bytes,
    access_key: str,
    secret_key: str,
    token: str | None,
    region: str,
    service: str = SERVICE,
) -> tuple[str, str] | None:
    """None if the request is signed correctly for `service` in `region`, else (the AWS error
    type, why). The signature is recomputed over the raw path as received (still percent-encoded:
    SigV4 encodes it once more), so a client that signed one URL and sent another fails here."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    m = _AUTH.fullmatch(request.headers.get("Authorization", ""))
    if not m:
        return "MissingAuthenticationTokenException", "Missing Authentication Token"
    if m["service"] != service:
        return "InvalidSignatureException", f"Credential should be scoped to correct service: '{service}'."
    if m["region"] != region:
        return "InvalidSignatureException", f"Credential should be scoped to a valid region, not '{m['region']}'."
    if m["key"] != access_key:
        return "UnrecognizedClientException", "The security token included in the request is invalid."
    if token is not None and request.headers.get("X-Amz-Security-Token") != token:
        return "UnrecognizedClientException", "The security token included in the request is invalid."
    signed = m["signed"].split(";")
    headers = {h: request.headers.get(h, "") for h in signed if h != "host"}
    url = f"http://{request.headers['Host']}{request.raw_path}"
    req = AWSRequest(method=request.method, url=url, data=body, headers=headers)
    req.context["timestamp"] = request.headers.get("X-Amz-Date", "")
    auth = SigV4Auth(Credentials(access_key, secret_key, token), service, region)
    if sorted(signed) != sorted(auth.headers_to_sign(req).keys()):
        return "InvalidSignatureException", f"signed headers {signed} do not match the request"
    expected = auth.signature(auth.string_to_sign(req, auth.canonical_request(req)), req)
    if not hmac.compare_digest(expected, m["sig"]):
        return (
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided.",
        )
    return None


def _text(blocks: list[dict[str, Any]]) -> str:
    return "".join(b.get("text", "") for b in blocks)


def chat_body(converse: dict[str, Any], model: str) -> dict[str, Any]:
    """A Converse request as the OpenAI streamed chat completion the upstream serves."""
    messages = [{"role": "system", "content": _text(converse["system"])}] if converse.get("system") else []
    messages += [{"role": m["role"], "content": _text(m["content"])} for m in converse["messages"]]
    cfg = converse.get("inferenceConfig") or {}
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,  # exactly maxTokens, so lengths can be checked (Bedrock ends at end of turn)
    }
    if cfg.get("maxTokens") is not None:
        body["max_tokens"] = cfg["maxTokens"]
    if cfg.get("temperature") is not None:
        body["temperature"] = cfg["temperature"]
    return body


class _Frames:
    """One response's frame writer: counts frames and injects the configured stream faults."""

    def __init__(self, resp: web.StreamResponse, cfg: dict, stats: dict):
        self.resp, self.cfg, self.stats = resp, cfg, stats
        self.frames = 0
        self.ended = False  # a fault ended the stream: write nothing more

    async def event(self, event_type: str, payload: dict) -> None:
        if self.ended:
            return
        cfg = self.cfg
        for key, kind, message in (
            ("throttle_in_stream_after", "throttlingException", "Too many tokens, please wait before trying again."),
            ("stream_error_after", "modelStreamErrorException", "injected fault: the model failed mid-stream"),
        ):
            if cfg.get(key) is not None and self.frames >= cfg[key]:
                self.stats["stream_faults"] += 1
                await self.resp.write(exception_frame(kind, message))
                self.ended = True
                return
        frame = event_frame(event_type, payload)
        if cfg.get("bad_crc_after") is not None and self.frames >= cfg["bad_crc_after"]:
            frame = frame[:-1] + bytes([frame[-1] ^ 0xFF])
        self.frames += 1
        self.stats["frames"] += 1
        await self.resp.write(frame)

    async def delta(self, text: str) -> None:
        await self.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}})

    async def finish(self, stop_reason: str, input_tokens: int, output_tokens: int, latency_ms: int) -> None:
        await self.event("contentBlockStop", {"contentBlockIndex": 0})
        await self.event("messageStop", {"stopReason": stop_reason})
        usage = {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens,
        }
        await self.event("metadata", {"usage": usage, "metrics": {"latencyMs": latency_ms}})


STREAM_FAULTS = ("throttle_in_stream_after", "stream_error_after", "bad_crc_after")


def parse_fault_model(spec: str) -> tuple[str, dict[str, int]]:
    """`SUBSTRING:FAULT=K[,FAULT=K...][,every=N]` (the --fault-model flag) as (substring, faults)."""
    part, sep, rest = spec.rpartition(":")
    if not sep or not part or not rest:
        raise ValueError(f"--fault-model {spec!r}: expected SUBSTRING:FAULT=K[,every=N]")
    faults: dict[str, int] = {}
    for item in rest.split(","):
        key, eq, value = item.partition("=")
        if not eq or key not in (*STREAM_FAULTS, "every"):
            raise ValueError(f"--fault-model {spec!r}: {item!r} is not one of {', '.join(STREAM_FAULTS)}, every")
        try:
            faults[key] = int(value)
        except ValueError:
            raise ValueError(f"--fault-model {spec!r}: {key} takes an integer, not {value!r}") from None
    if faults.get("every", 1) < 1:
        raise ValueError(f"--fault-model {spec!r}: every must be at least 1")
    if not set(faults) & set(STREAM_FAULTS):
        raise ValueError(f"--fault-model {spec!r}: names no fault ({', '.join(STREAM_FAULTS)})")
    return part, faults


def _stream_faults(cfg: dict, stats: dict, model_id: str) -> dict:
    """The in-stream faults of this request: the server-wide ones, overridden by those of every
    fault_models entry whose substring is in the model id and whose turn this request is."""
    faults = {k: cfg.get(k) for k in STREAM_FAULTS}
    matching = [f for part, f in (cfg.get("fault_models") or {}).items() if part in model_id]
    if matching:
        n = stats["faulted_per_model"].get(model_id, 0) + 1
        stats["faulted_per_model"][model_id] = n
        for f in matching:
            if n % f.get("every", 1) == 0:
                faults.update({k: v for k, v in f.items() if k in STREAM_FAULTS})
    return faults


def _throttled(cfg: dict, stats: dict, model_id: str) -> bool:
    """Whether this request is one the throttle faults answer with 429 (counted per fault)."""
    if cfg.get("throttle_every") and stats["accepted"] % cfg["throttle_every"] == 0:
        return True
    for part, every in (cfg.get("throttle_models") or {}).items():
        if part in model_id:
            n = stats["per_model"].get(model_id, 0) + 1
            stats["per_model"][model_id] = n
            if n % every == 0:
                return True
    return False


def _admit(request: web.Request, body: bytes) -> web.Response | None:
    """The refusal of a request whose signature or model id is wrong (counted), else None: one
    check for ConverseStream and Converse."""
    cfg, stats = request.app[CONFIG], request.app[STATS]
    why = verify_sigv4(request, body, cfg["access_key"], cfg["secret_key"], cfg.get("session_token"), cfg["region"])
    if why:
        stats["rejected"] += 1
        return aws_error(403, *why)
    if cfg.get("model_ids") is not None and request.match_info["model_id"] not in cfg["model_ids"]:
        stats["invalid"] += 1
        return aws_error(400, "ValidationException", "The provided model identifier is invalid.")
    return None


async def converse_stream(request: web.Request) -> web.StreamResponse:
    arrival = time.perf_counter()  # the schedule counts from here: checking the signature is server time
    cfg, stats = request.app[CONFIG], request.app[STATS]
    body = await request.read()
    refused = _admit(request, body)
    if refused is not None:
        return refused
    model_id = request.match_info["model_id"]  # aiohttp matches the percent-decoded path
    try:
        converse = json.loads(body)
        prompt_words = sum(len(_text(m["content"]).split()) for m in converse["messages"])
        prompt_words += len(_text(converse.get("system") or []).split())
    except (ValueError, KeyError, TypeError) as e:
        stats["invalid"] += 1
        return aws_error(400, "ValidationException", f"Malformed input request: {e}")
    stats["accepted"] += 1
    if _throttled(cfg, stats, model_id):
        stats["throttled"] += 1
        return aws_error(429, "ThrottlingException", "Too many requests, please wait before trying again.")
    resp = web.StreamResponse(headers={"Content-Type": EVENTSTREAM, "x-amzn-RequestId": str(uuid.uuid4())})
    await resp.prepare(request)
    out = _Frames(resp, _stream_faults(cfg, stats, model_id), stats)
    await out.event("messageStart", {"role": "assistant"})
    if cfg["upstream"] is None:
        n = await _scheduled(request.app, converse, arrival, out, prompt_words)
    else:
        n = await _forwarded(request.app, cfg, converse, model_id, out, arrival)
    if not out.ended:
        stats["served"] += 1
        stats["output_tokens"] += n
    await resp.write_eof()
    return resp


def _openai_tool_choice(choice: dict[str, Any]) -> Any:
    if "any" in choice:
        return "required"
    if "tool" in choice:
        return {"type": "function", "function": {"name": choice["tool"]["name"]}}
    return "auto"


def converse_chat_body(converse: dict[str, Any], model: str) -> dict[str, Any]:
    """A Converse request as the non-streaming OpenAI chat completion the upstream serves."""
    body = chat_body(converse, model)
    for key in ("stream", "stream_options", "ignore_eos"):
        body.pop(key)
    body["stream"] = False
    tools = (converse.get("toolConfig") or {}).get("tools") or []
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t["toolSpec"]["name"],
                    "description": t["toolSpec"].get("description", ""),
                    "parameters": t["toolSpec"]["inputSchema"]["json"],
                },
            }
            for t in tools
        ]
        if "toolChoice" in converse["toolConfig"]:
            body["tool_choice"] = _openai_tool_choice(converse["toolConfig"]["toolChoice"])
    return body


def _tool_input(arguments: Any) -> Any:
    """A tool call's arguments as Converse's toolUse.input (a JSON document): parsed when they
    are JSON, else the string as the model wrote it (Bedrock's own models always give an object;
    the grader then says why a string is wrong)."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def converse_response(completion: dict[str, Any], latency_ms: int) -> dict[str, Any]:
    """An OpenAI chat completion as Converse's response body."""
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if message.get("content"):
        content.append({"text": message["content"]})
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        content.append(
            {
                "toolUse": {
                    "toolUseId": call.get("id") or f"tooluse_{i}",
                    "name": fn.get("name", ""),
                    "input": _tool_input(fn.get("arguments", "{}")),
                }
            }
        )
    if not content:
        content.append({"text": ""})
    usage = completion.get("usage") or {}
    inp, out = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
    finish = choice.get("finish_reason") or "stop"
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": _STOP_REASON.get(finish, finish),
        "usage": {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out},
        "metrics": {"latencyMs": latency_ms},
    }


async def converse(request: web.Request) -> web.Response:
    arrival = time.perf_counter()
    cfg, stats = request.app[CONFIG], request.app[STATS]
    body = await request.read()
    refused = _admit(request, body)
    if refused is not None:
        return refused
    model_id = request.match_info["model_id"]  # aiohttp matches the percent-decoded path
    try:
        chat = converse_chat_body(json.loads(body), model_id)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        stats["invalid"] += 1
        return aws_error(400, "ValidationException", f"Malformed input request: {e!r}")
    stats["accepted"] += 1
    if _throttled(cfg, stats, model_id):
        stats["throttled"] += 1
        return aws_error(429, "ThrottlingException", "Too many requests, please wait before trying again.")
    if cfg["upstream"] is None:
        return aws_error(400, "ValidationException", "this test server answers Converse only with --upstream")
    async with request.app[SESSION].post(cfg["upstream"].rstrip("/") + "/v1/chat/completions", json=chat) as up:
        data = await up.read()
        if up.status != 200:
            detail = data[:500].decode("utf-8", "replace")
            if 400 <= up.status < 500:
                return aws_error(400, "ValidationException", detail)
            return aws_error(424, "ModelErrorException", f"upstream {up.status}: {detail}")
    completion = json.loads(data)
    stats["served"] += 1
    stats["conversed"] += 1
    stats["output_tokens"] += int((completion.get("usage") or {}).get("completion_tokens", 0))
    out = converse_response(completion, round(1000 * (time.perf_counter() - arrival)))
    return web.json_response(out, headers={"x-amzn-RequestId": str(uuid.uuid4())})


async def _scheduled(app: web.Application, converse: dict, arrival: float, out: _Frames, prompt_words: int) -> int:
    """The calibration schedule as ConverseStream events; each token's write time recorded (the
    same record as testing/calibration's, GET /calibration/record)."""
    from llmbench.testing.calibration import SCHEDULE, SENT

    sched = app[SCHEDULE]
    n = int((converse.get("inferenceConfig") or {}).get("maxTokens") or sched["tokens"])
    sent: list[float] = []
    for k in range(n):
        delay = arrival + (sched["ttft_ms"] + k * sched["itl_ms"]) / 1000 - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await out.delta(" tok")
        if out.ended:
            break
        sent.append(time.perf_counter())
    await out.finish("max_tokens", prompt_words, n, round(1000 * (time.perf_counter() - arrival)))
    if not out.ended:
        app[SENT].append({"arrival": arrival, "sent": sent})
    return len(sent)


async def _forwarded(
    app: web.Application, cfg: dict, converse: dict, model_id: str, out: _Frames, arrival: float
) -> int:
    """The request as a streamed chat completion to the upstream; each SSE content chunk as a
    contentBlockDelta, its finish reason as messageStop, its usage as metadata."""
    url = cfg["upstream"].rstrip("/") + "/v1/chat/completions"
    stop, usage, n = "end_turn", {}, 0
    async with app[SESSION].post(url, json=chat_body(converse, model_id)) as up:
        if up.status != 200:
            # the stream has begun (messageStart): a model failure is reported in it, as Bedrock does
            detail = (await up.text())[:300]
            await out.resp.write(exception_frame("modelStreamErrorException", f"upstream {up.status}: {detail}"))
            out.ended = True
            return 0
        async for raw in up.content:
            line = raw.strip()
            if not line.startswith(b"data:") or line[5:].strip() == b"[DONE]":
                continue
            chunk = json.loads(line[5:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                text = (choice.get("delta") or {}).get("content")
                if text:
                    n += 1
                    await out.delta(text)
                if choice.get("finish_reason"):
                    stop = _STOP_REASON.get(choice["finish_reason"], choice["finish_reason"])
    latency_ms = round(1000 * (time.perf_counter() - arrival))
    await out.finish(stop, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", n)), latency_ms)
    return int(usage.get("completion_tokens", n))


async def _stats(request: web.Request) -> web.Response:
    return web.json_response(request.app[STATS])


def make_app(
    upstream: str | None,
    access_key: str,
    secret_key: str,
    session_token: str | None = None,
    region: str = "us-east-1",
    model_ids: set[str] | None = None,
    upstream_keep_alive: bool = True,
    calibration: dict | None = None,
    *,
    throttle_every: int | None = None,
    throttle_models: dict[str, int] | None = None,
    throttle_in_stream_after: int | None = None,
    stream_error_after: int | None = None,
    bad_crc_after: int | None = None,
    fault_models: dict[str, dict[str, int]] | None = None,
) -> web.Application:
    """upstream None: serve the calibration schedule (`calibration`: ttft_ms, itl_ms, tokens);
    the same app then also serves it over plain OpenAI HTTP (testing/calibration's routes)."""
    app = web.Application(client_max_size=16 * 1024 * 1024)
    if upstream is None:
        from llmbench.testing.calibration import add_routes

        add_routes(app, **(calibration or {}))
    app[CONFIG] = {
        "upstream": upstream,
        "access_key": access_key,
        "secret_key": secret_key,
        "session_token": session_token,
        "region": region,
        "model_ids": model_ids,
        "upstream_keep_alive": upstream_keep_alive,
        "throttle_every": throttle_every,
        "throttle_models": throttle_models,
        "throttle_in_stream_after": throttle_in_stream_after,
        "stream_error_after": stream_error_after,
        "bad_crc_after": bad_crc_after,
        "fault_models": fault_models,
    }
    app[STATS] = {
        "accepted": 0,  # signed, known model, well-formed
        "rejected": 0,  # 403: signature, key, region or service
        "invalid": 0,  # 400: unknown model id or malformed body
        "throttled": 0,  # 429 before the stream
        "stream_faults": 0,  # exception frames injected
        "served": 0,  # streams completed, and Converse answers
        "conversed": 0,  # Converse (non-streaming) answers
        "frames": 0,
        "output_tokens": 0,
        "per_model": {},  # requests per model id that a throttle_models entry counts
        "faulted_per_model": {},  # requests per model id that a fault_models entry counts
    }
    app.cleanup_ctx.append(upstream_session(SESSION, CONFIG))
    app.router.add_post("/model/{model_id}/converse-stream", converse_stream)
    app.router.add_post("/model/{model_id}/converse", converse)
    app.router.add_get("/bedrock/stats", _stats)
    return app


def main() -> None:
    p = argparse.ArgumentParser(description="Bedrock runtime ConverseStream wire-format server (tests, benchmarks)")
    p.add_argument("--upstream", help="OpenAI-compatible server base URL (without /v1); none: calibration schedule")
    p.add_argument("--ttft-ms", type=float, default=100.0, help="calibration schedule (no --upstream)")
    p.add_argument("--itl-ms", type=float, default=10.0, help="calibration schedule (no --upstream)")
    p.add_argument("--tokens", type=int, default=256, help="calibration schedule: tokens when maxTokens is absent")
    p.add_argument("--port", type=int, default=8003)
    p.add_argument("--access-key", default="AKIDLLMBENCHTEST")
    p.add_argument("--secret-key", default="llmbench-test-secret")
    p.add_argument("--region", default="us-east-1", help="the region requests must be signed for")
    p.add_argument("--model-id", action="append", help="an allowed model id (repeatable); none: any")
    p.add_argument("--fresh-upstream-connections", action="store_true", help="for llama-server upstreams")
    p.add_argument("--throttle-every", type=int, help="answer every N-th request with HTTP 429 ThrottlingException")
    p.add_argument(
        "--throttle-model",
        action="append",
        default=[],
        metavar="SUBSTRING:EVERY",
        help="answer every EVERY-th request to model ids containing SUBSTRING with HTTP 429",
    )
    p.add_argument("--throttle-in-stream-after", type=int, help="a throttlingException frame after K frames")
    p.add_argument("--stream-error-after", type=int, help="a modelStreamErrorException frame after K frames")
    p.add_argument("--bad-crc-after", type=int, help="corrupt the checksum of frames after the K-th")
    p.add_argument(
        "--fault-model",
        action="append",
        default=[],
        metavar="SUBSTRING:FAULT=K[,every=N]",
        help="an in-stream fault (throttle_in_stream_after, stream_error_after, bad_crc_after) only for model ids "
        "containing SUBSTRING, on every N-th of their requests (default: every one); repeatable",
    )
    a = p.parse_args()
    try:
        fault_models = dict(parse_fault_model(f) for f in a.fault_model)
    except ValueError as e:
        p.error(str(e))
    app = make_app(
        a.upstream,
        a.access_key,
        a.secret_key,
        region=a.region,
        model_ids=set(a.model_id) if a.model_id else None,
        upstream_keep_alive=not a.fresh_upstream_connections,
        calibration={"ttft_ms": a.ttft_ms, "itl_ms": a.itl_ms, "tokens": a.tokens},
        throttle_every=a.throttle_every,
        throttle_models={part: int(every) for part, every in (f.rsplit(":", 1) for f in a.throttle_model)},
        throttle_in_stream_after=a.throttle_in_stream_after,
        stream_error_after=a.stream_error_after,
        bad_crc_after=a.bad_crc_after,
        fault_models=fault_models or None,
    )
    web.run_app(app, host="127.0.0.1", port=a.port, access_log=None)


if __name__ == "__main__":
    main()
