-- Tasks: create, read, poll, finish, quarantine, resume and discard.
-- The PostgreSQL text of the blocks the two backends write differently (core/store/tasks.py);
-- the blocks they share are in common/tasks.sql.

-- select_tasks_for_poll --
{task_records}
WHERE t.finished_at IS NULL
UNION ALL
{task_records}
WHERE t.finished_at >= :finished_since::double precision
