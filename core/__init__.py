"""zombietop's engine: the vocabulary at the top, and the rest in wings by subsystem.

The wings: ``run`` (the job side), ``judge`` (poll, probe, verdicts), ``act`` (resume, discard,
kill), ``watch`` (the watchdog), ``paging``, ``oncall``; beside them ``config``, ``store``,
``sources`` (engines, read-only) and ``serve`` (HTTP pings). At the top: the vocabulary every
wing speaks (``model``, ``health``, ``page``, ``errors``, ``clock``, ``printable``, ...), the
job's API (``sdk``, ``heartbeat_line``) and the daemons' edges (``agent``, ``http_server``).
docs/architecture.md draws them; docs/modules.md lists every module.

Installed as ``zombietop`` (the folder is ``core/``); the dashboard and the command line are
``zombietop.tui``. Nothing in the engine imports textual or rich, so a job's own environment
can ``pip install zombietop`` and ``from zombietop import Job`` without loading a screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

if TYPE_CHECKING:
    from zombietop.sdk import Job

__all__ = ["Job", "__version__"]


def __getattr__(name: str) -> Any:
    """``Job`` is loaded when first asked for: a command that never runs a job (``status``)
    does not pay for the SDK's imports (the store, the claim, the config) at start-up."""
    if name == "Job":
        from zombietop.sdk import Job

        return Job
    raise AttributeError(f"module 'zombietop' has no attribute {name!r}")
