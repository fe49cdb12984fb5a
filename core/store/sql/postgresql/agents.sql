-- The agents of a fleet: the PostgreSQL text of an agent's whole tick (core/store/postgres.py);
-- the blocks both backends run are in common/agents.sql.

-- agent_round --
-- upsert_agent, upsert_process_sample for each sample and prune_own_samples (common/*.sql) as
-- one statement: one trip to the server and one implicit transaction per host's tick, where
-- the three in an explicit transaction take six. Each task is in the batch once (the samples
-- are keyed by task id): ON CONFLICT may touch a row only once. The parts of one statement all
-- see the table as it was before it, so the prune names the tasks kept instead of comparing
-- written_at: it never touches a row the insert writes.
WITH clock AS (
    SELECT COALESCE(:pinned::double precision,
                    extract(epoch FROM clock_timestamp())::double precision) AS now
),
agent AS (
    INSERT INTO agents (host, agent_id, pid, interval_s, started_at, seen_at, reported_at,
                        stopped_at)
    SELECT :host::text, :agent_id::text, :agent_pid::integer, :interval_s::double precision,
           clock.now, clock.now, :reported_at::double precision, NULL
    FROM clock
    ON CONFLICT (host) DO UPDATE SET
        started_at = CASE WHEN agents.agent_id = excluded.agent_id AND agents.stopped_at IS NULL
                          THEN agents.started_at ELSE excluded.started_at END,
        agent_id = excluded.agent_id, pid = excluded.pid, interval_s = excluded.interval_s,
        seen_at = excluded.seen_at, reported_at = excluded.reported_at, stopped_at = NULL
    RETURNING host, agent_id, pid, interval_s, started_at, seen_at, reported_at, stopped_at
),
written AS (
    INSERT INTO process_samples (task_id, host, pid, alive, identity_ok, status, cpu_percent,
                                 rss_bytes, threads, io_idle_s, idle_s, children, create_time,
                                 sampled_at, written_at, source, after_finish)
    SELECT s.task_id, :host::text, s.pid, s.alive, s.identity_ok, s.status, s.cpu_percent,
           s.rss_bytes, s.threads, s.io_idle_s, s.idle_s, s.children, s.create_time,
           s.sampled_at, clock.now, NULL, s.after_finish
    FROM clock, unnest(:task_id::text[], :pid::integer[], :alive::boolean[],
                       :identity_ok::boolean[], :status::text[],
                       :cpu_percent::double precision[], :rss_bytes::bigint[],
                       :threads::integer[], :io_idle_s::double precision[],
                       :idle_s::double precision[], :children::integer[],
                       :create_time::double precision[], :sampled_at::double precision[],
                       :after_finish::boolean[])
        AS s (task_id, pid, alive, identity_ok, status, cpu_percent, rss_bytes, threads,
              io_idle_s, idle_s, children, create_time, sampled_at, after_finish)
    ON CONFLICT (task_id) DO UPDATE SET
        host = excluded.host, source = excluded.source, pid = excluded.pid,
        alive = excluded.alive, identity_ok = excluded.identity_ok, status = excluded.status,
        cpu_percent = excluded.cpu_percent, rss_bytes = excluded.rss_bytes,
        threads = excluded.threads, io_idle_s = excluded.io_idle_s, idle_s = excluded.idle_s,
        children = excluded.children, create_time = excluded.create_time,
        sampled_at = excluded.sampled_at, written_at = excluded.written_at,
        after_finish = excluded.after_finish
),
pruned AS (
    DELETE FROM process_samples
    WHERE host = :host::text AND source IS NULL AND task_id <> ALL (:task_id::text[])
)
SELECT * FROM agent
