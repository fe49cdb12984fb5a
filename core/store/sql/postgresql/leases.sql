-- Leases: acquire, reclaim, renew and release a task's lease.
-- The PostgreSQL text of the blocks the two backends write differently (core/store/leases.py);
-- the blocks they share are in common/leases.sql.

-- claim_task --
UPDATE tasks SET
    state = CASE WHEN state IN ('queued', 'interrupted') THEN 'starting' ELSE state END,
    claimed_at = :now, updated_at = :now, attempt = attempt + :attempt_bump::integer
WHERE task_id = :task_id
