"""Layering: the package's folders are layers and imports run one way, down (LAYERS); every
subpackage says what it is (a docstring) and what it offers (`__all__`); the top level stays small.
The request record is defined once (schemas.records.RequestRecord) and the warehouse's `requests`
table agrees with it; every module imports on its own, and the record-building side (wire,
recordworker) never loads the load generator; no module is over 600 lines, no function over 80."""

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

import llmbench
from llmbench import warehouse
from llmbench.schemas.records import COLUMNS, RequestRecord, request_schema

# What publish adds to each record in the warehouse's requests table.
PUBLISH_COLUMNS = {"run_key": "VARCHAR", "target_id": "VARCHAR", "validation_passed": "BOOLEAN"}
ARROW_TO_SQL = {pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "VARCHAR",
                pa.bool_(): "BOOLEAN", pa.list_(pa.float64()): "DOUBLE[]",
                pa.list_(pa.int32()): "INTEGER[]"}


def test_warehouse_requests_table_has_the_records_columns_and_types(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")  # a fresh file, every migration applied
    try:
        table = dict(con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'llmbench' AND table_name = 'requests'").fetchall())
    finally:
        con.close()
    record = {f.name: ARROW_TO_SQL[f.type] for f in request_schema()}
    assert table == {**record, **PUBLISH_COLUMNS}


def test_the_parquet_schema_is_the_records_fields_in_order_and_a_json_line_round_trips():
    assert request_schema().names == list(COLUMNS) == list(RequestRecord.__dataclass_fields__)
    assert len(COLUMNS) == 33 and COLUMNS[21:24] == ("repeat", "arrival_rate_rps", "send_retried")
    assert COLUMNS[24:29] == ("session", "turn_index", "history_chars", "prefix_id", "scheduled_ms")
    assert COLUMNS[29:] == ("chunk_tokens", "chunk_tokens_source", "input_tokens_client", "stream_wait_ms")
    rec = RequestRecord(
        concurrency=4, request_index=7, worker=-1, ok=True, error_kind=None, error_detail=None, http_status=200,
        send_ns=10, first_content_ns=20, end_ns=40, send_lag_ms=0.25, ttft_ms=1e-5, e2e_ms=3e-5, tpot_ms=1e-5,
        itl_ms=[1e-5, 1e-5], content_chunks=3, output_tokens=3, output_tokens_source="usage",
        output_tokens_counted=3, input_tokens=30, finish_reason="length", repeat=1, arrival_rate_rps=2.5,
        send_retried=False, chunk_tokens=[1, 2, 1], chunk_tokens_source="usage", input_tokens_client=31,
        stream_wait_ms=0.125)
    assert RequestRecord.from_row(json.loads(json.dumps(rec.to_row()))) == rec
    assert RequestRecord(*rec.values()) == rec
    assert pa.Table.from_pylist([rec.to_row()], schema=request_schema()).to_pylist() == [rec.to_row()]


MODULES = sorted(m.name for m in pkgutil.walk_packages(llmbench.__path__, "llmbench."))

# One interpreter loads every third-party module the package loads (a first child imports all of
# llmbench and names them), with no llmbench module loaded, then forks a child per module: each child
# imports that one module on its own (what it drags in of llmbench is all its own doing) and reports.
# A fresh interpreter per module proved the same but spent 18 s of the fast suite loading numpy,
# pandas and pydantic's internals 120 times over.
_FORKING_PROBE = r"""
import importlib, json, os, sys, traceback


def in_child(work):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            out = {"rc": 0, **work()}
        except BaseException:
            out = {"rc": 1, "err": traceback.format_exc()}
        with os.fdopen(write, "wb") as f:
            f.write(json.dumps(out).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"rc": 1, "err": "the child died before reporting"}


def third_party():
    before = set(sys.modules)
    for module in sys.argv[1:]:
        importlib.import_module(module)
    return {"loaded": [k for k in sys.modules if k not in before and k.split(".")[0] != "llmbench"]}


for lib in in_child(third_party).get("loaded", []):
    try:
        importlib.import_module(lib)
    except Exception:
        pass  # loaded only as a side effect of another: its child fails and says so if it matters
assert not [k for k in sys.modules if k.startswith("llmbench")]
for module in sys.argv[1:]:
    out = in_child(lambda: (importlib.import_module(module), {"loaded": sorted(k for k in sys.modules if k.startswith("llmbench"))})[1])
    print(json.dumps([module, out.get("rc", 1), out.get("err", ""), out.get("loaded", [])]))
"""


def _import_each_alone(modules: list[str]) -> list[tuple[str, int, str, list[str]]]:
    r = subprocess.run([sys.executable, "-c", _FORKING_PROBE, *modules], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return [tuple(json.loads(line)) for line in r.stdout.splitlines() if line.startswith("[")]


def test_every_module_imports_alone_and_record_building_never_loads_the_load_generator():
    assert {"llmbench.schemas.records", "llmbench.loadgen.wire", "llmbench.loadgen.driver", "llmbench.loadgen.sweep"} <= set(MODULES)
    results = {m: (rc, err, loaded) for m, rc, err, loaded in _import_each_alone(MODULES)}
    assert set(results) == set(MODULES)
    failed = {m: err.strip().splitlines()[-1:] for m, (rc, err, _) in results.items() if rc != 0}
    assert not failed, failed
    loaded = {m: set(mods) for m, (_, _, mods) in results.items()}
    for m in ("llmbench.loadgen.wire", "llmbench.loadgen.recordworker"):
        assert not loaded[m] & {"llmbench.loadgen.driver", "llmbench.loadgen.sweep"}, (m, sorted(loaded[m]))
    assert loaded["llmbench.schemas.records"] == {"llmbench", "llmbench.schemas", "llmbench.schemas.records"}
    assert "llmbench.loadgen.sweep" not in loaded["llmbench.loadgen.driver"]  # the driver does not know the sweep


# The layers, bottom first: a module may import its own layer and any layer listed before it,
# never one after it (lazy imports inside functions count too). `testing` (servers for tests and
# benchmarks) may import anything and nothing imports it.
LAYERS = (
    ("llmbench", "paths", "lifetime", "errors", "settings", "redaction"),  # the foundation: no llmbench imports but these
    ("store",),
    ("schemas",),
    ("analysis",),
    ("warehouse",),
    ("backends",),
    ("planning",),
    ("loadgen",),
    ("quality",),
    ("chaos",),
    ("results",),
    ("pipeline",),
    ("cli",),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
PACKAGE = Path(llmbench.__file__).parent


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__version__" else "llmbench"


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "llmbench":
            out |= {f"llmbench.{a.name}" for a in node.names} if node.module == "llmbench" else {node.module}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "llmbench"}
    return out


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
            for p in PACKAGE.rglob("*.py")}


def test_imports_run_one_way_down_the_layers():
    modules = _modules()
    units = {_unit(m) for m in modules} - {"testing"}
    assert units <= set(RANK), f"a package or module with no layer: {sorted(units - set(RANK))}; add it to LAYERS"
    upward = []
    for module, path in modules.items():
        here = _unit(module)
        for imported in _imports(path):
            there = _unit(imported)
            if there == "testing" and here != "testing":
                upward.append(f"{module} imports {imported} (test servers are never a dependency)")
            elif here != "testing" and there != here and RANK[there] > RANK[here]:
                upward.append(f"{module} ({here}) imports {imported} ({there}), a layer above it")
    assert not upward, "\n".join(upward)


def test_the_rule_itself_catches_an_upward_import(tmp_path):
    """The checker is not vacuous: a module of `schemas` importing `loadgen` is reported."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from llmbench.loadgen import sweep\n")
    assert _imports(bad) == {"llmbench.loadgen"} and RANK["loadgen"] > RANK["schemas"]


def test_every_subpackage_has_a_docstring_and_names_its_public_surface():
    missing = []
    for module, path in _modules().items():
        if path.name != "__init__.py" or module == "llmbench":
            continue
        tree = ast.parse(path.read_text())
        if not ast.get_docstring(tree):
            missing.append(f"{module}: no docstring")
        if "__all__" not in {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                             if isinstance(t, ast.Name)}:
            missing.append(f"{module}: no __all__")
            continue
        pkg = importlib.import_module(module)
        for name in pkg.__all__:  # every public name resolves: a module of the package, or a name it holds
            if not hasattr(pkg, name):
                try:
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    missing.append(f"{module}: __all__ names {name!r}, which it does not have")
    assert not missing, missing


def test_every_package_names_each_of_its_modules_in_its_docstring_and_its_surface():
    """The reverse of the test above: a module added to a package is in its `__all__` (or its
    `__init__` imports from it) and its docstring says it is there (issue 48: costmodel, capacity,
    tokenizer and traffic were missing)."""
    missing = []
    for module, path in _modules().items():
        if path.name != "__init__.py" or module == "llmbench" or module.startswith("llmbench.testing."):
            continue
        tree = ast.parse(path.read_text())
        doc = ast.get_docstring(tree) or ""
        pkg = importlib.import_module(module)
        imported = {n.module.rsplit(".", 1)[-1] for n in tree.body if isinstance(n, ast.ImportFrom) and n.module}
        for sub in pkgutil.iter_modules(pkg.__path__):
            # a backend kind's package is named once, in BUILTIN_KINDS (test_registry)
            if sub.name.startswith("_") or sub.name in getattr(pkg, "BUILTIN_KINDS", ()):
                continue
            if sub.name not in getattr(pkg, "__all__", ()) and sub.name not in imported:
                missing.append(f"{module}.{sub.name}: not in __all__ and not imported by the package")
            if not re.search(rf"\b{sub.name}\b", doc):
                missing.append(f"{module}.{sub.name}: the package docstring does not name it")
    assert not missing, missing


def test_the_top_level_is_small():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


def test_no_library_module_is_over_600_lines_and_no_function_over_80():
    """The size rule of issue 48: a module past 600 lines mixes concerns, a function past 80 does
    several things. testing/ (servers for tests and benchmarks) is outside it."""
    long_modules, long_functions = [], []
    for module, path in _modules().items():
        if _unit(module) == "testing":
            continue
        text = path.read_text()
        if len(text.splitlines()) > 600:
            long_modules.append(f"{module}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= 80:
                long_functions.append(f"{module}.{node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert (long_modules, long_functions) == ([], [])
