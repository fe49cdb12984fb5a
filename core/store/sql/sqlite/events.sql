-- The event log.
-- The SQLite text of the blocks the two backends write differently (core/store/events.py);
-- the blocks they share are in common/events.sql.

-- select_events --
SELECT event_id, at, task_id, kind, actor, message, data FROM events
WHERE (:task_id IS NULL OR task_id = :task_id) AND (:before_id IS NULL OR event_id < :before_id)
  AND (:kind IS NULL OR kind = :kind) AND (:skip_kind IS NULL OR kind <> :skip_kind)
ORDER BY event_id DESC LIMIT :limit
