"""A fixed fake fleet with every health present, at a frozen ``now``, and fakes to show it with.

What the snapshot tests, the screenshots (``scripts/export_screenshots.py``) and
``python -m zombietop.tui.testing`` (the dashboard on the sample fleet) are made of:

- ``builders``: the frozen clock (``NOW``), the host, and small builders of tasks and leases;
- ``fleet``: one task of every health, and what the probe sees (``sample_snapshot``);
- ``oncall``: an ack, a silence and schedules; ``events``: events and a progress history;
- ``hostile``: untrusted text in every field, which must be shown escaped;
- ``fakes``: ``SampleSource``, ``RecordingDesk`` and ``RecordingExecutor``;
- ``workers``: the agents and engine workers the sample fleet runs on.

Nothing here imports Textual: the fleet is core's own types.
"""

from zombietop.tui.testing.builders import (
    BOOT_ID,
    BOOTED,
    HOST,
    NOW,
    H,
    M,
    alive_process,
    make_beat,
    make_lease,
    make_task,
    sample_config,
)
from zombietop.tui.testing.events import sample_events, sample_history
from zombietop.tui.testing.fakes import RecordingDesk, RecordingExecutor, SampleSource
from zombietop.tui.testing.fleet import (
    counted_snapshot,
    every_flag_snapshot,
    sample_records,
    sample_samples,
    sample_snapshot,
    synthetic_records,
)
from zombietop.tui.testing.hostile import (
    CSI_CLEAR,
    HOSTILE_ID,
    OSC,
    UNTRUSTED_ID,
    hostile_events,
    hostile_records,
    hostile_snapshot,
    untrusted_outputs,
    untrusted_snapshot,
)
from zombietop.tui.testing.oncall import SAMPLE_SCHEDULES, sample_oncall, sample_schedules

__all__ = [
    "BOOTED",
    "BOOT_ID",
    "CSI_CLEAR",
    "HOST",
    "HOSTILE_ID",
    "NOW",
    "OSC",
    "SAMPLE_SCHEDULES",
    "UNTRUSTED_ID",
    "H",
    "M",
    "RecordingDesk",
    "RecordingExecutor",
    "SampleSource",
    "alive_process",
    "counted_snapshot",
    "every_flag_snapshot",
    "hostile_events",
    "hostile_records",
    "hostile_snapshot",
    "make_beat",
    "make_lease",
    "make_task",
    "sample_config",
    "sample_events",
    "sample_history",
    "sample_oncall",
    "sample_records",
    "sample_samples",
    "sample_schedules",
    "sample_snapshot",
    "synthetic_records",
    "untrusted_outputs",
    "untrusted_snapshot",
]
