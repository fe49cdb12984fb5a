-- Retention: pruning finished tasks and reading them page by page.
-- The PostgreSQL text of the blocks the two backends write differently (core/store/retention.py);
-- the blocks they share are in common/retention.sql.

-- select_prunable_tasks --
-- As in sqlite/retention.sql. The rows are locked, and those another writer holds are skipped: an
-- action, a kill or an ack on a task holds its row, so none of them races the prune.
SELECT t.task_id, t.finished_at FROM tasks t
WHERE t.finished_at < :before
  AND t.finished_at >= :after_at AND (t.finished_at > :after_at OR t.task_id > :after_id::text)
  AND NOT EXISTS (SELECT 1 FROM pending_kills k WHERE k.task_id = t.task_id AND k.outcome IS NULL)
  AND NOT EXISTS (SELECT 1 FROM host_requests r
                  WHERE r.task_id = t.task_id AND r.finished_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM acks a WHERE a.task_id = t.task_id AND a.until_at > :now)
  AND t.task_id NOT IN (SELECT jsonb_array_elements_text(w.upstream::jsonb) FROM tasks w
                        WHERE w.finished_at IS NULL)
  AND COALESCE((SELECT e.data::jsonb ->> 'page' FROM events e
                WHERE e.task_id = t.task_id AND e.kind IN ('page', 'watchdog')
                  AND e.data::jsonb ->> 'page' IN ('incident', 'all_clear')
                  AND NOT (e.data::jsonb ? 'released')
                ORDER BY e.event_id DESC LIMIT 1), '') <> 'incident'
ORDER BY t.finished_at, t.task_id
LIMIT :limit
FOR UPDATE OF t SKIP LOCKED

-- prune_events --
-- Not the events in a day partition that ended before the cutoff's day (:day_floor): the
-- upkeep after the pass drops that day whole, or deletes them there if a kept task holds the
-- day (core/store/pg_partitions.py).
DELETE FROM events
WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))
  AND (at >= :day_floor::double precision OR tableoid = 'events_default'::regclass)

-- prune_heartbeat_history --
DELETE FROM heartbeat_history WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_heartbeats --
DELETE FROM heartbeats WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_leases --
DELETE FROM leases WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_acks --
DELETE FROM acks WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_process_samples --
DELETE FROM process_samples
WHERE source IS NULL AND task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_pending_kills --
DELETE FROM pending_kills
WHERE source IS NULL AND task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_host_requests --
DELETE FROM host_requests
WHERE source IS NULL AND task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_tasks --
DELETE FROM tasks WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- select_source_task_candidates --
-- As in sqlite/retention.sql, without the past days the upkeep drops (see prune_events).
SELECT e.task_id FROM events e
WHERE e.task_id IS NOT NULL AND e.task_id > :after_id::text
  AND (e.at >= :day_floor::double precision OR e.tableoid = 'events_default'::regclass)
  AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = e.task_id)
GROUP BY e.task_id
HAVING max(e.at) < :before
ORDER BY e.task_id
LIMIT :limit

-- select_prunable_source_tasks --
-- As in sqlite/retention.sql.
SELECT e.task_id FROM events e
WHERE e.task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))
  AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = e.task_id)
GROUP BY e.task_id
HAVING max(e.at) < :before
  AND NOT EXISTS (SELECT 1 FROM pending_kills k WHERE k.task_id = e.task_id AND k.outcome IS NULL)
  AND NOT EXISTS (SELECT 1 FROM host_requests r
                  WHERE r.task_id = e.task_id AND r.finished_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM source_acks a WHERE a.task_id = e.task_id AND a.until_at > :now)
  AND COALESCE((SELECT p.data::jsonb ->> 'page' FROM events p
                WHERE p.task_id = e.task_id AND p.kind IN ('page', 'watchdog')
                  AND p.data::jsonb ->> 'page' IN ('incident', 'all_clear')
                  AND NOT (p.data::jsonb ? 'released')
                ORDER BY p.event_id DESC LIMIT 1), '') <> 'incident'
  AND COALESCE((SELECT h.kind FROM events h
                WHERE h.task_id = e.task_id AND h.kind IN ('quarantined', 'unquarantined')
                ORDER BY h.event_id DESC LIMIT 1), '') <> 'quarantined'
ORDER BY e.task_id

-- prune_source_events --
-- As prune_events: the past days are the upkeep's.
DELETE FROM events
WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))
  AND (at >= :day_floor::double precision OR tableoid = 'events_default'::regclass)

-- prune_source_acks --
DELETE FROM source_acks WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_source_kills --
DELETE FROM pending_kills
WHERE source IS NOT NULL AND task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_source_host_requests --
DELETE FROM host_requests
WHERE source IS NOT NULL AND task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- select_finished_page --
-- As in sqlite/retention.sql: a page of the tasks finished before the cursor, newest first.
{task_records}
WHERE t.finished_at <= :after_at
  AND (t.finished_at < :after_at OR t.task_id < :after_id::text)
ORDER BY t.finished_at DESC, t.task_id DESC
LIMIT :limit
