-- Jobs: each job's summary, folded in as its runs end, and a job's runs for `history`.
-- Both backends run these blocks as written (core/store/jobs.py).

-- select_job_summary --
SELECT job, runs, succeeded, last_outcome, last_finished_at, last_success_at, durations,
       ends, updated_at
FROM jobs WHERE job = :job

-- upsert_job_summary --
INSERT INTO jobs (job, runs, succeeded, last_outcome, last_finished_at, last_success_at,
                  durations, ends, updated_at)
VALUES (:job, :runs, :succeeded, :last_outcome, :last_finished_at, :last_success_at,
        :durations, :ends, :updated_at)
ON CONFLICT (job) DO UPDATE SET runs = excluded.runs, succeeded = excluded.succeeded,
    last_outcome = excluded.last_outcome, last_finished_at = excluded.last_finished_at,
    last_success_at = excluded.last_success_at, durations = excluded.durations,
    ends = excluded.ends, updated_at = excluded.updated_at

-- select_job_summaries --
-- Every job's summary: a reader's first read.
SELECT job, runs, succeeded, last_outcome, last_finished_at, last_success_at, durations,
       ends, updated_at
FROM jobs

-- select_job_summaries_since --
-- The summaries changed at or after :after (the reader's last read): only the jobs whose runs
-- ended since, found by the jobs_updated index.
SELECT job, runs, succeeded, last_outcome, last_finished_at, last_success_at, durations,
       ends, updated_at
FROM jobs WHERE updated_at >= :after

-- select_job_runs --
-- A job's latest runs, newest first (by the tasks_job_runs index).
SELECT {task_columns} FROM tasks WHERE job = :job
ORDER BY run_number DESC LIMIT :limit

-- select_failed_latest_runs --
-- The runs that failed before :before (the finished window's start) and are still the latest
-- of their job to end: `status` stays CRITICAL for them. One row per job at most, found from
-- the jobs table and the tasks_job_finished index, never by a scan of the finished runs.
{task_records}
JOIN jobs j ON j.job = t.job AND j.last_outcome = 'failed' AND j.last_finished_at = t.finished_at
WHERE t.state = 'failed' AND t.finished_at < :before
ORDER BY t.finished_at DESC, t.task_id DESC

-- select_latest_ended_runs --
-- The latest :per_job runs of each job that have ended (:skip is :per_job - 1), for the jobs
-- changed at or after :after: the jobs view's trend (`zombietop jobs`). Led by the jobs table,
-- one walk back the tasks_job_runs index (job, run_number) per job, never a scan of every run;
-- only the columns a run's outcome and duration need.
SELECT t.task_id, t.run_id, t.step, t.step_type, t.state, t.created_at, t.claimed_at,
       t.started_at, t.finished_at, t.updated_at, t.job, t.run_number
FROM jobs j
JOIN tasks t ON t.job = j.job AND t.run_number >= COALESCE((
    SELECT e.run_number FROM tasks e
    WHERE e.job = j.job AND e.finished_at IS NOT NULL
    ORDER BY e.run_number DESC LIMIT 1 OFFSET :skip), 0)
WHERE j.updated_at >= :after AND t.finished_at IS NOT NULL
