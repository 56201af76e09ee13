"""issue 16 item 1: the quality stage over SageMaker (InvokeEndpoint) and Bedrock (Converse), end to
end: llmbench.quality.run_quality through the SigV4-checking wire-format servers' non-streaming
routes to the real local llama-server, and botocore's own bedrock-runtime client parsing the
Converse server's answers. SmolLM2-135M never calls a tool (it answers in prose, even with
tool_choice "required"), so that tool calls round-trip through each wire is shown with a scripted
OpenAI upstream of this file that answers with tool calls, as a tool-calling model does."""

import json
import re

import pytest
from aiohttp import web

from llmbench import quality
from llmbench.backends.bedrock.wire import tool_config
from llmbench.schemas.targets import QualitySettings
from llmbench.testing import bedrock_runtime, sagemaker_runtime
from llmbench.testing._serve import BackgroundServer
from tests.integration.test_bedrock_wire import MODEL, bedrock_endpoint, boto_client
from tests.integration.test_sagemaker_wire import AK, SK, sagemaker_endpoint

pytestmark = pytest.mark.integration

SIZES = {"exact": len(quality.EXACT_ITEMS), "tool_call": len(quality.TOOL_ITEMS)}


def settings(suites, max_tokens=96):
    return QualitySettings(suites=suites, runs=1, max_tokens=max_tokens, request_timeout_s=120)


def wire_server(wire, upstream):
    if wire == "sagemaker":
        app = sagemaker_runtime.make_app(upstream, AK, SK, endpoints={"bench-endpoint"}, upstream_keep_alive=False)
        return app, sagemaker_runtime.STATS, sagemaker_endpoint
    app = bedrock_runtime.make_app(upstream, AK, SK, model_ids={MODEL}, upstream_keep_alive=False)
    return app, bedrock_runtime.STATS, bedrock_endpoint


