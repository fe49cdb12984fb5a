"""The issue's "Must show": Airflow's, Celery's and zombietop's own tasks side by side in one
dashboard, from ``zombietop.tui.testing.engines`` at a frozen clock."""

from __future__ import annotations

from tests.tui.helpers import make_app, settle
from zombietop.tui.testing import NOW, SampleSource
from zombietop.tui.testing.engines import engines_snapshot


def test_engines_snapshot_holds_all_three() -> None:
    """Each engine's tasks are in the one snapshot, each with its origin (none for our own)."""
    snapshot = engines_snapshot()
    assert snapshot.taken_at == NOW
    kinds = {v.task.task_id: snapshot.origins.get(v.task.task_id) for v in snapshot.tasks}
    by_kind = sorted({o.kind if o else "zombietop" for o in kinds.values()})
    assert by_kind == ["airflow", "celery", "zombietop"]
    health = {v.task.task_id: v.verdict.health.value for v in snapshot.tasks}
    assert health["reports/reports.render_pdf/c3d8e1f0-6a2b-4c9d-b7e5-0f1a2b3c4d5e"] == "stalled"
    assert health["nightly_etl/transform/scheduled__2026-11-29T04:00:00+00:00"] == "stalled"
    assert health["thumbs-7781"] == "stalled"


def test_engines_dashboard(snap_compare) -> None:
    """Stalled first, one of each engine: Airflow's nightly_etl/transform (heartbeat 15m old),
    zombietop's thumbs-7781, and Celery's reports.render_pdf (unacked 40m, no worker reports
    it); then the queued (Celery's send_receipts reserved behind charge_cards, Airflow's
    publish), the healthy of all three, and zombietop's failed backup-0731."""
    app = make_app(SampleSource([engines_snapshot()]))
    assert snap_compare(app, terminal_size=(160, 30), run_before=settle)
