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
    Migration(
        3,
        "suspended runs (human in the loop), claimable once",
        (
            # `pending` and `snapshot` are JSON text, opaque to SQL: they read back exactly.
            """CREATE TABLE sluicegate_suspended_runs (
                run_id TEXT PRIMARY KEY,
                agent_id TEXT NOT NULL,
                resource_id TEXT,
                thread_id TEXT,
                pending TEXT NOT NULL,
                snapshot TEXT NOT NULL,
                suspended_at INTEGER NOT NULL,
                expires_at INTEGER NOT NULL,
                claimed_at INTEGER,
                version INTEGER NOT NULL
            )""",
            "CREATE INDEX sluicegate_suspended_runs_agent "
            "ON sluicegate_suspended_runs (agent_id, suspended_at)",
            "CREATE INDEX sluicegate_suspended_runs_thread "
            "ON sluicegate_suspended_runs (agent_id, thread_id, suspended_at)",
            "CREATE INDEX sluicegate_suspended_runs_resource "
            "ON sluicegate_suspended_runs (agent_id, resource_id, suspended_at)",
            "CREATE INDEX sluicegate_suspended_runs_expires ON sluicegate_suspended_runs (expires_at)",
        ),
    ),
    Migration(
        4,
        "finished trace spans of agent runs, for the studio",
        (
            """CREATE TABLE sluicegate_traces (
                trace_id TEXT PRIMARY KEY,
                agent_id TEXT,
                resource_id TEXT,
                start_ns INTEGER NOT NULL
            )""",
            "CREATE INDEX sluicegate_traces_start ON sluicegate_traces (start_ns)",
            # `seq` orders writes, so another server instance can read what was added since.
            """CREATE TABLE sluicegate_spans (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                trace_id TEXT NOT NULL,
                span_id TEXT NOT NULL,
                start_ns INTEGER NOT NULL,
                record TEXT NOT NULL,
                agent_id TEXT,
                resource_id TEXT,
                UNIQUE (trace_id, span_id)
            )""",
        ),
    ),
    Migration(
        5,
        "budget reservations made once per idempotency key",
        (
            "ALTER TABLE sluicegate_usage ADD COLUMN idempotency_key TEXT",
            # The spend a reservation was decided on: what `reserve` answers when asked again.
            "ALTER TABLE sluicegate_usage ADD COLUMN spent REAL",
            "CREATE UNIQUE INDEX sluicegate_usage_idempotency ON sluicegate_usage (key, idempotency_key) "
            "WHERE idempotency_key IS NOT NULL",
        ),
    ),
    Migration(
        6,
        "call counters of ToolCallLimit and ModelCallLimit",
        ("CREATE TABLE sluicegate_call_counts (key TEXT PRIMARY KEY, count INTEGER NOT NULL)",),
    ),
    Migration(
        7,
        "conversation summaries of ContextCompactor, per resource and thread",
        (
            """CREATE TABLE sluicegate_context_summaries (
                resource_id TEXT NOT NULL,
                thread_id TEXT NOT NULL,
                summary TEXT NOT NULL,
                covered INTEGER NOT NULL,
                covered_hash TEXT NOT NULL,
                first_message_id TEXT,
                last_message_id TEXT,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (resource_id, thread_id)
            )""",
            "CREATE INDEX sluicegate_context_summaries_thread ON sluicegate_context_summaries (thread_id)",
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
        "budget reservations committed in batches (group commit)",
        (
            # One call, one transaction, one commit for a whole batch. The per-key advisory locks
            # are the ones `sluicegate_reserve` takes, taken up front in lock-id order so two
            # batches never wait on each other in a cycle. Then one query reads, under those
            # locks, the spend of every (key, window) of the batch as committed before it, and
            # the reservations are decided in memory in arrival order per key, each one's spend
            # being that base plus the batch's own earlier grants in its window. The grants are
            # written by one INSERT with sequence numbers drawn in decision order. `usage`
            # arrives as JSON text so that one caller's payload is encoded (and fails) alone.
            """CREATE OR REPLACE FUNCTION sluicegate_reserve_many(
                p_keys TEXT[], p_amounts DOUBLE PRECISION[], p_limits DOUBLE PRECISION[],
                p_since TIMESTAMPTZ[], p_usage TEXT[], p_at TIMESTAMPTZ[], p_seed BIGINT
            ) RETURNS TABLE (ord INTEGER, reserved_seq BIGINT, spent DOUBLE PRECISION)
            LANGUAGE plpgsql VOLATILE AS $$
            DECLARE
                lock_id BIGINT;
                e RECORD;
                seqs BIGINT[] := array_fill(NULL::BIGINT, ARRAY[cardinality(p_keys)]);
                spents DOUBLE PRECISION[] := array_fill(0::DOUBLE PRECISION, ARRAY[cardinality(p_keys)]);
                cur_key TEXT;
                cur_since TIMESTAMPTZ;
                running DOUBLE PRECISION;
                grant_amounts DOUBLE PRECISION[];
                grant_ats TIMESTAMPTZ[];
                i INTEGER;
                seq_name TEXT := pg_get_serial_sequence('sluicegate_usage', 'seq');
            BEGIN
                FOR lock_id IN
                    SELECT DISTINCT hashtextextended(k, p_seed) FROM unnest(p_keys) AS k ORDER BY 1
                LOOP
                    PERFORM pg_advisory_xact_lock(lock_id);
                END LOOP;
                FOR e IN
                    SELECT u.n::INTEGER AS n, u.k, u.a, u.l, u.s, u.t, w.base
                    FROM unnest(p_keys, p_amounts, p_limits, p_since, p_at)
                        WITH ORDINALITY AS u(k, a, l, s, t, n)
                    JOIN (
                        SELECT v.k, v.s, (
                            SELECT COALESCE(SUM(x.cost), 0) FROM sluicegate_usage x
                            WHERE x.key = v.k AND (v.s IS NULL OR x.at >= v.s)
                        ) AS base
                        FROM (SELECT DISTINCT k, s FROM unnest(p_keys, p_since) AS d(k, s)) AS v
                    ) AS w ON w.k = u.k AND w.s IS NOT DISTINCT FROM u.s
                    ORDER BY u.k, u.n
                LOOP
                    IF e.k IS DISTINCT FROM cur_key THEN
                        cur_key := e.k;
                        grant_amounts := '{}';
                        grant_ats := '{}';
                        running := NULL;
                    END IF;
                    IF running IS NULL OR e.s IS DISTINCT FROM cur_since THEN
                        running := e.base;
                        FOR i IN 1 .. COALESCE(array_length(grant_amounts, 1), 0) LOOP
                            IF e.s IS NULL OR grant_ats[i] >= e.s THEN
                                running := running + grant_amounts[i];
                            END IF;
                        END LOOP;
                        cur_since := e.s;
                    END IF;
                    spents[e.n] := running;
                    IF running < e.l THEN
                        seqs[e.n] := nextval(seq_name);
                        grant_amounts := grant_amounts || e.a;
                        grant_ats := grant_ats || e.t;
                        IF e.s IS NULL OR e.t >= e.s THEN
                            running := running + e.a;
                        END IF;
                    END IF;
                END LOOP;
                INSERT INTO sluicegate_usage (seq, key, cost, usage, at)
                    SELECT q, k, a, j::jsonb, t FROM unnest(seqs, p_keys, p_amounts, p_usage, p_at)
                        AS g(q, k, a, j, t)
                    WHERE q IS NOT NULL;
                RETURN QUERY
                    SELECT r.n::INTEGER, r.q, r.sp FROM unnest(seqs, spents) WITH ORDINALITY AS r(q, sp, n);
            END
            $$""",
        ),
    ),
    Migration(
        4,
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
    Migration(
        5,
        "suspended runs (human in the loop), claimable once",
        (
            # TEXT rather than JSONB: the payloads are opaque here, and JSONB would refuse \u0000
            # in a string and reorder keys, so they would not read back as the run wrote them.
            """CREATE TABLE sluicegate_suspended_runs (
                run_id TEXT PRIMARY KEY,
                agent_id TEXT NOT NULL,
                resource_id TEXT,
                thread_id TEXT,
                pending TEXT NOT NULL,
                snapshot TEXT NOT NULL,
                suspended_at TIMESTAMPTZ NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                claimed_at TIMESTAMPTZ,
                version BIGINT NOT NULL
            )""",
            "CREATE INDEX sluicegate_suspended_runs_agent "
            "ON sluicegate_suspended_runs (agent_id, suspended_at)",
            "CREATE INDEX sluicegate_suspended_runs_thread "
            "ON sluicegate_suspended_runs (agent_id, thread_id, suspended_at)",
            "CREATE INDEX sluicegate_suspended_runs_resource "
            "ON sluicegate_suspended_runs (agent_id, resource_id, suspended_at)",
            "CREATE INDEX sluicegate_suspended_runs_expires ON sluicegate_suspended_runs (expires_at)",
        ),
    ),
    Migration(
        6,
        "finished trace spans of agent runs, for the studio",
        (
            """CREATE TABLE sluicegate_traces (
                trace_id TEXT PRIMARY KEY,
                agent_id TEXT,
                resource_id TEXT,
                start_ns BIGINT NOT NULL
            )""",
            "CREATE INDEX sluicegate_traces_start ON sluicegate_traces (start_ns)",
            """CREATE TABLE sluicegate_spans (
                seq BIGSERIAL PRIMARY KEY,
                trace_id TEXT NOT NULL,
                span_id TEXT NOT NULL,
                start_ns BIGINT NOT NULL,
                record TEXT NOT NULL,
                agent_id TEXT,
                resource_id TEXT,
                UNIQUE (trace_id, span_id)
            )""",
        ),
    ),
    Migration(
        7,
        "budget reservations made once per idempotency key",
        (
            "ALTER TABLE sluicegate_usage ADD COLUMN idempotency_key TEXT",
            # The spend a reservation was decided on: what `reserve` answers when asked again.
            "ALTER TABLE sluicegate_usage ADD COLUMN spent DOUBLE PRECISION",
            "CREATE UNIQUE INDEX sluicegate_usage_idempotency ON sluicegate_usage (key, idempotency_key) "
            "WHERE idempotency_key IS NOT NULL",
            # `sluicegate_reserve_many` of migration 3 with the reservations' idempotency keys (an
            # overload: a server of the previous version keeps calling the old one). Under the
            # keys' locks, a reservation whose (key, idempotency key) is already stored answers
            # that row and its recorded spend; it is not decided again and adds nothing. The
            # caller sends each (key, idempotency key) at most once per batch.
            """CREATE OR REPLACE FUNCTION sluicegate_reserve_many(
                p_keys TEXT[], p_amounts DOUBLE PRECISION[], p_limits DOUBLE PRECISION[],
                p_since TIMESTAMPTZ[], p_usage TEXT[], p_at TIMESTAMPTZ[], p_idempotency TEXT[],
                p_seed BIGINT
            ) RETURNS TABLE (ord INTEGER, reserved_seq BIGINT, spent DOUBLE PRECISION)
            LANGUAGE plpgsql VOLATILE AS $$
            #variable_conflict use_column
            DECLARE
                lock_id BIGINT;
                e RECORD;
                seqs BIGINT[] := array_fill(NULL::BIGINT, ARRAY[cardinality(p_keys)]);
                held BIGINT[] := array_fill(NULL::BIGINT, ARRAY[cardinality(p_keys)]);
                spents DOUBLE PRECISION[] := array_fill(0::DOUBLE PRECISION, ARRAY[cardinality(p_keys)]);
                cur_key TEXT;
                cur_since TIMESTAMPTZ;
                running DOUBLE PRECISION;
                grant_amounts DOUBLE PRECISION[];
                grant_ats TIMESTAMPTZ[];
                i INTEGER;
                seq_name TEXT := pg_get_serial_sequence('sluicegate_usage', 'seq');
            BEGIN
                FOR lock_id IN
                    SELECT DISTINCT hashtextextended(k, p_seed) FROM unnest(p_keys) AS k ORDER BY 1
                LOOP
                    PERFORM pg_advisory_xact_lock(lock_id);
                END LOOP;
                FOR e IN
                    SELECT u.n::INTEGER AS n, u.k, u.a, u.l, u.s, u.t, w.base,
                        old.seq AS old_seq, old.spent AS old_spent
                    FROM unnest(p_keys, p_amounts, p_limits, p_since, p_at, p_idempotency)
                        WITH ORDINALITY AS u(k, a, l, s, t, r, n)
                    JOIN (
                        SELECT v.k, v.s, (
                            SELECT COALESCE(SUM(x.cost), 0) FROM sluicegate_usage x
                            WHERE x.key = v.k AND (v.s IS NULL OR x.at >= v.s)
                        ) AS base
                        FROM (SELECT DISTINCT k, s FROM unnest(p_keys, p_since) AS d(k, s)) AS v
                    ) AS w ON w.k = u.k AND w.s IS NOT DISTINCT FROM u.s
                    LEFT JOIN sluicegate_usage old ON old.key = u.k AND old.idempotency_key = u.r
                    ORDER BY u.k, u.n
                LOOP
                    IF e.k IS DISTINCT FROM cur_key THEN
                        cur_key := e.k;
                        grant_amounts := '{}';
                        grant_ats := '{}';
                        running := NULL;
                    END IF;
                    IF e.old_seq IS NOT NULL THEN
                        held[e.n] := e.old_seq;
                        spents[e.n] := COALESCE(e.old_spent, 0);
                        CONTINUE;
                    END IF;
                    IF running IS NULL OR e.s IS DISTINCT FROM cur_since THEN
                        running := e.base;
                        FOR i IN 1 .. COALESCE(array_length(grant_amounts, 1), 0) LOOP
                            IF e.s IS NULL OR grant_ats[i] >= e.s THEN
                                running := running + grant_amounts[i];
                            END IF;
                        END LOOP;
                        cur_since := e.s;
                    END IF;
                    spents[e.n] := running;
                    IF running < e.l THEN
                        seqs[e.n] := nextval(seq_name);
                        grant_amounts := grant_amounts || e.a;
                        grant_ats := grant_ats || e.t;
                        IF e.s IS NULL OR e.t >= e.s THEN
                            running := running + e.a;
                        END IF;
                    END IF;
                END LOOP;
                INSERT INTO sluicegate_usage (seq, key, cost, usage, at, idempotency_key, spent)
                    SELECT q, k, a, j::jsonb, t, r, sp
                    FROM unnest(seqs, p_keys, p_amounts, p_usage, p_at, p_idempotency, spents)
                        AS g(q, k, a, j, t, r, sp)
                    WHERE q IS NOT NULL;
                RETURN QUERY
                    SELECT r.n::INTEGER, COALESCE(r.q, r.h), r.sp
                    FROM unnest(seqs, held, spents) WITH ORDINALITY AS r(q, h, sp, n);
            END
            $$""",
        ),
    ),
    Migration(
        8,
        "call counters of ToolCallLimit and ModelCallLimit",
        ("CREATE TABLE sluicegate_call_counts (key TEXT PRIMARY KEY, count BIGINT NOT NULL)",),
    ),
    Migration(
        9,
        "conversation summaries of ContextCompactor, per resource and thread",
        (
            """CREATE TABLE sluicegate_context_summaries (
                resource_id TEXT NOT NULL,
                thread_id TEXT NOT NULL,
                summary TEXT NOT NULL,
                covered INTEGER NOT NULL,
                covered_hash TEXT NOT NULL,
                first_message_id TEXT,
                last_message_id TEXT,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (resource_id, thread_id)
            )""",
            "CREATE INDEX sluicegate_context_summaries_thread ON sluicegate_context_summaries (thread_id)",
        ),
    ),
)


def pending(migrations: tuple[Migration, ...], applied: set[int]) -> list[Migration]:
    """The migrations not applied yet, in version order."""
    return sorted((m for m in migrations if m.version not in applied), key=lambda m: m.version)
