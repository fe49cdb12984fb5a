-- Blocks only the SQLite backend runs (core/store/sqlite.py): the poll's revision and the
-- store's clock anchor.

-- select_revision --
SELECT changes, removals FROM revision WHERE singleton = 1

-- select_clock_anchor --
SELECT wall, boot FROM clock_anchors WHERE boot_id = :boot_id

-- insert_clock_anchor --
-- Two processes of a new boot opening the store at once: the first anchor wins.
INSERT INTO clock_anchors (boot_id, wall, boot) VALUES (:boot_id, :wall, :boot)
ON CONFLICT (boot_id) DO NOTHING

-- prune_clock_anchors --
DELETE FROM clock_anchors WHERE boot_id <> :boot_id AND wall < :wall - 2592000
