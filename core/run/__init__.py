"""The job side: what runs beside a job and gives it a lease and heartbeats.

``zombietop run -- CMD`` is ``runner``; the SDK (``zombietop.sdk``) and the HTTP pings
(``zombietop.serve``) take leases through the same ``claim``. Nothing here loads the judge,
the watchdog, paging or the face: a job's environment carries only this (an import-linter
contract in pyproject.toml holds it).

- ``runner``: the wrapper, from the lease taken to the exit recorded;
- ``claim``: create the task if needed, check its upstream, take the lease;
- ``job_runs``: a job (a name that runs again and again) and its runs, each a task;
- ``upstream_wait``: ``--after X --wait``, queued behind X until X succeeds;
- ``fail_open`` and ``unwatched``: the command runs even when the store cannot be used;
- ``child``, ``signal_forwarding``: the command started, signalled and reaped;
- ``passthrough``, ``stray_beats``: its output copied through, heartbeat lines it prints kept;
- ``run_exit``: how its end is written, and who stopped it.

The words (lease, heartbeat, run, job) are defined once in docs/glossary.md.
"""
