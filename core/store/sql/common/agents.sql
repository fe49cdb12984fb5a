-- The agents of a fleet, one per host.
-- Both backends run these blocks as written (core/store/agents.py), and need no others.

-- upsert_agent --
-- An agent's beat: seen_at is the store's clock (the server's, on PostgreSQL), reported_at the
-- agent host's; their difference is that host's clock skew.
INSERT INTO agents (host, agent_id, pid, interval_s, started_at, seen_at, reported_at, stopped_at)
VALUES (:host, :agent_id, :pid, :interval_s, :now, :now, :reported_at, NULL)
ON CONFLICT (host) DO UPDATE SET
    started_at = CASE WHEN agents.agent_id = excluded.agent_id AND agents.stopped_at IS NULL
                      THEN agents.started_at ELSE excluded.started_at END,
    agent_id = excluded.agent_id, pid = excluded.pid, interval_s = excluded.interval_s,
    seen_at = excluded.seen_at, reported_at = excluded.reported_at, stopped_at = NULL
-- The beat's own row: reading every agent back would cost each beat the whole fleet.
RETURNING host, agent_id, pid, interval_s, started_at, seen_at, reported_at, stopped_at

-- stop_agent --
UPDATE agents SET stopped_at = :now WHERE host = :host AND agent_id = :agent_id

-- select_agents --
SELECT host, agent_id, pid, interval_s, started_at, seen_at, reported_at, stopped_at
FROM agents ORDER BY host

-- select_active_tasks_on_host --
-- The unfinished, and those finished at or after :finished_since (NULL: none), whose process
-- the agent still looks at to find the orphans.
SELECT {task_columns} FROM tasks
WHERE pid IS NOT NULL AND host = :host
  AND (finished_at IS NULL OR finished_at >= :finished_since)
