"""zombietop's engine: model, config, classifier, store, leases, the monitor and the job SDK.

Installed as ``zombietop`` (the folder is ``core/``); the dashboard and the command line are
``zombietop.tui``. Nothing in the engine imports textual or rich, so a job's own environment
can ``pip install zombietop`` and ``from zombietop import Job`` without loading a screen.
"""

__version__ = "0.2.0"

from zombietop.sdk import Job

__all__ = ["Job", "__version__"]
