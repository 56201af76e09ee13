"""issue 26 #11: the API key never follows a redirect to another origin (scheme, host, port):
urllib's own redirect handler copies every header, Authorization included, wherever a server
points it. Two real servers on two ports: the endpoint's redirects /models to the other."""

from aiohttp import web

from llmbench.backends import servermetrics
from llmbench.backends.openai.backend import OpenAIBackend
from llmbench.testing._serve import BackgroundServer

KEY = "sk-h26a-redirect-0123456789"


def _recorder(seen: list[str | None]) -> web.Application:
    async def models(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"object": "list", "data": [{"id": "m"}]})

    app = web.Application()
    app.router.add_get("/{tail:.*}", models)
    return app


def _redirector(to: str) -> web.Application:
    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound(to + request.path)

    app = web.Application()
    app.router.add_get("/{tail:.*}", moved)
    return app


def test_a_redirect_to_another_origin_goes_without_the_key():
    seen: list[str | None] = []
    with BackgroundServer(_recorder(seen)) as other, BackgroundServer(_redirector(other.url)) as endpoint:
        backend = OpenAIBackend(api_key=KEY)
        assert backend.status({"base_url": endpoint.url + "/v1"}).state == "ready"  # the redirect was followed
        servermetrics.fetch(endpoint.url + "/metrics", backend.endpoint({"base_url": endpoint.url + "/v1"}).headers)
    assert seen == [None, None]  # before: ["Bearer sk-h26a-...", "Bearer sk-h26a-..."]


def test_a_redirect_within_the_origin_keeps_the_key():
    seen: list[str | None] = []
    moved = web.Application()

    async def old(request: web.Request) -> web.Response:
        raise web.HTTPFound("/v2/models")

    moved.router.add_get("/v1/models", old)
    moved.add_subapp("/v2/", _recorder(seen))
    with BackgroundServer(moved) as endpoint:
        assert OpenAIBackend(api_key=KEY).status({"base_url": endpoint.url + "/v1"}).state == "ready"
    assert seen == [f"Bearer {KEY}"]
