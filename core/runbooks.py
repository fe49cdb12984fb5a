"""A step type's runbook: ``runbook = "https://wiki/runbooks/{step_type}#{stage}"``, a link
template filled with the task's fields, so a page says what to do, not only what is wrong.

The template is checked once, at the config edge (``check_runbook``): a placeholder that is not
a task field is an error that names it. The filled text is untrusted (a stage is whatever the
job wrote), so it is cleaned as every such text is (``printable.bounded``).
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import TYPE_CHECKING

from zombietop.errors import ConfigError
from zombietop.printable import bounded

if TYPE_CHECKING:
    from zombietop.monitor import TaskView

FIELDS = ("task_id", "run_id", "step", "step_type", "job", "stage", "host", "attempt", "state")
"""The placeholders a runbook may hold: the task's fields, and the stage of its last beat."""
RUNBOOK_LIMIT = 500
"""The most characters of a filled runbook link."""


def placeholders(template: str) -> list[str]:
    """The names of the template's placeholders, in order; ``ValueError`` for a bad brace."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def check_runbook(path: Path | None, section: str, value: object) -> str:
    """Read a ``runbook`` template: a string whose every placeholder is a task field."""
    where = f"{path or 'the config'} [{section}]"
    example = '"https://wiki/runbooks/{step_type}#{stage}"'
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: runbook must be a link template such as {example}")
    try:
        names = placeholders(value)
    except ValueError as exc:
        raise ConfigError(
            f"{where}: runbook = {value!r} is not a template ({exc}); write a literal brace "
            "as {{ or }}"
        ) from None
    for name in names:
        if name not in FIELDS:
            raise ConfigError(
                f"{where}: runbook has the unknown placeholder {{{name}}}; the known ones are "
                + ", ".join(f"{{{field}}}" for field in FIELDS)
            )
    return value


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
