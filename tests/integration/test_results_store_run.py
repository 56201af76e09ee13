"""Issue 42, Done when: `make run` with LLMBENCH_RESULTS_URI=s3://bench/llmbench against an S3
server (moto's, as a process of its own), reached by the standard AWS environment on the CLI and
by AIRFLOW_CONN_AWS_DEFAULT (with endpoint_url) in the DAG, leaves every target's requests,
levels and validation, the handles and the report in the bucket, and no raw results under the
data folder's runs/."""

import json
import subprocess
from pathlib import Path

import boto3

from llmbench.testing._serve import ServerProcess

from .conftest import ROOT, llama_server_pids

DATE = "2026-08-30"
TARGETS = ("smollm2-q4_1-1slot", "smollm2-q4_1-4slots")


def test_make_run_keeps_its_results_in_an_s3_bucket(airflow_env):
    before = llama_server_pids()
    with ServerProcess("tests.integration.moto_server") as moto:
        aws = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_ENDPOINT_URL_S3": moto.url}
        s3 = boto3.client("s3", endpoint_url=moto.url, aws_access_key_id="testing", aws_secret_access_key="testing",
                          region_name="us-east-1")
        s3.create_bucket(Bucket="bench")
        conn = {"conn_type": "aws", "login": "testing", "password": "testing",
                "extra": {"endpoint_url": moto.url, "region_name": "us-east-1"}}
        env = {k: v for k, v in airflow_env.items() if not k.startswith("MAKE")}
        env.update(aws, LLMBENCH_RESULTS_URI="s3://bench/llmbench", AIRFLOW_CONN_AWS_DEFAULT=json.dumps(conn))
        params = json.dumps({"concurrency": [1], "requests_per_level": 2})
        r = subprocess.run(["make", "--no-print-directory", "run", f"DATE={DATE}", f"PARAMS={params}"], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench")
                for o in page.get("Contents", [])]
    attempt = f"llmbench/runs/date={DATE}/run_key=local-{DATE}/attempt="
    mine = [k for k in keys if k.startswith(attempt)]
    (stamp,) = {k[len(attempt):].split("/")[0] for k in mine}
    prefix = attempt + stamp
    for t in TARGETS:
        for name in ("requests.parquet", "levels.parquet", "validation.json", "handle.json", "teardown.json"):
            assert f"{prefix}/target={t}/{name}" in mine, (t, name)
    assert {f"{prefix}/report.html", f"{prefix}/plan.json", f"{prefix}/published.json"} <= set(mine)
    print(f"\n{len(mine)} objects in s3://bench/{prefix}")
    assert f"raw results:        s3://bench/{prefix}" in r.stdout
    runs = Path(airflow_env["LLMBENCH_HOME"]) / "runs" / f"local-{DATE}"
    assert not runs.exists() or not list(runs.rglob("requests.*"))  # nothing measured stayed on this disk
    assert llama_server_pids() == before
