-- The event log.
-- Both backends run these blocks as written (core/store/events.py); the blocks each writes
-- its own way are in sqlite/events.sql and postgresql/events.sql.

-- insert_event --
INSERT INTO events (at, task_id, kind, actor, message, data)
VALUES (:now, :task_id, :kind, :actor, :message, :data)
