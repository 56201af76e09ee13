"""llmbench: what it really costs to serve an open-weight LLM on each kind of hardware.

The library behind the Airflow DAGs. It imports no Airflow: every task calls a function here.
"""

__version__ = "0.1.0"
