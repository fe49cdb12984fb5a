"""zombietop's engine: model, config, classifier, store, leases and the monitor.

Nothing in this package imports textual or rich; the dashboard lives in ``tui``.
"""

__version__ = "0.1.0"
