"""docs/reference/metrics.md: every metric family, as the registries export them."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import Metric

from reference_pages.markdown import first_paragraph, header, table
from zombietop.serve import metrics as serve_metrics
from zombietop.serve.metrics import ServeMetrics
from zombietop.tui.testing import NOW, sample_snapshot
from zombietop.watch import metrics as watch_metrics
from zombietop.watch.metrics import TASK_LABELS, Metrics, fleet_families

SUFFIXES = {"counter": "_total", "info": "_info"}
"""What the text format adds to a family's name: the series Prometheus stores."""
JOB_LABELS = ("job",)
"""The label of the job families, which the sample fleet (no finished runs) does not show."""


def render() -> str:
    lines = header(
        "Metrics",
        "core/watch/metrics.py or core/serve/metrics.py",
        "`zombietop watch --metrics HOST:PORT` serves these at `/metrics`, and `zombietop "
        "status --prometheus` prints them once (for node_exporter's textfile collector). "
        "Labels are untrusted text, escaped as the text format requires.",
    )
    lines += [first_paragraph(watch_metrics.__doc__), ""]
    watched = Metrics(channels=("command",))
    families = [*watched.registry.collect(), *fleet_families(sample_snapshot(), NOW)]
    lines += ["## The watchdog and `status --prometheus`", ""]
    lines += _table(families)
    lines += ["## `zombietop serve --metrics`", "", first_paragraph(serve_metrics.__doc__), ""]
    served = ServeMetrics(lambda: 0)
    # A labelled counter shows no series (so no label) before its first count: make one.
    served.pings.labels(ping="start")
    served.answers.labels(status="200")
    lines += _table(served.registry.collect())
    lines += [
        f"Per-task series carry the labels {', '.join(f'`{n}`' for n in TASK_LABELS)} and "
        "exist only while the task is unfinished.",
        "",
    ]
    return "\n".join(lines)


def _table(families: Iterable[Metric]) -> list[str]:
    seen: dict[str, Metric] = {}
    for family in families:
        seen.setdefault(family.name, family)
    return table(
        ["series", "type", "labels", "means"],
        [
            (
                f"`{family.name}{SUFFIXES.get(family.type, '')}`",
                family.type,
                ", ".join(f"`{label}`" for label in _labels(family)),
                family.documentation,
            )
            for family in seen.values()
        ],
    )


def _labels(family: Metric) -> list[str]:
    found = sorted({k for sample in family.samples for k in sample.labels if k != "le"})
    if not found and family.name.startswith("zombietop_job_"):
        return list(JOB_LABELS)
    return found
