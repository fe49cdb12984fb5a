"""``zombietop config init`` and ``config check``: write the default config, or check a file."""

from __future__ import annotations

import argparse
from importlib.util import find_spec
from pathlib import Path

from zombietop.config import load_config, resolve_config_path, write_defaults
from zombietop.printable import printable
from zombietop.tui.cli.context import EXIT_OK, add_command


def cmd_config(args: argparse.Namespace) -> int:
    if args.config_command == "init":
        chosen = args.path or getattr(args, "config", None)
        target = Path(chosen) if chosen else resolve_config_path(None) or _default_config_target()
        write_defaults(target, force=args.force)
        print(f"wrote default config to {target}")
        return EXIT_OK
    path = Path(args.path) if args.path else resolve_config_path(getattr(args, "config", None))
    config = load_config(path)
    if find_spec("rich") is not None:
        # The dashboard's column and sort names; without the dashboard installed, no view shows.
        from zombietop.tui.views import check_views

        check_views(config)
    where = str(path) if path else "built-in defaults (no config file found)"
    print(f"{where}: ok")
    for name, limits in [("defaults", config.defaults), *config.step_types.items()]:
        changed = sorted(k for k, v in limits.sources.items() if v != "default")
        note = f" ({len(changed)} set in file: {', '.join(changed)})" if changed else ""
        print(printable(f"  {name}: valid{note}"))
    return EXIT_OK


def _default_config_target() -> Path:
    from zombietop.config import default_config_path

    return default_config_path()


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    # No store flags: ``zombietop config`` reads no store, only ``--config``.
    del common
    config = add_command(
        sub,
        "config",
        parents=[_config_flag()],
        summary="write or check a config file",
        about="Write the default config (config init) or check a config file (config check). "
        "Without PATH, both use the file zombietop reads: --config, then $ZOMBIETOP_CONFIG, "
        "then ~/.config/zombietop/config.toml.",
        examples=("zombietop config init", "zombietop config check ./config.toml"),
    )
    config_sub = config.add_subparsers(dest="config_command", metavar="init|check", required=True)
    config_init = add_command(
        config_sub,
        "init",
        summary="write the default config to a file",
        about="Write the default config, every key with its default value, to PATH. An "
        "existing file is kept unless you pass --force.",
        examples=("zombietop config init", "zombietop config init ./config.toml --force"),
    )
    config_init.add_argument(
        "path",
        nargs="?",
        help="where (default: --config, $ZOMBIETOP_CONFIG or ~/.config/zombietop/config.toml)",
    )
    config_init.add_argument("--force", action="store_true", help="overwrite an existing file")
    config_check = add_command(
        config_sub,
        "check",
        summary="validate a config file",
        about="Check a config file: every key known, every value valid, every set of "
        "timeouts in order. An error names the file, the section, the keys and the values.",
        examples=("zombietop config check", "zombietop config check ./config.toml"),
    )
    config_check.add_argument(
        "path", nargs="?", help="the file (default: the one zombietop would use)"
    )
    config.set_defaults(handler=cmd_config)


def _config_flag() -> argparse.ArgumentParser:
    """``--config`` alone: ``zombietop config`` reads no store."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="the config file, when PATH is not given "
        "(default: $ZOMBIETOP_CONFIG or ~/.config/zombietop/config.toml)",
    )
    return flags
