"""Where llmbench keeps its data (the data folder) and what it builds once (the cache)."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# include/llmbench -> include -> project root (editable install; the layout in docs/architecture.md).
PROJECT_ROOT = PACKAGE_DIR.parent.parent
CONFIG_DIR = Path(os.environ.get("LLMBENCH_CONFIG_DIR", PACKAGE_DIR.parent / "config"))
CATALOG_DIR = PACKAGE_DIR / "catalog"


def data_home() -> Path:
    """The data folder: $LLMBENCH_HOME, else `.llmbench/` at the project root."""
    env = os.environ.get("LLMBENCH_HOME")
    return Path(env).resolve() if env else PROJECT_ROOT / ".llmbench"


def cache_home() -> Path:
    """Built and unpacked artefacts (llama-server, the GGUF model), kept outside the work tree."""
    env = os.environ.get("LLMBENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "llmbench"


def runs_dir() -> Path:
    return data_home() / "runs"


def default_warehouse_path() -> Path:
    return data_home() / "warehouse.duckdb"
