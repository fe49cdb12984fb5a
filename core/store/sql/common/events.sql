-- The event log.
-- Both backends run these blocks as written (core/store/events.py); the blocks each writes
-- its own way are in sqlite/events.sql and postgresql/events.sql.

-- insert_event --
INSERT INTO events (at, task_id, kind, actor, message, data)
VALUES (:now, :task_id, :kind, :actor, :message, :data)

-- select_events_after --
-- The events of tasks of one kind after :after_id, at or after :since, oldest first: a reader
-- that keeps up with the log (the monitor's flips) walks forward from the last event it read,
-- by the primary key, and reads each event once.
SELECT event_id, at, task_id, kind, actor, message, data FROM events
WHERE event_id > :after_id AND kind = :kind AND at >= :since AND task_id IS NOT NULL
ORDER BY event_id LIMIT :limit
