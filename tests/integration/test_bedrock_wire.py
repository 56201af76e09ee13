"""Bedrock ConverseStream end to end: botocore's own bedrock-runtime client against the wire-format
server (the frames and the SigV4 check, independently of our client), then our load generator
(BedrockBackend's endpoint) against it: a real model behind it, the calibrated schedule, faults."""

import json
import urllib.error
import urllib.request

import boto3
import pandas as pd
import pytest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, EventStreamError

from llmbench.backends.awsstream import SigV4Signer
from llmbench.backends.bedrock.backend import BedrockBackend, bedrock_headers, converse_stream_url
from llmbench.loadgen.sweep import run_sweep, run_warmup
from llmbench.testing import bedrock_runtime, calibration
from llmbench.testing._serve import BackgroundServer, ServerProcess
from tests.integration.test_sagemaker_wire import assert_matches_record, server_truth

AK, SK = "AKIDLLMBENCHTEST", "llmbench-test-secret"
REGION = "us-east-1"
MODEL = "us.amazon.nova-micro-v1:0"
SMALL = {"input_tokens": 32, "output_tokens": 12, "concurrency": [2], "requests_per_level": 4,
         "request_timeout_s": 30}


def bedrock_endpoint(base_url, model_id=MODEL, secret=SK, region=REGION):
    """Our client's endpoint as the backend builds it, from a boto3 session's credentials."""
    backend = BedrockBackend(boto3.Session(aws_access_key_id=AK, aws_secret_access_key=secret, region_name=region))
    return backend.endpoint(backend.attach(region, model_id, base_url))


def boto_client(url, secret=SK, region=REGION):
    # one attempt: botocore would otherwise retry a 429 itself
    return boto3.client("bedrock-runtime", region_name=region, endpoint_url=url, aws_access_key_id=AK,
                        aws_secret_access_key=secret, config=Config(retries={"total_max_attempts": 1}))


def converse(client, model_id=MODEL, max_tokens=7):
    return client.converse_stream(modelId=model_id, system=[{"text": "be brief"}],
                                  messages=[{"role": "user", "content": [{"text": "one two three"}]}],
                                  inferenceConfig={"maxTokens": max_tokens, "temperature": 0})


def test_botocore_client_parses_every_event_and_the_signature_is_checked():
    app = bedrock_runtime.make_app(None, AK, SK, model_ids={MODEL}, calibration={"ttft_ms": 5, "itl_ms": 1},
                                   throttle_models={"anthropic": 1})
    with BackgroundServer(app) as srv:
        events = list(converse(boto_client(srv.url))["stream"])
        assert [next(iter(e)) for e in events] == (["messageStart"] + ["contentBlockDelta"] * 7
                                                   + ["contentBlockStop", "messageStop", "metadata"])
        assert events[0]["messageStart"] == {"role": "assistant"}
        assert all(e["contentBlockDelta"]["delta"]["text"] for e in events[1:8])
        assert events[-2]["messageStop"]["stopReason"] == "max_tokens"
        assert events[-1]["metadata"]["usage"] == {"inputTokens": 5, "outputTokens": 7, "totalTokens": 12}
        # what botocore signs is what the server verifies; anything else is refused
        for client, code in ((boto_client(srv.url, secret="wrong"), "InvalidSignatureException"),
                             (boto_client(srv.url, region="eu-west-1"), "InvalidSignatureException")):
            with pytest.raises(ClientError) as e:
                converse(client)
            assert e.value.response["Error"]["Code"] == code
            assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        with pytest.raises(ClientError) as e:
            converse(boto_client(srv.url), model_id="us.amazon.nova-mega-v9:0")
        assert e.value.response["Error"]["Code"] == "ValidationException"
        stats = app[bedrock_runtime.STATS]
        assert stats["served"] == 1 and stats["rejected"] == 2 and stats["invalid"] == 1
        # a body other than the one signed (the signature covers its hash)
        signer = SigV4Signer(Credentials(AK, SK), REGION, service="bedrock")
        url = converse_stream_url(REGION, MODEL, srv.url)
        body = json.dumps({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}).encode()
        headers = signer.sign(url, body, bedrock_headers())
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(urllib.request.Request(url, data=body.replace(b"hi", b"ho"), headers=headers))
        assert e.value.code == 403 and e.value.headers["x-amzn-ErrorType"] == "InvalidSignatureException"
        assert stats["rejected"] == 3

    # faults as botocore sees them: 429 before the stream, a throttlingException frame in it
    app = bedrock_runtime.make_app(None, AK, SK, calibration={"ttft_ms": 5, "itl_ms": 1}, throttle_every=2,
                                   throttle_in_stream_after=4)
    with BackgroundServer(app) as srv:
        with pytest.raises(EventStreamError) as e:
            list(converse(boto_client(srv.url))["stream"])
        assert e.value.response["Error"]["Code"] == "throttlingException"
        with pytest.raises(ClientError) as e:
            converse(boto_client(srv.url))
        assert e.value.response["Error"]["Code"] == "ThrottlingException"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429


