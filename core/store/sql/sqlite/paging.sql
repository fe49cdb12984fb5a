-- The watchdog's own lease, its undelivered pages and what it remembers.
-- The SQLite text of the blocks the two backends write differently (core/store/paging.py);
-- the blocks they share are in common/paging.sql.

-- insert_watchdog_lease --
-- The first watchdog of a store: nobody held the lease before.
INSERT INTO watchdog_lease (singleton, owner, host, pid, token, acquired_at, renewed_at, expires_at)
VALUES (1, :owner, :host, :pid, 1, :now, :now, :expires_at)
ON CONFLICT (singleton) DO NOTHING

-- hold_watchdog_lease_row --
-- SQLite: BEGIN IMMEDIATE already holds the whole file.
SELECT owner, host, pid, token, acquired_at, renewed_at, expires_at FROM watchdog_lease

-- select_open_incident_events --
-- The watchdog's memory of every incident still open, however long the event log: for each
-- task or schedule whose latest opening or closing page opened an incident, its page and
-- watchdog events from that page on, oldest first (they are replayed in order). A released
-- page (one a silence held, sent later) neither opens nor closes.
WITH marks AS (
    SELECT event_id,
           CASE WHEN json_extract(data, '$.schedule') IS NOT NULL
                THEN 'schedule:' || json_extract(data, '$.schedule') ELSE task_id END AS subject,
           json_extract(data, '$.page') AS page,
           json_extract(data, '$.released') AS released
    FROM events WHERE kind IN ('page', 'watchdog')
),
turns AS (
    SELECT subject, MAX(event_id) AS event_id FROM marks
    WHERE subject IS NOT NULL AND released IS NULL AND page IN ('incident', 'all_clear')
    GROUP BY subject
),
opened AS (
    SELECT t.subject, t.event_id FROM turns t JOIN marks m ON m.event_id = t.event_id
    WHERE m.page = 'incident'
)
SELECT e.event_id, e.at, e.task_id, e.kind, e.actor, e.message, e.data
FROM marks m JOIN opened o ON o.subject = m.subject AND m.event_id >= o.event_id
JOIN events e ON e.event_id = m.event_id
ORDER BY e.event_id

-- select_watchdog_keys --
-- The one-shot reactions (an overrun's page, a kill, a retry limit) the watchdog already took
-- on tasks that have not finished: a restarted watchdog does not take them again.
SELECT DISTINCT json_extract(e.data, '$.key') AS key
FROM tasks t JOIN events e ON e.task_id = t.task_id
WHERE t.state NOT IN ('succeeded', 'failed', 'discarded') AND e.kind IN ('page', 'watchdog')
  AND json_extract(e.data, '$.key') IS NOT NULL

-- select_last_watchdog_digest --
SELECT MAX(at) AS at FROM events
WHERE kind = 'watchdog' AND json_extract(data, '$.digest') IS NOT NULL
