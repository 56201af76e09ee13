"""A PostgreSQL server of the test's own (initdb, pg_ctl), on a free port: a real warehouse that a
test may stop and start again without touching the machine's PostgreSQL other tests use."""

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg

from llmbench.backends.local.backend import free_port


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} not found under /usr/lib/postgresql/*/bin")
    return found[-1]


class PrivatePostgres:
    """initdb into a folder of its own (as the postgres user when run as root: PostgreSQL refuses
    root), trust authentication, listening on 127.0.0.1:<free port>."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="llmbench-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as:
            shutil.chown(self.dir, "postgres")
        self._run(_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def _run(self, *args: str) -> None:
        r = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"{args[0]}: {r.stdout[-1500:]} {r.stderr[-1500:]}")

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-o", opts, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """fast: every session is ended and open transactions roll back, as a restart does."""
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        try:
            with psycopg.connect(self.dsn, connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def destroy(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
