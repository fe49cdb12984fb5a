-- Tasks: create, read, poll, finish, quarantine, resume and discard.
-- The SQLite text of the blocks the two backends write differently (core/store/tasks.py);
-- the blocks they share are in common/tasks.sql.

-- select_tasks_for_poll --
-- Every active task plus those finished since :finished_since, with lease, latest beat and
-- latest kill.
{task_records}
WHERE t.finished_at IS NULL
UNION ALL
{task_records}
WHERE t.finished_at >= :finished_since

-- select_tasks_changed --
-- The tasks stamped after :rev, finished or not (the poll cache decides what it keeps).
{task_records}
WHERE t.rev > :rev

-- select_tasks_again --
-- A poll of a large store reads once more the active tasks that were loud at the one before and
-- are not read now: most have gone quiet, and are seen to recover (see common/tasks.sql).
SELECT {columns}, {quiet} AS quiet
{record_joins}
{quiet_joins}
WHERE t.task_id IN (SELECT value FROM json_each(:ids)) AND t.finished_at IS NULL
