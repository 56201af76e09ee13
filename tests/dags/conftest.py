import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def dagbag(tmp_path_factory):
    home = tmp_path_factory.mktemp("airflow")
    os.environ.setdefault("AIRFLOW_HOME", str(home))
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags")
    os.environ["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(ROOT / "plugins")  # as make run and compose set it
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(ROOT / "dags"))
