"""The results store: the one place everything a later task, a retry, a reprocess, a backfill or a
BI reader needs lives (issue 42), so that any task may run on any host.

Named by one setting: LLMBENCH_RESULTS_URI, or `results: {uri, conn_id}` in a config. Default:
the local data folder (`<data folder>`, as before: `make run` is unchanged). An `s3://bucket/prefix`
store is reached through fsspec's S3 filesystem: on the CLI with the standard AWS environment
(keys, AWS_ENDPOINT_URL_S3), in the DAG through the Airflow AWS connection (the DAG layer hands
the library the filesystem of an ObjectStoragePath; the library imports no Airflow).

- `base`: ResultsStore (put, get, list, delete; an object is whole or absent) and open_store.
- `layout`: where a run, an attempt and a target live under the store's root.
- `scratch`: a task's local working copy of what it reads, uploaded when it is done.
"""

from llmbench.store.base import ObjectMissing, ResultsStore, StoreError, open_store, use_filesystem
from llmbench.store.layout import HIVE, LEGACY, Layout

__all__ = [
    "HIVE",
    "LEGACY",
    "Layout",
    "ObjectMissing",
    "ResultsStore",
    "StoreError",
    "open_store",
    "scratch",
    "use_filesystem",
]
