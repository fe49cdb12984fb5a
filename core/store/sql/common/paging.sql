-- The watchdog's own lease, its undelivered pages and what it remembers.
-- Both backends run these blocks as written (core/store/paging.py); the blocks each writes
-- its own way are in sqlite/paging.sql and postgresql/paging.sql.

-- select_watchdog_lease --
SELECT owner, host, pid, token, acquired_at, renewed_at, expires_at FROM watchdog_lease

-- renew_watchdog_lease --
UPDATE watchdog_lease SET renewed_at = :now, expires_at = :expires_at, host = :host, pid = :pid
WHERE owner = :owner

-- take_watchdog_lease --
-- A standby takes over an expired lease: a new token, so the old holder knows it lost it.
UPDATE watchdog_lease SET owner = :owner, host = :host, pid = :pid, token = token + 1,
    acquired_at = :now, renewed_at = :now, expires_at = :expires_at
WHERE expires_at < :now

-- release_watchdog_lease --
DELETE FROM watchdog_lease WHERE owner = :owner

-- insert_pending_page --
INSERT INTO pending_pages
    (notifier, kind, line, task_id, health, page_at, attempts, next_at, incident, runbook,
     trace_id, trace_url)
VALUES
    (:notifier, :kind, :line, :task_id, :health, :page_at, :attempts, :next_at, :incident, :runbook,
     :trace_id, :trace_url)
RETURNING page_id

-- select_pending_pages --
SELECT page_id, notifier, kind, line, task_id, health, page_at, attempts, next_at, incident,
    runbook, trace_id, trace_url
FROM pending_pages ORDER BY page_id

-- update_pending_page --
UPDATE pending_pages SET attempts = :attempts, next_at = :next_at WHERE page_id = :page_id

-- delete_pending_page --
DELETE FROM pending_pages WHERE page_id = :page_id
