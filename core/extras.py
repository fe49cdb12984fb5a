"""The optional parts of zombietop, and how to ask for one that is not installed.

``pip install zombietop`` is the job side: the SDK, ``zombietop run``, ``beat``, ``status``
and the agent, on a SQLite store. The extras in pyproject.toml add the rest: ``[postgres]`` a
PostgreSQL store; ``[all]`` the operator's tools (the dashboard, the demo, paging through
apprise, Prometheus metrics, ``config init``) and PostgreSQL. Code that needs a package of an
extra calls ``require`` before it imports it, so a missing package is one line that says what
to install, never an ImportError.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from zombietop.errors import MissingExtra

DISTRIBUTION = "zombietop"

PACKAGES = {
    "textual": "textual",
    "rich": "rich",
    "apprise": "apprise",
    "prometheus_client": "prometheus-client",
    "aiohttp": "aiohttp",
    "textual_serve": "textual-serve",
    "tomli_w": "tomli-w",
    "asyncpg": "asyncpg",
    "celery": "celery",
    "redis": "redis",
    "packaging": "packaging",
    "rq": "rq",
    "opentelemetry.sdk": "opentelemetry-sdk",
    "opentelemetry.exporter.otlp.proto.http": "opentelemetry-exporter-otlp-proto-http",
}
"""Import name -> the name pip knows it by, for every module an extra brings."""


def require(feature: str, *modules: str, extra: str = "all") -> None:
    """Raise ``MissingExtra`` naming ``extra`` unless every one of ``modules`` is installed.

    ``feature`` starts the message: "the dashboard", "`zombietop watch --metrics`".
    """
    missing = [PACKAGES.get(m, m) for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    names = " and ".join(missing)
    verb = "is" if len(missing) == 1 else "are"
    hint = Install.here().command(extra)
    raise MissingExtra(f"{feature} needs {names}, which {verb} not installed: {hint}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Install:
    """How this copy of zombietop was installed, as far as the environment tells."""

    tool: str
    """``pip``, ``uv`` (``uv pip``), ``pipx`` or ``uv tool``."""
    source: str | None = None
    """The local folder or wheel it came from; None for a package index."""
    editable: bool = False

    @classmethod
    def here(cls, prefix: Path | None = None) -> Install:
        """This environment's install (``prefix``: the environment, ``sys.prefix`` by default).

        pipx and ``uv tool`` leave a file at the top of each environment they make; pip and
        ``uv pip`` write their name in the distribution's INSTALLER file, and where a local
        folder or wheel was installed from in its ``direct_url.json`` (PEP 610).
        """
        # Loaded here, once a missing package is being reported: it costs every command's start.
        from importlib import metadata

        prefix = Path(sys.prefix) if prefix is None else prefix
        try:
            found = metadata.distribution(DISTRIBUTION)
            installer = (found.read_text("INSTALLER") or "").strip()
            direct = json.loads(found.read_text("direct_url.json") or "{}")
        except (metadata.PackageNotFoundError, ValueError):
            installer, direct = "", {}
        if (prefix / "pipx_metadata.json").exists():
            tool = "pipx"
        elif (prefix / "uv-receipt.toml").exists():
            tool = "uv tool"
        else:
            tool = "uv" if installer == "uv" else "pip"
        url = urlsplit(str(direct.get("url", "")))
        if url.scheme != "file":
            return cls(tool=tool)
        dir_info = direct.get("dir_info")
        editable = isinstance(dir_info, dict) and dir_info.get("editable") is True
        return cls(tool=tool, source=unquote(url.path), editable=editable)

    def command(self, extra: str) -> str:
        """The command that installs zombietop again with ``extra``, the way it was installed."""
        target = shlex.quote(f"{self.source or DISTRIBUTION}[{extra}]")
        if self.tool == "pipx":
            return f"pipx install --force {target}"
        if self.tool == "uv tool":
            return f"uv tool install {target}"
        pip = "uv pip" if self.tool == "uv" else "pip"
        return f"{pip} install {'-e ' if self.editable else ''}{target}"