def graded(tmp_path):
    return [json.loads(x) for x in (tmp_path / "quality.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("wire", ["sagemaker", "bedrock"])
def test_quality_over_the_wire_against_the_real_model(wire, local_server, tmp_path):
    app, stats_key, endpoint = wire_server(wire, local_server["base_url"])
    with BackgroundServer(app) as srv:
        ep = endpoint(srv.url)
        assert ep.wire == wire
        # 8 tokens: the model's first words are all the grader needs, and two shared cores make ~7 per second
        s = quality.run_quality(ep, settings(["tool_call", "exact"], max_tokens=8), tmp_path)
        stats = app[stats_key]
    lines = graded(tmp_path)
    assert json.loads((tmp_path / "quality.json").read_text()) == s
    for suite, n in SIZES.items():
        summary = s["suites"][suite]
        mine = [x for x in lines if x["suite"] == suite]
        assert summary["status"] == "scored" and summary["n"] == n == len(mine), (suite, summary)
        assert summary["passed"] == sum(x["passed"] for x in mine) and summary["score"] == summary["passed"] / n
        # every answer is the model's (text or a tool call), none a failed request, each with the grader's reason
        for x in mine:
            assert not x["error"] and (x["text"] or x["tool_calls"]) and x["reason"], x
        print(wire, suite, f"{summary['passed']}/{n}", [(x["item"], x["reason"]) for x in mine[:2]])
    assert stats["rejected"] == 0
    assert stats["invocations" if wire == "sagemaker" else "conversed"] == sum(SIZES.values())
    if wire == "bedrock":  # the raw answer kept is Converse's own response
        assert all(x["raw"]["output"]["message"]["role"] == "assistant" and x["raw"]["stopReason"] for x in lines)


def test_botocore_parses_the_converse_answer_of_the_real_model(local_server):
    app = bedrock_runtime.make_app(local_server["base_url"], AK, SK, model_ids={MODEL}, upstream_keep_alive=False)
    with BackgroundServer(app) as srv:
        client = boto_client(srv.url)
        question = [{"role": "user", "content": [{"text": quality.TOOL_ITEMS[0].prompt}]}]
        r = client.converse(modelId=MODEL, messages=question,
                            toolConfig=tool_config(quality.OPENAI_TOOLS), inferenceConfig={"maxTokens": 8, "temperature": 0})
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
        assert r["output"]["message"]["role"] == "assistant" and r["output"]["message"]["content"]
        assert r["stopReason"] in ("end_turn", "max_tokens", "tool_use")
        assert r["usage"]["outputTokens"] <= 8 and r["usage"]["inputTokens"] > 0 and r["metrics"]["latencyMs"] >= 0
        from botocore.exceptions import ClientError

        bad = boto_client(srv.url, secret="wrong")
        with pytest.raises(ClientError) as e:
            bad.converse(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])
        assert e.value.response["Error"]["Code"] == "InvalidSignatureException"
        assert app[bedrock_runtime.STATS]["rejected"] == 1


# ---- tool calls through each wire, from an upstream that makes them ------------------------------

_IDS = re.compile(r"\[([-\d, ]+)\]")


def scripted_upstream(received):
    """An OpenAI chat-completions server that answers as a right-answering, tool-calling model: a
    count_ids call with the question's ids and its right filter when tools are offered (arguments
    as a JSON string, as OpenAI sends them), else the exact item's answer. Keeps every body it got."""
    tools = {i.prompt: i for i in quality.TOOL_ITEMS}
    exact = {i.prompt: i.answer for i in quality.EXACT_ITEMS}

    async def chat(request):
        body = await request.json()
        received.append(body)
        prompt = body["messages"][-1]["content"]
        if body.get("tools"):
            item = tools[prompt]
            args = json.dumps({"ids": [int(v) for v in _IDS.search(prompt).group(1).split(",")],
                               "filter": item.expected})
            message = {"role": "assistant", "content": None,
                       "tool_calls": [{"id": f"call_{item.id}", "type": "function",
                                       "function": {"name": "count_ids", "arguments": args}}]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": exact[prompt]}, "stop"
        return web.json_response({"object": "chat.completion", "choices": [
            {"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


@pytest.mark.parametrize("wire", ["sagemaker", "bedrock"])
def test_tool_calls_round_trip_through_the_wire(wire, tmp_path):
    received = []
    with BackgroundServer(scripted_upstream(received)) as upstream:
        app, _, endpoint = wire_server(wire, upstream.url)
        with BackgroundServer(app) as srv:
            s = quality.run_quality(endpoint(srv.url), settings(["tool_call", "exact"], max_tokens=48), tmp_path)
    tc = s["suites"]["tool_call"]
    assert {k: tc[k] for k in ("status", "score", "n", "passed", "reason")} == {
        "status": "scored", "score": 1.0, "n": SIZES["tool_call"], "passed": SIZES["tool_call"], "reason": None}
    assert s["suites"]["exact"]["score"] == 1.0
    tool_lines = [x for x in graded(tmp_path) if x["suite"] == "tool_call"]
    by_item = {i.id: i for i in quality.TOOL_ITEMS}
    for x in tool_lines:
        assert [c["name"] for c in x["tool_calls"]] == ["count_ids"]
        args = json.loads(x["tool_calls"][0]["arguments"])
        assert args["filter"] == by_item[x["item"]].expected and sorted(args["ids"]) == sorted(by_item[x["item"]].ids)
    # what the model server was asked: the OpenAI tools, whichever wire they crossed (Converse's toolConfig
    # translated), non-streaming, with the quality stage's max_tokens
    asked = [b for b in received if b.get("tools")]
    assert len(asked) == SIZES["tool_call"] and all(b["tools"] == quality.OPENAI_TOOLS for b in asked)
    assert all(b["stream"] is False and b["max_tokens"] == 48 for b in received)
    if wire == "bedrock":
        raw = tool_lines[0]["raw"]
        block = raw["output"]["message"]["content"][0]["toolUse"]
        assert raw["stopReason"] == "tool_use" and block["toolUseId"].startswith("call_")
        assert isinstance(block["input"], dict)  # Converse carries the arguments as a JSON object


def test_botocore_parses_a_converse_tool_use(tmp_path):
    with BackgroundServer(scripted_upstream([])) as upstream:
        app = bedrock_runtime.make_app(upstream.url, AK, SK, model_ids={MODEL})
        with BackgroundServer(app) as srv:
            item = quality.TOOL_ITEMS[1]
            r = boto_client(srv.url).converse(
                modelId=MODEL, messages=[{"role": "user", "content": [{"text": item.prompt}]}],
                toolConfig={**tool_config(quality.OPENAI_TOOLS), "toolChoice": {"any": {}}})
    assert r["stopReason"] == "tool_use"
    (block,) = r["output"]["message"]["content"]
    assert block["toolUse"] == {"toolUseId": f"call_{item.id}", "name": "count_ids",
                                "input": {"ids": list(item.ids), "filter": item.expected}}
    assert r["usage"] == {"inputTokens": 20, "outputTokens": 9, "totalTokens": 29}


def test_a_model_server_refusing_tools_is_unsupported_over_each_wire(tmp_path):
    """llama-server without jinja templates refuses `tools`: through SageMaker that is a 424
    ModelError carrying its message, through Bedrock a 400 ValidationException; either way the
    suite is "unsupported", not a score of 0."""

    async def chat(request):
        body = await request.json()
        if body.get("tools"):
            return web.json_response({"error": {"code": 500, "message": "tools param requires --jinja flag"}},
                                     status=500)
        return web.json_response({"choices": [{"message": {"content": "12"}, "finish_reason": "stop"}]})

    refusing = web.Application()
    refusing.router.add_post("/v1/chat/completions", chat)
    with BackgroundServer(refusing) as upstream:
        for wire in ("sagemaker", "bedrock"):
            app, _, endpoint = wire_server(wire, upstream.url)
            with BackgroundServer(app) as srv:
                s = quality.run_quality(endpoint(srv.url), settings(["tool_call"]), tmp_path / wire)
            assert s["suites"]["tool_call"]["status"] == "unsupported", (wire, s)
            assert "--jinja" in s["suites"]["tool_call"]["reason"], (wire, s)
