"""The watchdog's book of open incidents: which are open, what was said, what was done once.

Its memory is the event log, so a watchdog that restarts, or runs from cron (``--once``),
pages once per incident too. ``restore`` reads it back through one store query per concern
(every open incident, the one-shot reactions on unfinished tasks), never the newest N events:
a busy log must not make an old open incident look new.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from zombietop.errors import StoreError
from zombietop.model import Health
from zombietop.oncall import Notices
from zombietop.store import Store

SCHEDULE_KEY = "schedule:"
"""An open schedule incident's key in ``Notices``: the prefix, then the schedule's name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Incident:
    task_id: str
    health: Health
    opened_at: float


def notice_key(task_id: str | None, data: Mapping[str, Any]) -> str | None:
    """The ``Notices`` key of a page event: its schedule's, else its task's."""
    schedule = data.get("schedule")
    if isinstance(schedule, str):
        return SCHEDULE_KEY + schedule
    return task_id


class IncidentBook:
    """Open incidents (tasks and schedules), their notices, and the one-shot keys taken."""

    def __init__(self) -> None:
        self.incidents: dict[str, Incident] = {}
        self.notices = Notices()
        """Pages sent per open incident (tasks and schedules), for re-notify and silences."""
        self.once: set[str] = set()
        """Keys of one-shot reactions already taken (overrun pages, kills, logs)."""
        self.last_digest_at: float | None = None

    async def restore(self, store: Store, log: Callable[[str], None]) -> None:
        """Rebuild the book from the store's event log, in place."""
        self.incidents.clear()
        self.once.clear()
        self.notices.clear()
        try:
            memory = await store.watchdog_memory()
        except StoreError as exc:
            log(f"cannot read past incidents ({exc}); starting with none")
            return
        self.once.update(memory.keys)
        self.last_digest_at = memory.last_digest_at
        for event in memory.open_events:
            page = event.data.get("page")
            key = notice_key(event.task_id, event.data)
            if key is not None:
                self.notices.remember(key, event.data, event.at)
            if page == "incident" and event.task_id and not event.data.get("released"):
                self.incidents[event.task_id] = Incident(
                    task_id=event.task_id, health=Health(event.data["health"]), opened_at=event.at
                )
            if isinstance(event.data.get("key"), str):
                self.once.add(event.data["key"])
