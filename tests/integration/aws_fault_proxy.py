"""A fault-injecting proxy in front of moto's server, for the fault matrix: every SageMaker control
plane call goes through it to moto, except those a rule turns into an AWS error or whose answer a
rule rewrites. Rules match the call's action (X-Amz-Target) and a substring of its JSON body (our
resource names carry the target id), so one DAG run can fail each target at a different point.

  {"action": "CreateModel", "match": "mk-fail", "error": "ValidationException", "message": "..."}
  {"action": "DeleteEndpoint", "match": "td-flaky", "error": "ValidationException", "times": 1}
  {"action": "DescribeEndpoint", "match": "ep-failed", "rewrite": {"EndpointStatus": "Failed"}}
"""

from __future__ import annotations

import json

import aiohttp
from aiohttp import web

RULES = web.AppKey("rules", list)
CALLS = web.AppKey("calls", list)
SESSION = web.AppKey("session", aiohttp.ClientSession)


def make_app(upstream: str, rules: list[dict]) -> web.Application:
    app = web.Application(client_max_size=16 * 1024 * 1024)
    app[RULES], app[CALLS] = rules, []

    async def session(app: web.Application):
        app[SESSION] = aiohttp.ClientSession()
        yield
        await app[SESSION].close()

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        action = request.headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
        text = body.decode("utf-8", "replace")
        request.app[CALLS].append(action)
        rewrite = None
        for rule in request.app[RULES]:
            if rule["action"] != action or rule["match"] not in text or rule.get("times", -1) == 0:
                continue
            if rule.get("times", -1) > 0:
                rule["times"] -= 1
            rule["fired"] = rule.get("fired", 0) + 1
            if "error" in rule:
                return web.json_response({"__type": rule["error"], "message": rule.get("message", "injected fault")},
                                         status=rule.get("status", 400))
            rewrite = rule["rewrite"]
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        async with request.app[SESSION].request(request.method, upstream + request.path_qs, data=body,
                                                headers=headers) as up:
            data = await up.read()
            if rewrite is not None and up.status == 200:
                data = json.dumps({**json.loads(data), **rewrite}).encode()
            return web.Response(body=data, status=up.status,
                                headers={"Content-Type": up.headers.get("Content-Type", "application/x-amz-json-1.1")})

    app.cleanup_ctx.append(session)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app
