-- Retention: pruning finished tasks and reading them page by page.
-- Both backends run these blocks as written (core/store/retention.py); the blocks each writes
-- its own way are in sqlite/retention.sql and postgresql/retention.sql.

-- count_finished_before --
SELECT state, count(*) AS n FROM tasks WHERE finished_at < :before GROUP BY state
