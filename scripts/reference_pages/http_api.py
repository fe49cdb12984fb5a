"""docs/reference/http-api.md: the ping routes of ``zombietop serve``, from its application."""

from __future__ import annotations

from reference_pages.markdown import attribute_docs, first_paragraph, header, table
from zombietop.serve import routes
from zombietop.serve.pings import Ping
from zombietop.tui.web_wall import PREFIX as WALL


def render() -> str:
    lines = header(
        "HTTP ping API",
        "core/serve/routes.py or core/serve/pings.py",
        "`zombietop serve --listen HOST:PORT` answers pings in healthchecks' URL shape, so a "
        "cron job needs nothing but curl. It listens on loopback unless a ping key is "
        "configured (`[serve] ping_key_file` or `$ZOMBIETOP_PING_KEY`).",
    )
    lines += ["## Routes", ""]
    methods = ", ".join(routes.METHODS)
    lines += table(
        ["method", "path", "served"],
        [
            (methods, "`/ping/<key>/<job>`", "always"),
            (methods, "`/ping/<key>/<job>/<action>`", "always"),
            (
                "GET",
                "`/metrics`",
                "with `--metrics`; off loopback it asks for a ping key as "
                "`Authorization: Bearer KEY` (401 without)",
            ),
            (
                "GET",
                f"`{WALL}`",
                "with `--wall` (or `[serve] wall`): the read-only wall in a "
                "browser; off loopback it asks for a wall token",
            ),
        ],
    )
    lines += [first_paragraph(routes.__doc__), ""]
    docs = attribute_docs(Ping)
    actions = {kind: word for word, kind in routes.ACTIONS.items()}
    lines += ["## What a ping says", ""]
    lines += table(
        ["path ends with", "ping", "means"],
        [(_ending(kind, actions), f"`{kind}`", docs.get(kind.name, "")) for kind in Ping],
    )
    lines += ["## Query", ""]
    lines += table(
        ["key", "means"],
        [
            (
                "`rid`",
                "the run id: pings with the same rid belong to one run (a UUID or a "
                "short word of letters, digits, `.`, `_`, `-`)",
            ),
            ("`create=1`", "create the job at its first ping, instead of answering 404"),
            (
                "any other, on `/beat`",
                "a heartbeat field (`?stage=copy&p=40`) when the body holds no heartbeat line",
            ),
        ],
    )
    lines += ["## Answers", ""]
    lines += ["A wrong key is the same 404 as an unknown job, so nothing can be probed.", ""]
    lines += table(
        ["status", "when"],
        [
            (200, "applied: `OK`, or `OK TASK_ID STATE`"),
            (400, "a bad job name, run id or heartbeat line"),
            (404, "a wrong key, an unknown job, or a run that pings did not open (all alike)"),
            (405, "a method other than " + ", ".join(routes.METHODS)),
            (409, "the store refused the ping (the reason is the body)"),
            (413, f"a body over {routes.MAX_BODY_FACTOR} x `[serve] body_limit`"),
            (429, "over `[serve] rate_limit` pings a minute for the job"),
            (
                503,
                f"the store is busy: nothing changed, retry after {routes.RETRY_AFTER} s "
                "(`Retry-After`)",
            ),
        ],
    )
    return "\n".join(lines)


def _ending(kind: Ping, actions: dict[Ping, str]) -> str:
    if kind in actions:
        return f"`/{actions[kind]}`"
    if kind is Ping.SUCCESS:
        return "(nothing)"
    if kind is Ping.EXIT:
        return "`/<0-255>` (0 succeeds, any other fails)"
    return ""
