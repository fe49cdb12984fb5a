"""The judge: what the store and the processes say, turned into one verdict per task.

A poll of the store and a probe of the processes, judged: ``monitor`` is the one async facade
the faces use, ``classify`` gives each task its verdict (a pure function of what was read and
of ``now``), ``snapshot`` gathers the verdicts of one poll as the faces see them. The judge
reads and decides; it never acts, watches or pages (an import-linter contract holds it).

- ``monitor``, ``reuse``: a poll, and its fast path that judges only what changed;
- ``classify``, ``verdict``: the rules, and what a verdict holds with its page line;
- ``budgets``: the layered timeouts measured (request < stage < task);
- ``history_judge``, ``job_book``: a run against its job's history;
- ``orphan_watch``: the finished tasks whose processes are still looked at;
- ``schedules``, ``oncall_reader``: schedules judged, acks and silences in force;
- ``source_limits``: the limits an engine's tasks are judged by;
- ``snapshot``: the views of one poll.

The words (verdict, look, source, incident) are defined once in docs/glossary.md.
"""
