"""The dashboard: what ``zombietop`` opens when no command is given."""

from __future__ import annotations

import argparse

from zombietop.extras import require
from zombietop.tui.cli.context import context_of


async def cmd_dashboard(args: argparse.Namespace) -> int:
    require("the dashboard", "textual", "rich")
    from zombietop.tui.launch import launch_dashboard
    from zombietop.tui.views import check_views, view_named

    ctx = context_of(args)
    # A view that names nothing valid is refused now, before the screen opens.
    check_views(ctx.config)
    where = str(ctx.config.path or "the built-in defaults")
    view = None if args.view is None else view_named(ctx.config.views, args.view, where)
    return await launch_dashboard(
        ctx.config,
        ctx.db,
        read_only=args.read_only,
        wall=args.wall,
        refresh=args.refresh,
        sources=ctx.sources,
        mouse=not args.no_mouse,
        view=view,
    )


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Give the top-level parser the dashboard's flags, and the dashboard as its command."""
    # With no subcommand, zombietop is the dashboard.
    parser.add_argument(
        "--read-only", action="store_true", help="dashboard: open the store read-only, no actions"
    )
    parser.add_argument(
        "--wall", action="store_true", help="dashboard: wall screen (read-only, large counts)"
    )
    parser.add_argument(
        "--refresh", type=float, metavar="SECONDS", help="dashboard: seconds between polls"
    )
    parser.add_argument(
        "--no-mouse",
        action="store_true",
        help="dashboard: leave the mouse to the terminal, to select and copy text "
        "(also [monitor] mouse = false)",
    )
    parser.add_argument(
        "--view",
        metavar="NAME",
        help="dashboard: start in the saved view [views.NAME] of the config (with --wall too)",
    )
    parser.set_defaults(handler=cmd_dashboard)
