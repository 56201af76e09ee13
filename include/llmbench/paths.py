"""Where llmbench keeps its data (the data folder) and what it builds once (the cache)."""

from __future__ import annotations

import re
from pathlib import Path

from llmbench.settings import settings

PACKAGE_DIR = Path(__file__).resolve().parent
# include/llmbench -> include -> project root (a checkout; the layout in docs/architecture.md). An
# installed wheel has no project root: its data folder defaults to ~/.llmbench instead.
PROJECT_ROOT = PACKAGE_DIR.parent.parent
CHECKOUT = (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "include" / "llmbench").is_dir()
CONFIG_DIR = settings("config_dir").config_dir or PACKAGE_DIR / "config"  # the shipped configs and datasets
CATALOG_DIR = PACKAGE_DIR / "catalog"


def data_home() -> Path:
    """The data folder: $LLMBENCH_HOME, else `.llmbench/` at the project root of a checkout, else
    (an installed wheel) ~/.llmbench."""
    home = settings("home").home
    if home:
        return home.resolve()
    return PROJECT_ROOT / ".llmbench" if CHECKOUT else Path.home() / ".llmbench"


def cache_home() -> Path:
    """Built and unpacked artefacts (llama-server, the GGUF model), kept outside the work tree:
    $LLMBENCH_CACHE, else ~/.cache/llmbench."""
    return settings("cache").cache or Path.home() / ".cache" / "llmbench"


def runs_dir() -> Path:
    return data_home() / "runs"


def default_warehouse_path() -> Path:
    return data_home() / "warehouse.duckdb"


# Identifiers that become folder names (a config's `name`, a target id, a run key): letters,
# digits, '_', '.', '-', starting with a letter or digit (so never '', '.', '..' or a hidden
# name), no '/', whitespace or control characters; at most 63 characters (a run key: the name,
# '-' and a date, at most 74).
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
SAFE_ID_RULE = "1-63 characters of letters, digits, '_', '.', '-', starting with a letter or digit"
SAFE_RUN_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")


def check_id(field: str, value: str, pattern: re.Pattern[str] = SAFE_ID) -> str:
    """`value` if it is a safe identifier, else ValueError naming the field (one line)."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ValueError(f"{field}: {value!r} is not a safe name; use {SAFE_ID_RULE}")
    return value


def under(base: Path | str, *parts: str) -> Path:
    """base/parts..., refused (ValueError) unless it resolves to a path inside base: every folder
    llmbench builds from an identifier stays under the folder it was meant for."""
    base = Path(base)
    path = base.joinpath(*parts)
    if not path.resolve().is_relative_to(base.resolve()):
        raise ValueError(f"{path} would leave {base}")
    return path


def config_regions(config_dir: Path | str | None = None) -> list[str]:
    """Every AWS region the configs in config_dir (default: the shipped configs, CONFIG_DIR) name in
    a top-level section's `region` (each AWS backend's section has one), sorted: where llmbench may
    leave resources, so where the janitor DAG looks by default. Read from the YAML alone (no validation, nothing heavy
    imported: the janitor DAG calls it when it is parsed); a file that does not parse is skipped,
    as plan would refuse it."""
    import yaml

    regions: set[str] = set()
    for path in sorted(Path(config_dir or CONFIG_DIR).glob("*.yaml")):
        try:
            raw = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(raw, dict):
            continue
        for section in raw.values():
            region = section.get("region") if isinstance(section, dict) else None
            if isinstance(region, str) and region:
                regions.add(region)
    return sorted(regions)
