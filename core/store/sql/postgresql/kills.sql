-- Kills in flight and the actions asked of a host's agent.
-- The PostgreSQL text of the blocks the two backends write differently (core/store/kills.py);
-- the blocks they share are in common/kills.sql.

-- select_open_kills_for_host --
SELECT {kill_columns} FROM pending_kills k
WHERE k.outcome IS NULL AND k.host IS NOT DISTINCT FROM :host::text
ORDER BY k.deadline, k.kill_id

-- select_source_kills --
-- The latest kill of each read-only source's task, open or finished since :since (the store's
-- clock; NULL: all): a poll joins them to the source's records as the tasks table's join does.
SELECT {kill_columns} FROM pending_kills k
WHERE k.source IS NOT NULL
  AND (k.outcome IS NULL OR CAST(:since AS double precision) IS NULL OR k.finished_at >= :since)
  AND k.kill_id = (SELECT max(kill_id) FROM pending_kills WHERE task_id = k.task_id)

-- select_open_host_requests --
-- Every request not yet carried out, oldest first; :host NULL means every host.
SELECT {request_columns} FROM host_requests
WHERE finished_at IS NULL AND (:host::text IS NULL OR host = :host::text)
ORDER BY request_id

-- claim_host_request --
-- Compare-and-swap: of two agents claiming one request, one wins. A request an earlier agent of
-- the host claimed and never finished (it died) may be claimed again.
UPDATE host_requests SET claimed_by = :agent_id, claimed_at = :now
WHERE request_id = :request_id AND finished_at IS NULL
  AND claimed_by IS DISTINCT FROM :agent_id::text
