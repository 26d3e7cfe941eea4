"""Versioned schema migrations for both backends.

Each backend keeps a `sluicegate_schema_version` table with one row per applied version. On
open, a store applies the versions it lacks, in order, inside one transaction guarded against
other processes doing the same (`BEGIN IMMEDIATE` in SQLite, an advisory lock in PostgreSQL), so
opening a store any number of times, from any number of processes, is safe.

To change the schema, append a migration; never edit one that has shipped.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


SCHEMA_TABLE = "sluicegate_schema_version"

SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "threads, messages, resources and usage",
        (
            """CREATE TABLE sluicegate_threads (
                id TEXT PRIMARY KEY,
                resource_id TEXT NOT NULL,
                title TEXT NOT NULL DEFAULT '',
                metadata TEXT NOT NULL DEFAULT '{}',
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )""",
            "CREATE INDEX sluicegate_threads_resource ON sluicegate_threads (resource_id, updated_at)",
            # `seq` breaks ties between messages created in the same microsecond.
            """CREATE TABLE sluicegate_messages (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                thread_id TEXT NOT NULL,
                resource_id TEXT,
                role TEXT NOT NULL,
                type TEXT,
                content TEXT NOT NULL,
                created_at INTEGER NOT NULL
            )""",
            "CREATE INDEX sluicegate_messages_thread_created "
            "ON sluicegate_messages (thread_id, created_at, seq)",
            """CREATE TABLE sluicegate_resources (
                id TEXT PRIMARY KEY,
                working_memory TEXT,
                metadata TEXT NOT NULL DEFAULT '{}',
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )""",
            """CREATE TABLE sluicegate_usage (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                key TEXT NOT NULL,
                cost REAL NOT NULL,
                usage TEXT NOT NULL,
                at INTEGER NOT NULL
            )""",
            "CREATE INDEX sluicegate_usage_key_at ON sluicegate_usage (key, at)",
        ),
    ),
    Migration(
        2,
        "sealed pseudonym mappings of PIIDetector, per resource and thread",
        (
            """CREATE TABLE sluicegate_pseudonyms (
                resource_id TEXT NOT NULL,
                thread_id TEXT NOT NULL,
                sealed BLOB NOT NULL,
                version INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (resource_id, thread_id)
            )""",
            "CREATE INDEX sluicegate_pseudonyms_thread ON sluicegate_pseudonyms (thread_id)",
        ),
    ),
)

POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "threads, messages, resources and usage",
        (
            """CREATE TABLE sluicegate_threads (
                id TEXT PRIMARY KEY,
                resource_id TEXT NOT NULL,
                title TEXT NOT NULL DEFAULT '',
                metadata JSONB NOT NULL DEFAULT '{}',
                created_at TIMESTAMPTZ NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL
            )""",
            "CREATE INDEX sluicegate_threads_resource ON sluicegate_threads (resource_id, updated_at)",
            """CREATE TABLE sluicegate_messages (
                seq BIGSERIAL PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                thread_id TEXT NOT NULL,
                resource_id TEXT,
                role TEXT NOT NULL,
                type TEXT,
                content JSONB NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )""",
            "CREATE INDEX sluicegate_messages_thread_created "
            "ON sluicegate_messages (thread_id, created_at, seq)",
            """CREATE TABLE sluicegate_resources (
                id TEXT PRIMARY KEY,
                working_memory TEXT,
                metadata JSONB NOT NULL DEFAULT '{}',
                created_at TIMESTAMPTZ NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL
            )""",
            """CREATE TABLE sluicegate_usage (
                seq BIGSERIAL PRIMARY KEY,
                key TEXT NOT NULL,
                cost DOUBLE PRECISION NOT NULL,
                usage JSONB NOT NULL,
                at TIMESTAMPTZ NOT NULL
            )""",
            "CREATE INDEX sluicegate_usage_key_at ON sluicegate_usage (key, at)",
        ),
    ),
    Migration(
        2,
        "atomic budget reservations in one round trip",
        (
            # Each statement of a VOLATILE function takes a fresh snapshot, so the sum after the
            # per-key lock sees every reservation committed before the lock was granted.
            """CREATE OR REPLACE FUNCTION sluicegate_reserve(
                p_key TEXT, p_amount DOUBLE PRECISION, p_limit DOUBLE PRECISION,
                p_since TIMESTAMPTZ, p_usage JSONB, p_at TIMESTAMPTZ, p_seed BIGINT,
                OUT reserved_seq BIGINT, OUT spent DOUBLE PRECISION
            ) LANGUAGE plpgsql VOLATILE AS $$
            BEGIN
                PERFORM pg_advisory_xact_lock(hashtextextended(p_key, p_seed));
                SELECT COALESCE(SUM(cost), 0) INTO spent FROM sluicegate_usage
                    WHERE key = p_key AND (p_since IS NULL OR at >= p_since);
                IF spent < p_limit THEN
                    INSERT INTO sluicegate_usage (key, cost, usage, at)
                        VALUES (p_key, p_amount, p_usage, p_at) RETURNING seq INTO reserved_seq;
                END IF;
            END
            $$""",
        ),
    ),
    Migration(
        3,
        "sealed pseudonym mappings of PIIDetector, per resource and thread",
        (
            """CREATE TABLE sluicegate_pseudonyms (
                resource_id TEXT NOT NULL,
                thread_id TEXT NOT NULL,
                sealed BYTEA NOT NULL,
                version BIGINT NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (resource_id, thread_id)
            )""",
            "CREATE INDEX sluicegate_pseudonyms_thread ON sluicegate_pseudonyms (thread_id)",
        ),
    ),
)


def pending(migrations: tuple[Migration, ...], applied: set[int]) -> list[Migration]:
    """The migrations not applied yet, in version order."""
    return sorted((m for m in migrations if m.version not in applied), key=lambda m: m.version)
