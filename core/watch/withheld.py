"""Looks whose verdicts are withheld: said once when the stretch starts, once when it ends.

For the word look, see docs/glossary.md. A look's verdicts are withheld (nothing is quarantined,
killed or paged on them) while the store cannot be read or lags, while a clock cannot be
trusted, or while another watchdog is the active one.
"""

from __future__ import annotations

from zombietop.durations import format_age


class WithheldStretch:
    """Turn each look's reason to withhold (or None) into news: the start, and the end."""

    def __init__(self) -> None:
        self._since: float | None = None
        self._looks = 0

    @property
    def open(self) -> bool:
        return self._since is not None

    def look(self, reason: str | None, at: float, *, told: bool = False) -> str | None:
        """Take one look's reason at monotonic time ``at``; return a line when there is news.

        ``told``: the reason was said already (a clock's news is said as it comes).
        """
        if reason is not None:
            self._looks += 1
            if self._since is None:
                self._since = at
                return None if told else f"verdicts withheld: {reason}"
            return None
        if self._since is None:
            return None
        took, looks = at - self._since, self._looks
        self._since, self._looks = None, 0
        return f"verdicts acted on again, after {format_age(took)} withheld ({looks} looks)"
