"""A step type's runbook: ``runbook = "https://wiki/runbooks/{step_type}#{stage}"``, a link
template filled with the task's fields, so a page says what to do, not only what is wrong.

The template is checked once, at the config edge (``zombietop.config.values.check_runbook``):
a placeholder that is not a task field is an error that names it. The filled text is untrusted (a
stage is whatever the job wrote), so it is cleaned as every such text is (``printable.bounded``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zombietop.printable import bounded

if TYPE_CHECKING:
    from zombietop.judge.monitor import TaskView

RUNBOOK_LIMIT = 500
"""The most characters of a filled runbook link."""


def fill(template: str, view: TaskView) -> str:
    """The template with the task's fields put in (an unset one is empty), cleaned."""
    task, beat = view.task, view.heartbeat
    values = {
        "task_id": task.task_id,
        "run_id": task.run_id,
        "step": task.step,
        "step_type": task.step_type,
        "job": task.job_name,
        "stage": beat.stage if beat is not None and beat.stage else "",
        "host": task.host or "",
        "attempt": str(task.attempt),
        "state": str(task.state),
    }
    return bounded(template.format_map(values), limit=RUNBOOK_LIMIT)


def runbook_for(view: TaskView) -> str | None:
    """The task's runbook link, filled, or None when its step type has none."""
    template = view.limits.runbook
    return None if template is None else fill(template, view)
