"""What on-call reads beside the tasks at every poll: the acks and silences in force, and every
schedule judged, with the moment each schedule was first seen (which the store remembers)."""

from __future__ import annotations

from collections.abc import Mapping

from zombietop.config import Config, Schedule
from zombietop.errors import StoreError
from zombietop.judge.schedules import ScheduleView, judge, order
from zombietop.oncall.acks import OnCall, current
from zombietop.store import Store


class OnCallReader:
    """Read the acks, silences and schedules for one monitor, and remember when it first saw
    each schedule."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._seen: dict[tuple[str, str, str, str], float] = {}
        """When each schedule (name, step, cron, zone) was first seen, once the store said."""

    async def read(
        self, now: float, config: Config, owners: Mapping[str, str] | None = None
    ) -> tuple[OnCall, tuple[ScheduleView, ...]]:
        """The acks and silences in force (each silence capped by this reader's max_silence,
        each ack on the task of its own source: ``owners``, see ``acks.current``), and every
        schedule judged, as of ``now``."""
        oncall = current(
            now,
            await self.store.acks(),
            await self.store.silences(),
            max_silence=config.oncall.max_silence,
            owners=owners,
        )
        views = [
            judge(
                now,
                schedule,
                await self.store.step_runs(schedule.step, job=schedule.job),
                first_seen=await self._first_seen(schedule, now, config.written_at),
            )
            for schedule in config.schedules
        ]
        return oncall, order(views)

    async def _first_seen(self, schedule: Schedule, now: float, written: float | None) -> float:
        """When the schedule was first seen, as the store remembers it.

        The first reader that can write records the time (``written``, the config file's
        mtime: the schedule was in the file since then); a read-only one that finds no record
        uses that time itself, without keeping it, so the record of a later writer wins.
        """
        name, step, cron, tz = key = (schedule.name, schedule.step, schedule.cron, schedule.tz)
        known = self._seen.get(key)
        if known is not None:
            return known
        since = now if written is None else min(now, written)
        stored = None
        if not self.store.read_only:
            try:
                stored = await self.store.see_schedule(
                    name=name, step=step, cron=cron, tz=tz, at=since
                )
            except StoreError:
                pass  # a full disk: read what is there, and try writing again next poll
        if stored is None:
            stored = await self.store.schedule_seen(name=name, step=step, cron=cron, tz=tz)
        if stored is None:
            return since
        self._seen[key] = stored
        return stored
