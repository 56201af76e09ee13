"""SageMaker on-demand hosting prices from the AWS Price List (Pricing) API, cached with their date.

  refresh_sagemaker_prices(session, {"us-west-2": ["ml.g7e.2xlarge", ...]})  -> the cache file
  cached_prices()["us-west-2"]["ml.g7e.2xlarge"]                            -> {usd_per_hour, ...}

plan() prefers a cached API price (BackendSpec.prices) to the catalog's (a price on the
target in the config wins over both); whichever it used is frozen on every row it produces, with
its source and date, so a published history never changes when prices do. The `llmbench_prices` DAG refreshes the cache
through the Airflow AWS connection.

Price List products are JSON documents: product.attributes (regionCode, instanceName, usagetype,
...) and terms.OnDemand.<offer>.priceDimensions.<rate>.pricePerUnit.USD per unit "Hrs". SageMaker
lists several products per instance type (training, notebooks, processing, hosting, ...):
real-time endpoints are the usage types containing "Host:" (e.g. "USW2-Host:ml.g5.xlarge").
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llmbench import paths

SERVICE_CODE = "AmazonSageMaker"
PRICING_REGION = "us-east-1"  # where the Price List API is served (also ap-south-1, eu-central-1)
HOSTING_USAGE = "Host:"
# The whole fetch of one region's prices, however slowly the API answers: botocore's timeouts
# bound each socket read, not a request, so a reply trickled a byte at a time would never end.
FETCH_DEADLINE_S = 300.0


def cache_file() -> Path:
    return paths.data_home() / "prices" / "sagemaker-hosting.json"


def cached_prices() -> dict[str, Any]:
    """The whole cache: {region: {instance type: {usd_per_hour, sku, fetched_at}}} (empty if none)."""
    p = cache_file()
    return json.loads(p.read_text()) if p.exists() else {}


def hosting_price(price_list_item: str | dict[str, Any]) -> float | None:
    """The on-demand $/hour of one Price List product if it is real-time hosting, else None."""
    item = json.loads(price_list_item) if isinstance(price_list_item, str) else price_list_item
    if HOSTING_USAGE not in item["product"]["attributes"].get("usagetype", ""):
        return None
    for offer in item.get("terms", {}).get("OnDemand", {}).values():
        for dim in offer["priceDimensions"].values():
            if dim.get("unit") in ("Hrs", "Hours") and "USD" in dim.get("pricePerUnit", {}):
                return float(dim["pricePerUnit"]["USD"])
    return None


def fetch_hosting_prices(
    session: Any,
    region: str,
    instance_types: list[str],
    endpoint_url: str | None = None,
    deadline_s: float = FETCH_DEADLINE_S,
) -> dict[str, dict[str, Any]]:
    """{instance type: {usd_per_hour, sku, fetched_at}} for the types the API prices in region;
    TimeoutError (one line) when that takes more than deadline_s in all. The calls run in a daemon
    thread that is abandoned at the deadline (it ends with the process; nothing is written)."""
    done: list[dict[str, dict[str, Any]]] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            done.append(_fetch_hosting_prices(session, region, instance_types, endpoint_url))
        except BaseException as e:  # noqa: BLE001 (re-raised in the caller's thread)
            failed.append(e)

    worker = threading.Thread(target=work, name=f"prices-{region}", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if failed:
        raise failed[0]
    if not done:
        raise TimeoutError(f"the Price List API did not answer for {region} within {deadline_s:g} s")
    return done[0]


def _fetch_hosting_prices(
    session: Any, region: str, instance_types: list[str], endpoint_url: str | None
) -> dict[str, dict[str, Any]]:
    client = session.client("pricing", region_name=PRICING_REGION, endpoint_url=endpoint_url)
    fetched_at = datetime.now(UTC).isoformat(timespec="seconds")
    out = {}
    for itype in instance_types:
        pages = client.get_paginator("get_products").paginate(
            ServiceCode=SERVICE_CODE,
            Filters=[
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
                {"Type": "TERM_MATCH", "Field": "instanceName", "Value": itype},
            ],
        )
        for page in pages:
            for raw in page["PriceList"]:
                item = json.loads(raw) if isinstance(raw, str) else raw
                usd = hosting_price(item)
                if usd is not None:
                    out[itype] = {"usd_per_hour": usd, "sku": item["product"].get("sku"), "fetched_at": fetched_at}
    return out


def refresh_sagemaker_prices(
    session: Any, wanted: dict[str, list[str]], endpoint_url: str | None = None
) -> dict[str, dict[str, Any]]:
    """Fetch hosting prices for {region: [instance types]} and merge them into the cache file
    (written atomically). Types the API does not price keep their cached or catalog price.
    Returns what was fetched, per region."""
    cache = cached_prices()
    fetched = {}
    for region, types in wanted.items():
        fetched[region] = fetch_hosting_prices(session, region, types, endpoint_url)
        cache.setdefault(region, {}).update(fetched[region])
    p = cache_file()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=2, sort_keys=True))
    tmp.replace(p)
    return fetched
