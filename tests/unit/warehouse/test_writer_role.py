"""Issue 45: the warehouse writer is its own PostgreSQL role with rights on the `llmbench` schema
only (grant_writer), on the real local server: it publishes (migrating, over what an earlier
publisher created) and re-publishes, and it can create nothing outside its schema."""

import uuid

import psycopg
import pytest

from llmbench import warehouse

from .test_warehouse import PG_ADMIN, count, frames


@pytest.fixture
def database_and_role():
    name, role = f"llmbench_roles_{uuid.uuid4().hex[:8]}", f"llmbench_writer_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name, role
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def as_role(dsn: str, role: str) -> str:
    scheme, rest = dsn.split("://", 1)
    return f"{scheme}://{role}@{rest.split('@', 1)[1]}"


def test_the_writer_migrates_a_fresh_database_it_was_given(database_and_role):
    """The compose stack's case: grant_writer on an empty database, then the writer's first publish
    applies every schema file (the first creates the schema: it exists, owned by the writer)."""
    admin_dsn, role = database_and_role
    warehouse.grant_writer(admin_dsn, role)
    writer = as_role(admin_dsn, role)
    warehouse.publish(frames("k1"), writer)
    assert count(writer, "levels", "k1") == 2


def test_the_writer_publishes_in_its_schema_and_can_create_nothing_else(database_and_role):
    admin_dsn, role = database_and_role
    warehouse.publish(frames("before"), admin_dsn)  # a warehouse the administrator published to first
    warehouse.grant_writer(admin_dsn, role, "first")
    warehouse.grant_writer(admin_dsn, role, "second")  # again: the password changes, nothing else
    writer = as_role(admin_dsn, role)
    warehouse.publish(frames("k1"), writer)
    warehouse.publish(frames("k1", tps=20.0), writer)  # replaces its rows: it owns the tables
    assert count(writer, "levels", "k1") == 2 and count(writer, "runs", "before") == 1
    with psycopg.connect(admin_dsn) as con:
        owners = {r[0] for r in con.execute("SELECT tableowner FROM pg_tables WHERE schemaname = 'llmbench'")}
        assert owners == {role}
    with psycopg.connect(writer, autocommit=True) as con:
        for statement in ("CREATE TABLE public.sneaky (x int)", "CREATE SCHEMA other"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(statement)
