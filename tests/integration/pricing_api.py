"""An AWS Price List (Pricing) API stand-in that speaks its wire format: JSON 1.1 over POST with
X-Amz-Target AWSPriceListService.GetProducts, TERM_MATCH filters, NextToken paging (one product
per page, so paging is exercised), and products as JSON strings in the documented shape."""

from __future__ import annotations

import json

from aiohttp import web

CALLS = web.AppKey("calls", list)


def product(region: str, instance_type: str, usagetype: str, usd: float, sku: str) -> str:
    return json.dumps({
        "product": {"productFamily": "ML Instance", "sku": sku, "attributes": {
            "servicecode": "AmazonSageMaker", "regionCode": region, "instanceName": instance_type,
            "usagetype": usagetype, "operation": "RunInstance"}},
        "serviceCode": "AmazonSageMaker",
        "terms": {"OnDemand": {f"{sku}.JRTCKXETXF": {"sku": sku, "effectiveDate": "2026-11-01T00:00:00Z",
                                                      "priceDimensions": {f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                                                          "unit": "Hrs", "description": f"{usagetype} per hour",
                                                          "pricePerUnit": {"USD": f"{usd:.10f}"}}}}}},
        "version": "20261101000000", "publicationDate": "2026-11-01T00:00:00Z",
    })


def make_app(products: list[str]) -> web.Application:
    app = web.Application()
    app[CALLS] = []

    async def handle(request: web.Request) -> web.Response:
        target = request.headers.get("X-Amz-Target", "")
        body = await request.json()
        request.app[CALLS].append((target, body))
        if target != "AWSPriceListService.GetProducts" or body.get("ServiceCode") != "AmazonSageMaker":
            return web.json_response({"__type": "InvalidParameterException", "Message": f"unexpected {target}"},
                                     status=400)
        matching = [p for p in products if all(
            json.loads(p)["product"]["attributes"].get(f["Field"]) == f["Value"] for f in body.get("Filters", []))]
        start = int(body.get("NextToken") or 0)
        page = {"FormatVersion": "aws_v1", "PriceList": matching[start:start + 1]}
        if start + 1 < len(matching):
            page["NextToken"] = str(start + 1)
        return web.json_response(page, content_type="application/x-amz-json-1.1")

    app.router.add_post("/", handle)
    return app
