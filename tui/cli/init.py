"""``zombietop init``: create the store, or upgrade an older one to this version's schema."""

from __future__ import annotations

import argparse

from zombietop.store import open_store
from zombietop.store.sqlite import SCHEMA_VERSION
from zombietop.tui.cli.context import EXIT_OK, add_command, context_of


async def cmd_init(args: argparse.Namespace) -> int:
    ctx = context_of(args)
    async with await open_store(ctx.db, create=True) as store:
        where = store.describe()
    print(f"store ready at {where} (schema v{SCHEMA_VERSION})")
    return EXIT_OK


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    init = add_command(
        sub,
        "init",
        parents=[common],
        summary="create (or upgrade) the store",
        about="Create the store, or upgrade an older one to this version's schema. "
        "`zombietop run` and `zombietop agent` create it too; a PostgreSQL database must exist "
        "first (createdb).",
        examples=(
            "zombietop init",
            "zombietop init --db postgresql://zombietop@db.internal/zombietop",
        ),
    )
    init.set_defaults(handler=cmd_init)
