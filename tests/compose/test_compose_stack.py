"""The compose stack, end to end: llm_benchmark triggered through the api-server's REST API, run
by the Celery worker against an OpenAI-compatible test server in the worker's container (the
calibration server: the `openai` backend's path), published to the stack's PostgreSQL warehouse
and read back from it; the janitor and dashboard DAGs parsed, the pools there, task logs read
through the api-server from the worker (one shared secret_key), and passwords.json owned by the
uid the components run as. Run by `make compose-test` (scripts/compose_test.sh), which brings the
stack up first and takes it down after."""

import json
import os
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
API = os.environ.get("AIRFLOW_API_URL", "http://127.0.0.1:8080")
DATA = "/opt/airflow/llmbench-data"  # the llmbench-data volume, LLMBENCH_HOME in every component
CONFIG_PATH = f"{DATA}/compose-test.yaml"
CALIBRATION_PORT = 8002
DAG_RUN_TIMEOUT_S = 900  # a small run takes ~3 min on a loaded 2-core machine
pytestmark = pytest.mark.timeout(DAG_RUN_TIMEOUT_S + 300)


def compose(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "compose", *args], cwd=ROOT, input=stdin, capture_output=True, text=True,
                          check=check, timeout=300)


def dotenv() -> dict[str, str]:
    lines = (ROOT / ".env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


@pytest.fixture(scope="module")
def api():
    """call(method, path, body=None) -> JSON, as the admin, with a token from /auth/token."""
    body = json.dumps({"username": "admin", "password": dotenv()["_AIRFLOW_WWW_USER_PASSWORD"]}).encode()
    req = urllib.request.Request(f"{API}/auth/token", data=body, headers={"Content-Type": "application/json"})
    token = json.load(urllib.request.urlopen(req, timeout=60))["access_token"]

    def call(method: str, path: str, body: dict | None = None):
        req = urllib.request.Request(f"{API}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                                              "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.load(resp)

    return call


def wait_for_dags(api, dag_ids: set[str], timeout_s: float = 300) -> dict[str, dict]:
    """The DAGs once the dag-processor has parsed them (it starts with the stack, so not at once)."""
    deadline = time.monotonic() + timeout_s
    while True:
        dags = {d["dag_id"]: d for d in api("GET", "/api/v2/dags?limit=100")["dags"]}
        if dag_ids <= set(dags) or time.monotonic() > deadline:
            return dags
        time.sleep(5)


def test_dags_parse_without_errors_and_the_pools_are_there(api):
    dags = wait_for_dags(api, {"llm_benchmark", "llmbench_janitor", "llmbench_dashboard"})
    errors = api("GET", "/api/v2/importErrors")
    assert errors["total_entries"] == 0, errors
    assert {"llm_benchmark", "llmbench_janitor", "llmbench_dashboard"} <= set(dags), sorted(dags)
    pools = {p["name"]: p["slots"] for p in api("GET", "/api/v2/pools")["pools"]}
    expected = {name: p["slots"] for name, p in json.loads((ROOT / "deploy" / "pools.json").read_text()).items()}
    assert expected.items() <= pools.items(), pools


def test_the_api_server_reads_the_passwords_file_init_wrote_for_its_uid():
    """The defect the stack showed: init (root) wrote passwords.json root-owned, mode 0644, and the
    api-server (AIRFLOW_UID, 50000 when unset) crash-looped opening it for append."""
    uid = os.environ.get("AIRFLOW_UID") or "50000"
    owner = compose("exec", "-T", "airflow-apiserver", "stat", "-c", "%u", f"{DATA}/passwords.json").stdout.split()
    assert owner == [uid]
    assert compose("exec", "-T", "airflow-apiserver", "id", "-u").stdout.split() == [uid]
    cid = compose("ps", "-q", "airflow-apiserver").stdout.strip()
    restarts = subprocess.run(["docker", "inspect", "-f", "{{.RestartCount}}", cid], capture_output=True, text=True,
                              check=True).stdout.strip()
    assert restarts == "0"


def _config() -> str:
    cfg = yaml.safe_load((ROOT / "include" / "config" / "openai-example.yaml").read_text())
    cfg["name"] = "compose-test"
    serving = cfg["targets"][0]["serving"]
    serving["base_url"] = f"http://127.0.0.1:{CALIBRATION_PORT}/v1"  # in the worker's own container
    serving.pop("api_key_conn_id")  # the test server asks for no key
    cfg["workload"] = {"input_tokens": 32, "output_tokens": 20, "concurrency": [1, 2], "requests_per_level": 4,
                       "warmup_requests": 1}
    return yaml.safe_dump(cfg)


def test_llm_benchmark_runs_on_the_worker_and_publishes_to_the_stack_warehouse(api):
    # The endpoint the `openai` target measures: the calibration server, inside the worker container.
    compose("exec", "-d", "airflow-worker", "python", "-m", "llmbench.testing.calibration",
            "--port", str(CALIBRATION_PORT), "--ttft-ms", "20", "--itl-ms", "2", "--tokens", "20")
    compose("exec", "-T", "airflow-worker", "sh", "-c", f"cat > {CONFIG_PATH}", stdin=_config())
    wait_for_dags(api, {"llm_benchmark"})
    api("PATCH", "/api/v2/dags/llm_benchmark", {"is_paused": False})
    run = api("POST", "/api/v2/dags/llm_benchmark/dagRuns", {
        "dag_run_id": "compose-test", "logical_date": "2026-12-04T00:00:00Z",
        "conf": {"config": CONFIG_PATH, "warehouse_conn_id": "llmbench_warehouse"}})
    started = time.monotonic()
    while run["state"] not in ("success", "failed") and time.monotonic() - started < DAG_RUN_TIMEOUT_S:
        time.sleep(10)
        run = api("GET", "/api/v2/dags/llm_benchmark/dagRuns/compose-test")
    tis = api("GET", "/api/v2/dags/llm_benchmark/dagRuns/compose-test/taskInstances?limit=100")["task_instances"]
    states = {(t["task_id"], t["map_index"]): t["state"] for t in tis}
    print(f"llm_benchmark on the stack: {run['state']} in {time.monotonic() - started:.0f} s")
    assert run["state"] == "success", states
    assert {t["hostname"] for t in tis if t["state"] == "success"} <= {
        compose("exec", "-T", "airflow-worker", "hostname").stdout.strip()}  # every task ran on the worker

    # The rows, read back from the warehouse database on the stack's PostgreSQL.
    def sql(query: str) -> list[str]:
        out = compose("exec", "-T", "postgres", "psql", "-U", "airflow", "-d", "llmbench", "-At", "-c", query).stdout
        return out.split()

    assert sql("SELECT run_key FROM llmbench.runs") == ["compose-test-2026-12-04"]
    assert sql("SELECT backend || '|' || status || '|' || usd_per_hour FROM llmbench.targets") == [
        "openai|succeeded|1.861"]
    assert sql("SELECT concurrency FROM llmbench.price_performance WHERE usd_per_m_output_tokens > 0 "
               "ORDER BY concurrency") == ["1", "2"]
    assert sql("SELECT count(*) FROM llmbench.requests WHERE concurrency = 2") == ["4"]

    # A task's log, which the worker serves and the api-server fetches with a token signed by the
    # shared secret_key (with a key per component the api-server cannot read it).
    log = json.dumps(api("GET", "/api/v2/dags/llm_benchmark/dagRuns/compose-test/taskInstances/plan/logs/1"))
    assert "compose-test" in log and "Could not read served logs" not in log, log[-2000:]


def test_the_ca_bundle_pip_trusted_at_build_time_is_in_no_layer_of_the_image():
    """scripts/compose_test.sh hands the host's pip CA bundle to the builds as a BuildKit secret.
    The certificates the host trusts beyond the image's own bundle (a TLS-inspecting proxy's) were
    needed to reach PyPI, and must be nowhere in the image's files."""
    ca = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    if not ca or not Path(ca).is_file():
        pytest.skip("the host's pip trusts no CA bundle of its own")
    pem = r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----"
    image = compose("config", "--images").stdout.split()
    ours = next(i for i in image if i.startswith("llmbench-airflow"))
    bundle = subprocess.run(["docker", "run", "--rm", "--entrypoint", "cat", ours,
                             "/etc/ssl/certs/ca-certificates.crt"], capture_output=True, text=True, check=True).stdout
    extra = [c for c in re.findall(pem, Path(ca).read_text(), re.S) if c not in set(re.findall(pem, bundle, re.S))]
    if not extra:
        pytest.skip("the host's bundle adds nothing to the image's own")
    needles = "\n".join(c.splitlines()[5] for c in extra) + "\n"  # a line of each certificate's body
    found = subprocess.run(["docker", "run", "--rm", "-i", "--entrypoint", "bash", ours, "-c",
                            "grep -rlF -f /dev/stdin /etc /home /opt /usr /root /var 2>/dev/null; true"],
                           input=needles, capture_output=True, text=True, check=True, timeout=600).stdout
    assert found.split() == []
