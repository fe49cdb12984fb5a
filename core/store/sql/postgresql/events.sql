-- The event log.
-- The PostgreSQL text of the blocks the two backends write differently (core/store/events.py);
-- the blocks they share are in common/events.sql.

-- select_events --
SELECT event_id, at, task_id, kind, actor, message, data FROM events
WHERE (:task_id::text IS NULL OR task_id = :task_id::text)
  AND (:before_id::bigint IS NULL OR event_id < :before_id::bigint)
  AND (:kind::text IS NULL OR kind = :kind::text)
  AND (:skip_kind::text IS NULL OR kind <> :skip_kind::text)
ORDER BY event_id DESC LIMIT :limit

-- select_events_of_tasks --
-- Every event of a batch of tasks, of the kinds in :kinds (see sqlite/events.sql).
SELECT event_id, at, task_id, kind, actor, message, data FROM events
WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))
  AND kind IN (SELECT jsonb_array_elements_text(:kinds::jsonb))
