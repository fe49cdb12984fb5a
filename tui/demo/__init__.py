"""``zombietop demo``: real jobs that show every kind of zombie within a minute, a watchdog
paging to a file, and the dashboard on top.

- ``command``: the demo itself: its store, config and jobs started, and everything stopped when
  the dashboard quits;
- ``jobs``: the worker each demo job runs (``python -m zombietop.tui.demo.jobs KIND``).
"""
