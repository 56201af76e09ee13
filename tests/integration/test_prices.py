"""Price refresh from the AWS Pricing API, through the llmbench_prices DAG and the Airflow AWS
connection, against a server that speaks the Price List wire format. plan() then prices targets
from the dated cache; types the API does not price keep the catalog's price."""

import json
import subprocess

from llmbench.backends.sagemaker import prices
from llmbench.planning.plan import plan
from llmbench.testing._serve import BackgroundServer

from .conftest import BIN
from .pricing_api import CALLS, make_app, product

PRODUCTS = [
    product("us-west-2", "ml.g7e.2xlarge", "USW2-Host:ml.g7e.2xlarge", 4.4123, "SKUG7EHOST"),
    product("us-west-2", "ml.g7e.2xlarge", "USW2-Train:ml.g7e.2xlarge", 3.9, "SKUG7ETRAIN"),  # not hosting
    product("us-west-2", "ml.g7e.2xlarge", "USW2-Notebk:ml.g7e.2xlarge", 3.8, "SKUG7ENB"),
    product("us-east-1", "ml.g7e.2xlarge", "USE1-Host:ml.g7e.2xlarge", 4.0, "SKUG7EUSE1"),  # other region
    product("us-west-2", "ml.g6e.12xlarge", "USW2-Host:ml.g6e.12xlarge", 13.5, "SKUG6EHOST"),
]


def test_prices_dag_refreshes_the_cache_and_plan_prefers_it(airflow_env, tmp_path, monkeypatch):
    home = tmp_path / "home"
    with BackgroundServer(make_app(PRODUCTS)) as api:
        env = {**airflow_env, "LLMBENCH_HOME": str(home), "AIRFLOW_CONN_AWS_DEFAULT": json.dumps({
            "conn_type": "aws", "login": "AKIDLLMBENCHTEST", "password": "llmbench-test-secret",
            "extra": {"region_name": "us-east-1", "endpoint_url": api.url}})}
        r = subprocess.run([str(BIN / "airflow"), "dags", "test", "llmbench_prices", "2026-12-01", "-c",
                            json.dumps({"regions": ["us-west-2"]})], env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        calls = api.app[CALLS]
    assert len(calls) >= 2 and all(t == "AWSPriceListService.GetProducts" for t, _ in calls)

    monkeypatch.setenv("LLMBENCH_HOME", str(home))
    cache = json.loads(prices.cache_file().read_text())
    assert {t: p["usd_per_hour"] for t, p in cache["us-west-2"].items()} == {
        "ml.g7e.2xlarge": 4.4123, "ml.g6e.12xlarge": 13.5}  # hosting only, this region only
    assert cache["us-west-2"]["ml.g7e.2xlarge"]["sku"] == "SKUG7EHOST"

    run = plan("sagemaker-seed-002", "2026-12-06", runs_root=tmp_path / "runs")
    by_type = {t.instance_type: t.price for t in run.targets}
    g7e, g6e, g5 = by_type["ml.g7e.2xlarge"], by_type["ml.g6e.12xlarge"], by_type["ml.g5.12xlarge"]
    assert (g7e.usd_per_hour, g6e.usd_per_hour) == (4.4123, 13.5)
    assert g7e.source.startswith("AWS Pricing API (AmazonSageMaker hosting, sku SKUG7EHOST)")
    assert g7e.date == cache["us-west-2"]["ml.g7e.2xlarge"]["fetched_at"][:10]
    assert (g5.usd_per_hour, g5.date) == (7.09, "2026-11-30")  # not priced by the API: catalog
