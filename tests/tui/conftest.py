"""The core tests' real-process fixtures, for the few face tests that drive real processes."""

from tests.core.conftest import children, db, fake_clock, fast_config, fast_config_path, real_store

__all__ = ["children", "db", "fake_clock", "fast_config", "fast_config_path", "real_store"]
