"""docs/reference/exit-codes.md: what each command exits with, from the constants that say it."""

from __future__ import annotations

from reference_pages.markdown import attribute_docs, code, header, table
from zombietop.health import NagiosLevel
from zombietop.run.unwatched import EXIT_CANNOT_START
from zombietop.sdk import EXIT_SIGTERM
from zombietop.tui.cli.context import EXIT_ERROR, EXIT_NOT_DONE, EXIT_OK, EXIT_UNKNOWN
from zombietop.tui.cli.main import EXIT_EPILOG, EXIT_PIPE


def render() -> str:
    lines = header(
        "Exit codes",
        "tui/cli/main.py, tui/cli/context.py or core/health.py",
        "What `zombietop --help` says of them:",
    )
    lines += code(EXIT_EPILOG.split("\n\n")[0])
    lines += ["## Every command", ""]
    lines += table(
        ["code", "means"],
        [
            (EXIT_OK, "done, or nothing to do"),
            (
                EXIT_NOT_DONE,
                "`resume`, `discard`, `kill`: the action was not done (refused, "
                "not confirmed, or left for another host's agent)",
            ),
            (EXIT_ERROR, "a usage error or a failure; the reason is one line on stderr"),
            (130, "stopped by ctrl+c"),
            (EXIT_PIPE, "the reader of stdout closed it early (`| head -1`), as for `cat`"),
        ],
    )
    docs = attribute_docs(NagiosLevel)
    lines += ["## `zombietop status`", ""]
    lines += [
        "`status` follows the Nagios plugin API: it exits with the worst level it finds "
        f"(a usage error of `status` is {EXIT_UNKNOWN}, UNKNOWN).",
        "",
    ]
    lines += table(
        ["code", "level", "means"], [(lvl.value, lvl.name, docs[lvl.name]) for lvl in NagiosLevel]
    )
    lines += ["## `zombietop run`", ""]
    lines += table(
        ["code", "means"],
        [
            ("the command's", "the command ran: `run` exits with its status"),
            (EXIT_CANNOT_START, "the command could not be started (not found, not executable)"),
            (
                EXIT_ERROR,
                "`run` refused before starting the command (the lease or the "
                "upstream could not be had and the run requires them)",
            ),
        ],
    )
    lines += ["## A job using the SDK", ""]
    lines += table(
        ["code", "means"],
        [(EXIT_SIGTERM, "stopped by SIGTERM: the task is marked `interrupted`")],
    )
    return "\n".join(lines)
