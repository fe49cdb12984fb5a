-- Blocks only the PostgreSQL backend runs (core/store/postgres.py): the server's clock and
-- the row lock every write takes first.

-- transaction_now --
-- The server's clock, read after the transaction's row lock is held: now() is frozen at BEGIN,
-- so a transaction that queued behind another would judge expiry with a stale time.
-- :pinned replaces it only in tests (PostgresStore.open(pinned_clock=...)).
SELECT COALESCE(:pinned::double precision,
                extract(epoch FROM clock_timestamp())::double precision)

-- lock_task --
-- Every write to one task holds its row: leases, heartbeats and actions on a task are
-- serialized, and their events are numbered in the order they happened.
SELECT {task_columns} FROM tasks WHERE task_id = :task_id FOR UPDATE
