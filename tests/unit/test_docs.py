"""The docs cite only what exists: every repository path that README.md, docs/*.md and
plugins/README.md name (include/..., tests/..., scripts/..., a bare `httpstream.py`), every relative
link, and every `llmbench.<name>` (a module, a module's attribute, or a warehouse table or view).
README stays the front door."""

import fnmatch
import importlib
import itertools
import re
import subprocess
from pathlib import Path

import pytest

from llmbench import warehouse

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "plugins" / "README.md"]
README_MAX_BYTES = 10_000

# A path that starts with one of our top-level folders names our file; a bare source file name must be
# the end of one of ours. `<package>` is a placeholder, `{a,b}` two names, `*` a glob.
TOP = r"(?:include|tests|scripts|benchmarks|dags|plugins|deploy|docs|\.ci)/"
ROOTED = re.compile(rf"(?<![\w./-])(?:\.\./)?({TOP}[\w.*<>{{}},/-]*)")
BARE = re.compile(r"(?<![\w./-])((?:[\w<>{},*-]+/)*[\w<>{},*-]+\.(?:py|sh|sql|yaml))\b")
DOTTED = re.compile(r"(?<![\w./])llmbench((?:\.[A-Za-z_]\w*)+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# "vLLM's benchmarks/serve.py": a peer's file, not ours.
PEERS = re.compile(r"[\w)]['’]s\s+`?$")
# Named on purpose although not in the repository, each with the reason.
EXTERNAL: dict[str, str] = {
    "startup.sh": "the MWAA startup script make mwaa writes into dist/mwaa/ (scripts/mwaa_bundle.sh)",
    "webserver_config.py": "the FAB auth manager's own configuration file, in a user's AIRFLOW_HOME",
}


def repo_files() -> set[str]:
    """Tracked files and new ones not ignored: what a commit would hold."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return {line for line in out.splitlines() if (ROOT / line).exists()}


def _expand(name: str) -> list[str]:
    """`a/{b,c}.py` -> a/b.py, a/c.py; `<package>` -> `*`; `NNN_` (a migration's number) -> three digits."""
    name = re.sub(r"<[^>]*>", "*", name).replace("NNN", "[0-9][0-9][0-9]")
    parts = re.split(r"\{([^}]*)\}", name)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def _exists(name: str, files: set[str], dirs: set[str], suffix: bool) -> bool:
    for pattern in _expand(name.rstrip("/")):
        candidates = files | dirs
        if any(fnmatch.fnmatchcase(f, pattern) or (suffix and fnmatch.fnmatchcase(f, "*/" + pattern))
               for f in candidates):
            return True
    return False


def _dotted_exists(dotted: str, tables: set[str]) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), -1, -1):
        try:
            obj = importlib.import_module(".".join(["llmbench", *parts[:i]]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                break
            obj = getattr(obj, attr)
        else:
            return True
        break
    return len(parts) == 1 and parts[0] in tables


def _warehouse_tables(tmp_path: Path) -> set[str]:
    warehouse.refresh_summary(tmp_path / "w.duckdb")  # every migration applied, and the dashboard's table
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                          "WHERE table_schema = 'llmbench'").fetchall()}
    finally:
        con.close()


def missing_citations(doc: Path, files: set[str], tables: set[str]) -> list[str]:
    """'doc:line: name' for each citation that names nothing; links resolve from the doc's folder."""
    dirs = {str(p) for f in files for p in Path(f).parents if str(p) != "."}
    out = []
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        where = f"{doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc.name}:{n}"
        rooted = []
        for m in ROOTED.finditer(line):
            name = m.group(1).rstrip(".,")
            rooted.append(m.span(1))
            if name in EXTERNAL or PEERS.search(line[: m.start()]):
                continue
            if not _exists(name, files, dirs, suffix=False):
                out.append(f"{where}: {name}")
        for m in BARE.finditer(line):
            if any(a <= m.start(1) < b for a, b in rooted) or m.group(1) in EXTERNAL:
                continue
            if PEERS.search(line[: m.start()]):
                continue
            if not _exists(m.group(1), files, dirs, suffix=True):
                out.append(f"{where}: {m.group(1)}")
        for m in DOTTED.finditer(line):
            if not _dotted_exists(m.group(1)[1:], tables):
                out.append(f"{where}: llmbench{m.group(1)}")
        for m in LINK.finditer(line):
            target = m.group(1).split("#")[0]
            if target and not re.match(r"[a-z]+:", target) and not (doc.parent / target).exists():
                out.append(f"{where}: link {m.group(1)}")
    return out


@pytest.fixture(scope="module")
def files_and_tables(tmp_path_factory):
    return repo_files(), _warehouse_tables(tmp_path_factory.mktemp("warehouse"))


# A doc being rewritten may be marked here (xfail, strict: the suite says when to drop the mark).
REWRITING: dict[str, str] = {}


@pytest.mark.parametrize("doc", [
    pytest.param(d, marks=pytest.mark.xfail(strict=True, reason=REWRITING[d.name])) if d.name in REWRITING else d
    for d in DOCS], ids=lambda d: str(d.relative_to(ROOT)))
def test_every_path_module_and_link_a_doc_cites_exists(doc, files_and_tables):
    missing = missing_citations(doc, *files_and_tables)
    assert not missing, "\n".join(missing)


def test_the_check_catches_a_missing_path_a_stale_module_and_a_broken_link(tmp_path):
    files, tables = repo_files(), {"targets"}
    doc, _ = tmp_path / "probe.md", (tmp_path / "testing.md").write_text("")
    doc.write_text("`include/llmbench/loadgen/sweep.py`, `loadgen/{driver,wire}.py`, tests/unit/<package>/,\n"
                   "`llmbench.loadgen.sweep`, `llmbench.analysis.metrics.summarize_level`, `llmbench.targets`,\n"
                   "vLLM's benchmarks/serve.py, [testing](testing.md)\n"
                   "`include/llmbench/sweep.py`, `qualities.py`, `llmbench.models`, `llmbench.analysis.metrics.nope`,\n"
                   "benchmarks/serve.py, [gone](gone.md)\n")
    found = missing_citations(doc, files, tables)
    assert [f.split(": ", 1)[1] for f in found] == [
        "include/llmbench/sweep.py", "qualities.py", "llmbench.models", "llmbench.analysis.metrics.nope",
        "benchmarks/serve.py", "link gone.md"]
    assert [f.split(": ", 1)[0] for f in found] == ["probe.md:4"] * 4 + ["probe.md:5"] * 2


def test_readme_stays_the_front_door_under_10_kb():
    size = (ROOT / "README.md").stat().st_size
    assert size < README_MAX_BYTES, f"README.md is {size} bytes: move detail into docs/"
