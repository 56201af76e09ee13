"""Suite-wide rules. Everything under tests/integration starts real servers or Airflow: it carries the
`integration` marker (so `make test-fast` can leave it out) and a generous timeout of its own. A
module elsewhere that runs the whole pipeline against a server says so itself (`pytestmark`)."""

from pathlib import Path

import pytest

INTEGRATION_DIR = Path(__file__).parent / "integration"
# A DAG run through `airflow dags test` takes up to ~5 min on a loaded 2-core machine and the
# distributed stack longer; the unit default (pyproject) is for tests that should take seconds.
INTEGRATION_TIMEOUT_S = 1500


def pytest_collection_modifyitems(config, items):
    for item in items:
        if INTEGRATION_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(INTEGRATION_TIMEOUT_S))
