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

-- select_source_task_candidates --
-- Up to :limit tasks of read-only sources (their events name a task the tasks table does not
-- hold), after :after_id in id order, whose newest event is before :before. A read, outside
-- the write: it walks the whole events index when there are none (0.8 s at 1,000,000 events),
-- which must not hold the store's lock. The store never learns when a source's task finished:
-- its newest event stands for that.
SELECT e.task_id FROM events e
WHERE e.task_id IS NOT NULL AND e.task_id > :after_id
  AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = e.task_id)
GROUP BY e.task_id
HAVING max(e.at) < :before
ORDER BY e.task_id
LIMIT :limit

-- select_prunable_source_tasks --
-- Of the candidates (:ids), inside the write that prunes them, those that nothing needs any
-- more: still quiet since :before, no open incident (as for the store's tasks), no hold (its
-- latest hold or release is not a hold: the hold lives only in these events), no open kill or
-- host request, no ack in force.
SELECT e.task_id FROM events e
WHERE e.task_id IN (SELECT value FROM json_each(:ids))
  AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = e.task_id)
GROUP BY e.task_id
HAVING max(e.at) < :before
  AND NOT EXISTS (SELECT 1 FROM pending_kills k WHERE k.task_id = e.task_id AND k.outcome IS NULL)
  AND NOT EXISTS (SELECT 1 FROM host_requests r
                  WHERE r.task_id = e.task_id AND r.finished_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM source_acks a WHERE a.task_id = e.task_id AND a.until_at > :now)
  AND COALESCE((SELECT json_extract(p.data, '$.page') FROM events p
                WHERE p.task_id = e.task_id AND p.kind IN ('page', 'watchdog')
                  AND json_extract(p.data, '$.page') IN ('incident', 'all_clear')
                  AND json_extract(p.data, '$.released') IS NULL
                ORDER BY p.event_id DESC LIMIT 1), '') <> 'incident'
  AND COALESCE((SELECT h.kind FROM events h
                WHERE h.task_id = e.task_id AND h.kind IN ('quarantined', 'unquarantined')
                ORDER BY h.event_id DESC LIMIT 1), '') <> 'quarantined'
ORDER BY e.task_id

-- prune_source_events --
DELETE FROM events WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_source_acks --
-- What else is kept of a pruned source task: its ended acks, closed kills and host requests.
DELETE FROM source_acks WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_source_kills --
DELETE FROM pending_kills
WHERE source IS NOT NULL AND task_id IN (SELECT value FROM json_each(:ids))

-- prune_source_host_requests --
DELETE FROM host_requests
WHERE source IS NOT NULL AND task_id IN (SELECT value FROM json_each(:ids))

-- select_finished_page --
-- Up to :limit tasks finished before the cursor (:after_at, :after_id), newest first: `status
-- --all` reads every finished task a page at a time. The first cursor is (the window, '').
{task_records}
WHERE t.finished_at <= :after_at AND (t.finished_at < :after_at OR t.task_id < :after_id)
ORDER BY t.finished_at DESC, t.task_id DESC
LIMIT :limit
