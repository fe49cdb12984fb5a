-- Retention: pruning finished tasks and reading them page by page.
-- The SQLite text of the blocks the two backends write differently (core/store/retention.py);
-- the blocks they share are in common/retention.sql.

-- select_prunable_tasks --
-- Up to :limit tasks finished before :before, oldest first from the cursor (:after_at,
-- :after_id), that nothing needs any more: no open incident (its latest incident page has no
-- all-clear after it), no unfinished task waiting behind it, no open kill or host request, no
-- ack in force.
SELECT t.task_id, t.finished_at FROM tasks t
WHERE t.finished_at < :before
  AND t.finished_at >= :after_at AND (t.finished_at > :after_at OR t.task_id > :after_id)
  AND NOT EXISTS (SELECT 1 FROM pending_kills k WHERE k.task_id = t.task_id AND k.outcome IS NULL)
  AND NOT EXISTS (SELECT 1 FROM host_requests r
                  WHERE r.task_id = t.task_id AND r.finished_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM acks a WHERE a.task_id = t.task_id AND a.until_at > :now)
  AND t.task_id NOT IN (SELECT u.value FROM tasks w, json_each(w.upstream) u
                        WHERE w.finished_at IS NULL)
  AND COALESCE((SELECT json_extract(e.data, '$.page') FROM events e
                WHERE e.task_id = t.task_id AND e.kind IN ('page', 'watchdog')
                  AND json_extract(e.data, '$.page') IN ('incident', 'all_clear')
                  AND json_extract(e.data, '$.released') IS NULL
                ORDER BY e.event_id DESC LIMIT 1), '') <> 'incident'
ORDER BY t.finished_at, t.task_id
LIMIT :limit

-- prune_events --
DELETE FROM events WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_heartbeat_history --
DELETE FROM heartbeat_history WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_heartbeats --
DELETE FROM heartbeats WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_leases --
DELETE FROM leases WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_acks --
DELETE FROM acks WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_process_samples --
DELETE FROM process_samples
WHERE source IS NULL AND task_id IN (SELECT value FROM json_each(:ids))

-- prune_pending_kills --
DELETE FROM pending_kills
WHERE source IS NULL AND task_id IN (SELECT value FROM json_each(:ids))

-- prune_host_requests --
DELETE FROM host_requests
WHERE source IS NULL AND task_id IN (SELECT value FROM json_each(:ids))

-- prune_tasks --
DELETE FROM tasks WHERE task_id IN (SELECT value FROM json_each(:ids))

-- select_finished_page --
-- Up to :limit tasks finished before the cursor (:after_at, :after_id), newest first: `status
-- --all` reads every finished task a page at a time. The first cursor is (the window, '').
{task_records}
WHERE t.finished_at <= :after_at AND (t.finished_at < :after_at OR t.task_id < :after_id)
ORDER BY t.finished_at DESC, t.task_id DESC
LIMIT :limit
