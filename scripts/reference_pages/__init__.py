"""The generated reference pages: one module per page, each with ``render() -> str``.

Adding a page is its module and one line in ``PAGES`` (and its entry in mkdocs.yml's nav).
"""

from __future__ import annotations

from collections.abc import Callable

from reference_pages import cli, config, exit_codes, healths, http_api, metrics, sources

PAGES: dict[str, Callable[[], str]] = {
    "healths": healths.render,
    "config": config.render,
    "cli": cli.render,
    "exit-codes": exit_codes.render,
    "metrics": metrics.render,
    "http-api": http_api.render,
    "sources": sources.render,
}
"""By page name (``docs/reference/NAME.md``), the function that writes it."""
