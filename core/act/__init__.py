"""The hands an operator acts with: resume, discard and the graceful kill, through one door.

Every action, from a key of the dashboard, the command line or the watchdog, goes through
``executor`` and ends in one event in the store (``action_events``), a refusal too. An
engine's task is never written to its engine (``source_actions``): its process may be killed,
its engine's own commands are shown to copy.

- ``executor``: the door, which checks the lease token the operator looked at;
- ``graceful_kill``, ``task_processes``: SIGTERM to the task's process groups, SIGKILL after
  the grace, each process's identity checked first;
- ``resume_commands``, ``old_copy``: what a resume runs, after stopping the old copy;
- ``host_requests``: an action on another host, left for that host's agent;
- ``sweep``: every process started for one store, found and stopped (the demo's quit);
- ``source_actions``, ``action_events``: an engine's task, and the record of each outcome.

The words (hold, lease, agent) are defined once in docs/glossary.md.
"""
