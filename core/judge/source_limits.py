"""The config the judge uses for an engine's tasks: the user's, with each engine's own limits.

A source's step type (Airflow's DAG id) takes ``[step_types.NAME]`` like any other; what the
file leaves at zombietop's built-in defaults, the engine's own defaults fill (``Source.limits``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from zombietop.config import Config
from zombietop.model import Task
from zombietop.sources import Source

SOURCE_QUEUE_TIMEOUT = 1800.0
"""``queue_timeout`` for an engine's tasks where the config leaves it at its default (off for
zombietop's own tasks): an engine's queue is where its tasks get stuck unseen."""


class JudgingConfig:
    """The config the monitor judges with: the user's, plus each source step type's limits.

    A source's step type (Airflow's DAG id) takes ``[step_types.NAME]`` like any other; what
    the file leaves at zombietop's built-in defaults, the engine's own defaults fill.
    """

    def __init__(self) -> None:
        self._base: Config | None = None
        self._made: Config | None = None
        self._types: frozenset[tuple[str, str]] = frozenset()

    def __call__(
        self, config: Config, tasks: Sequence[Task], owners: Mapping[str, Source]
    ) -> Config:
        types = frozenset((owners[t.task_id].name, t.step_type) for t in tasks)
        if self._made is not None and config is self._base and types == self._types:
            return self._made  # the same objects, so verdicts can be kept between polls
        by_name = {source.name: source for source in owners.values()}
        step_types = dict(config.step_types)
        for name, step_type in sorted(types):
            base = replace(config.limits_for(step_type), step_type=step_type)
            if "queue_timeout" not in base.sources:
                sources = {**base.sources, "queue_timeout": "a source's tasks (30m by default)"}
                base = replace(base, queue_timeout=SOURCE_QUEUE_TIMEOUT, sources=sources)
            step_types[step_type] = by_name[name].limits(base)
        self._base, self._types = config, types
        self._made = replace(config, step_types=step_types)
        return self._made
