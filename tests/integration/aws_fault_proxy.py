"""A fault-injecting proxy in front of moto's server, for the fault matrices: every AWS control
plane call goes through it to moto, except those a rule turns into an AWS error or whose answer a
rule rewrites. Rules match the call's action and a substring of its request body (our resource
names and tags carry the target id) or, with `match_response`, of moto's answer, so one DAG run
can fail each target at a different point.

Two protocols: JSON (SageMaker: the action is the X-Amz-Target header; errors are JSON `__type`
and `message`) and Query (EC2: the action is the form field `Action` of the url-encoded body;
errors are EC2's XML `<Response><Errors><Error><Code>`).

  {"action": "CreateModel", "match": "mk-fail", "error": "ValidationException", "message": "..."}
  {"action": "DeleteEndpoint", "match": "td-flaky", "error": "ValidationException", "times": 1}
  {"action": "DescribeEndpoint", "match": "ep-failed", "rewrite": {"EndpointStatus": "Failed"}}
  {"action": "RunInstances", "match": "ec2-full", "error": "InsufficientInstanceCapacity", "message": "..."}
  {"action": "DescribeInstances", "match_response": "ec2-stuck",
   "replace": [["<name>running</name>", "<name>pending</name>"]]}

`rewrite` merges keys into a JSON answer; `replace` substitutes text in any answer (each [old,
new] pair, every occurrence), so answer only calls whose answer is about the one resource the
rule targets (a DescribeInstances of one instance id, not a listing). A rule fires at most
`times` times (default: always); `fired` counts how often it did.
"""

from __future__ import annotations

import json
import uuid
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

import aiohttp
from aiohttp import web

RULES = web.AppKey("rules", list)
CALLS = web.AppKey("calls", list)
SESSION = web.AppKey("session", aiohttp.ClientSession)


def _action(request: web.Request, text: str) -> tuple[str, bool]:
    """(the call's action, whether it speaks the Query protocol)."""
    target = request.headers.get("X-Amz-Target")
    if target:
        return target.rsplit(".", 1)[-1], False
    if request.content_type == "application/x-www-form-urlencoded":
        action = parse_qs(text).get("Action")
        if action:
            return action[0], True
    return "", False


def _error(rule: dict, query: bool) -> web.Response:
    message = rule.get("message", "injected fault")
    status = rule.get("status", 400)
    if query:  # EC2's Query-protocol error document (botocore's ec2 parser reads Errors/Error)
        xml = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{escape(rule['error'])}"
               f"</Code><Message>{escape(message)}</Message></Error></Errors>"
               f"<RequestID>{uuid.uuid4()}</RequestID></Response>")
        return web.Response(text=xml, status=status, content_type="text/xml")
    return web.json_response({"__type": rule["error"], "message": message}, status=status)


def _fire(rule: dict) -> None:
    if rule.get("times", -1) > 0:
        rule["times"] -= 1
    rule["fired"] = rule.get("fired", 0) + 1


def make_app(upstream: str, rules: list[dict]) -> web.Application:
    app = web.Application(client_max_size=16 * 1024 * 1024)
    app[RULES], app[CALLS] = rules, []

    async def session(app: web.Application):
        app[SESSION] = aiohttp.ClientSession()
        yield
        await app[SESSION].close()

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        text = body.decode("utf-8", "replace")
        action, query = _action(request, text)
        request.app[CALLS].append(action)
        rewrites: list[dict] = []
        on_response: list[dict] = []
        for rule in request.app[RULES]:
            if rule["action"] != action or rule.get("times", -1) == 0:
                continue
            if "match_response" in rule:
                on_response.append(rule)
                continue
            if rule["match"] not in text:
                continue
            _fire(rule)
            if "error" in rule:
                return _error(rule, query)
            rewrites.append(rule)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        async with request.app[SESSION].request(request.method, upstream + request.path_qs, data=body,
                                                headers=headers) as up:
            data = await up.read()
            content_type = up.headers.get("Content-Type", "application/x-amz-json-1.1")
            if up.status == 200:
                answer = data.decode("utf-8", "replace")
                for rule in on_response:
                    if rule["match_response"] in answer:
                        _fire(rule)
                        rewrites.append(rule)
                for rule in rewrites:
                    if "rewrite" in rule:
                        data = json.dumps({**json.loads(data), **rule["rewrite"]}).encode()
                    for old, new in rule.get("replace", []):
                        data = data.replace(old.encode(), new.encode())
            return web.Response(body=data, status=up.status, headers={"Content-Type": content_type})

    app.cleanup_ctx.append(session)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app