def test_real_model_behind_the_wire_format(local_server, tmp_path):
    """Our client through the SigV4-checking ConverseStream server to llama-server: exact lengths
    (the server asks for ignore_eos), token counts from the metadata event."""
    app = bedrock_runtime.make_app(local_server["base_url"], AK, SK, model_ids={MODEL}, upstream_keep_alive=False)
    with BackgroundServer(app) as srv:
        w = {"input_tokens": 64, "output_tokens": 16, "concurrency": [2], "requests_per_level": 4,
             "request_timeout_s": 120}
        result = run_sweep(bedrock_endpoint(srv.url), w, tmp_path)
        stats = app[bedrock_runtime.STATS]
    rq = pd.read_parquet(result.requests_path)
    assert rq["ok"].all(), rq[["error_kind", "error_detail"]]
    assert (rq["output_tokens"] == 16).all() and (rq["output_tokens_source"] == "usage").all()
    assert (rq["content_chunks"] == 16).all()  # llama-server streams a token per chunk
    assert (rq["input_tokens"] > 32).all()  # the model's own prompt count (template included), from usage
    assert set(rq["finish_reason"]) == {"length"}
    assert stats["served"] == 4 and stats["output_tokens"] == 64
    assert result.levels[0]["ttft_ms_p50"] > 0


def test_timings_match_the_server_record(tmp_path):
    """TTFT and ITL measured through ConverseStream agree with the server's own record of what it
    wrote when, within the tolerances test_sagemaker_wire.py justifies (its server is the same
    aiohttp-in-a-process design; here one frame per token instead of three). A client that timed a
    delta at the next read (a frame-boundary bug) would be one ITL, 10 ms, late on every request."""
    with ServerProcess("llmbench.testing.bedrock_runtime", "--access-key", AK, "--secret-key", SK,
                       "--model-id", MODEL, "--ttft-ms", "100", "--itl-ms", "10") as server:
        endpoint = bedrock_endpoint(server.url)
        workload = {"input_tokens": 32, "output_tokens": 50, "concurrency": [1, 4], "requests_per_level": 16,
                    "request_timeout_s": 30, "warmup_requests": 2}
        run_warmup(endpoint, workload)  # first-request imports in the server
        calibration.fetch_record(server.url, reset=True)
        result = run_sweep(endpoint, workload, tmp_path)
        truth = server_truth(calibration.fetch_record(server.url), result.requests_path)
        with urllib.request.urlopen(server.url + "/bedrock/stats") as r:
            stats = json.loads(r.read())
    assert [lv["concurrency"] for lv in result.levels] == [1, 4]
    assert_matches_record(result.levels, truth, "bedrock")
    for lv in result.levels:
        assert lv["ttft_ms_p50"] >= 100 and lv["output_tokens_mean"] == 50
    rq = pd.read_parquet(result.requests_path)
    assert (rq["output_tokens_source"] == "usage").all() and (rq["content_chunks"] == 50).all()
    assert stats["served"] == 2 + 32 and stats["output_tokens"] == 50 * 34


def test_faults_are_failed_records(tmp_path):
    cal = {"ttft_ms": 5, "itl_ms": 1}

    def sweep(name, endpoint_kw=None, **faults):
        app = bedrock_runtime.make_app(None, AK, SK, model_ids={MODEL, "other.model-v1:0"}, calibration=cal,
                                       **faults)
        with BackgroundServer(app) as srv:
            run_sweep(bedrock_endpoint(srv.url, **(endpoint_kw or {})), SMALL, tmp_path / name)
        return pd.read_parquet(tmp_path / name / "requests.parquet"), app[bedrock_runtime.STATS]

    rq, stats = sweep("429", throttle_every=2)  # requests 2 and 4 of 4
    assert sorted(rq["error_kind"].fillna("ok")) == ["ok", "ok", "throttled", "throttled"]
    assert set(rq.loc[~rq["ok"], "http_status"]) == {429} and stats["throttled"] == 2
    rq, _ = sweep("model-429", {"model_id": "other.model-v1:0"}, throttle_models={"nova": 1})
    assert rq["ok"].all()  # the throttled model is another one
    rq, _ = sweep("in-stream", throttle_in_stream_after=5)
    assert set(rq["error_kind"]) == {"throttled"} and set(rq["http_status"]) == {200}
    assert rq["error_detail"].str.startswith("throttlingException").all()
    rq, _ = sweep("model-error", stream_error_after=3)
    assert set(rq["error_kind"]) == {"stream_error"}
    assert rq["error_detail"].str.startswith("modelStreamErrorException").all()
    rq, _ = sweep("crc", bad_crc_after=4)
    assert set(rq["error_kind"]) == {"stream_error"} and rq["error_detail"].str.contains("Checksum").all()
    rq, stats = sweep("secret", {"secret": "wrong"})
    assert set(rq["http_status"]) == {403} and set(rq["error_kind"]) == {"http_status"} and stats["rejected"] == 4
    assert rq["error_detail"].str.contains("signature").all()
    rq, _ = sweep("unknown-model", {"model_id": "us.amazon.nova-mega-v9:0"})
    assert set(rq["http_status"]) == {400} and rq["error_detail"].str.contains("model identifier").all()
