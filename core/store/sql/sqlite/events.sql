-- The event log.
-- The SQLite text of the blocks the two backends write differently (core/store/events.py);
-- the blocks they share are in common/events.sql.

-- select_events --
SELECT event_id, at, task_id, kind, actor, message, data FROM events
WHERE (:task_id IS NULL OR task_id = :task_id) AND (:before_id IS NULL OR event_id < :before_id)
  AND (:kind IS NULL OR kind = :kind) AND (:skip_kind IS NULL OR kind <> :skip_kind)
ORDER BY event_id DESC LIMIT :limit

-- select_events_of_tasks --
-- Every event of a batch of tasks (a JSON list of ids), of the kinds in :kinds (a JSON list):
-- the events of many incidents at once, by the events_task index.
SELECT event_id, at, task_id, kind, actor, message, data FROM events
WHERE task_id IN (SELECT value FROM json_each(:ids))
  AND kind IN (SELECT value FROM json_each(:kinds))
