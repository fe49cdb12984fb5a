-- Kills in flight and the actions asked of a host's agent.
-- Both backends run these blocks as written (core/store/kills.py); the blocks each writes
-- its own way are in sqlite/kills.sql and postgresql/kills.sql.

-- select_open_kill --
SELECT {kill_columns} FROM pending_kills k WHERE k.task_id = :task_id AND k.outcome IS NULL

-- insert_pending_kill --
INSERT INTO pending_kills (task_id, pid, pid_start_time, pid_boot_id, pid_start_ticks, pgid, host,
                           requested_by, term_sent_at, deadline, source)
VALUES (:task_id, :pid, :pid_start_time, :pid_boot_id, :pid_start_ticks, :pgid, :host,
        :requested_by, :now, :deadline, :source)

-- close_pending_kill --
-- Compare-and-swap on the open row: of two zombietops racing to finish a kill, one wins.
UPDATE pending_kills SET outcome = :outcome, finished_at = :now
WHERE task_id = :task_id AND outcome IS NULL

-- insert_host_request --
INSERT INTO host_requests (task_id, host, kind, expected_token, actor, reason, requested_at,
                           requester_uid, requester, source)
VALUES (:task_id, :host, :kind, :expected_token, :actor, :reason, :now, :requester_uid, :requester,
        :source)
RETURNING request_id

-- select_host_request --
SELECT {request_columns} FROM host_requests WHERE request_id = :request_id

-- finish_host_request --
UPDATE host_requests SET outcome = :outcome, message = :message, finished_at = :now
WHERE request_id = :request_id AND finished_at IS NULL
