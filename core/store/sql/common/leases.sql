-- Leases: acquire, reclaim, renew and release a task's lease.
-- Both backends run these blocks as written (core/store/leases.py); the blocks each writes
-- its own way are in sqlite/leases.sql and postgresql/leases.sql.

-- select_lease --
SELECT task_id, owner, token, acquired_at, renewed_at, expires_at FROM leases WHERE task_id = :task_id

-- upsert_lease --
INSERT INTO leases (task_id, owner, token, acquired_at, renewed_at, expires_at)
VALUES (:task_id, :owner, :token, :now, :now, :expires_at)
ON CONFLICT (task_id) DO UPDATE SET
    owner = excluded.owner, token = excluded.token, acquired_at = excluded.acquired_at,
    renewed_at = excluded.renewed_at, expires_at = excluded.expires_at

-- renew_lease --
-- Compare-and-swap: only the current owner with the current token, and only before expiry.
UPDATE leases SET renewed_at = :now, expires_at = :expires_at
WHERE task_id = :task_id AND owner = :owner AND token = :token AND expires_at >= :now

-- release_lease --
UPDATE leases SET owner = NULL, expires_at = NULL, renewed_at = :now
WHERE task_id = :task_id AND owner = :owner AND token = :token
