"""The reference pages (docs/reference/*.md) are what the code says now, and name everything.

The pages are written by scripts/reference_docs.py. When a test here fails because a page is
stale, run `python scripts/reference_docs.py` and commit the pages; when one fails because a
page misses a health, a key or a command, the page module under scripts/reference_pages/ must
learn about it.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from zombietop.config import SECTIONS, ConfigError, load_config
from zombietop.health import Flag, Health, ScheduleHealth
from zombietop.serve.metrics import ServeMetrics
from zombietop.sources.registry import ENGINES, engines
from zombietop.tui.cli.main import COMMANDS, build_parser
from zombietop.tui.testing import NOW, sample_snapshot
from zombietop.watch.metrics import Metrics, fleet_families

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "reference_docs.py"
REFERENCE = REPO / "docs" / "reference"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page(name: str) -> str:
    return (REFERENCE / f"{name}.md").read_text(encoding="utf-8")


def test_every_page_is_what_the_code_says_now() -> None:
    stale = generator().stale_pages()
    assert not stale, f"stale: {stale}; run python scripts/reference_docs.py"


def test_check_names_a_page_changed_by_hand(tmp_path: Path) -> None:
    reference = generator()
    written = reference.write_pages(tmp_path)
    assert reference.stale_pages(tmp_path) == []
    written[0].write_text(written[0].read_text(encoding="utf-8") + "edited by hand\n")
    written[-1].unlink()
    assert reference.stale_pages(tmp_path) == [str(written[0]), str(written[-1])]


def test_check_exits_0_on_fresh_pages() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_every_health_flag_and_schedule_word_has_its_row() -> None:
    text = page("healths")
    words = [*Health, *Flag, *ScheduleHealth]
    missing = [str(word) for word in words if f"| `{word}` |" not in text]
    assert not missing


def known_keys(toml: str, folder: Path) -> list[str]:
    """The keys the loader knows where ``toml`` puts an unknown one, from its own error."""
    path = folder / "config.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError, match="known keys: ") as caught:
        load_config(path)
    return str(caught.value).split("known keys: ", 1)[1].split(", ")


PROBES = {
    "thresholds": "[thresholds]\nzz = 1\n",
    "timeouts": "[timeouts]\nzz = 1\n",
    "history": "[history]\nzz = 1\n",
    "step_types.NAME": "[step_types.x]\nzz = 1\n",
    "store": "[store]\nzz = 1\n",
    "monitor": "[monitor]\nzz = 1\n",
    "watch": "[watch]\nzz = 1\n",
    "oncall": "[oncall]\nzz = 1\n",
    "schedules.NAME": "[schedules.x]\nzz = 1\n",
    "notify": "[notify]\nzz = 1\n",
    "notify.pagerduty": '[notify.pagerduty]\nzz = "a"\n',
    "agent": "[agent]\nzz = 1\n",
    "[sources]": '[[sources]]\nzz = "a"\n',
    "serve": "[serve]\nzz = 1\n",
    "views.NAME": "[views.x]\nzz = 1\n",
    "otel": "[otel]\nzz = 1\n",
}
"""A config with an unknown key in each section: the loader's refusal lists the known ones."""


def section_keys(text: str, name: str) -> set[str]:
    """The keys in the table under the heading of section ``name``."""
    body = text.split(f"## `[{name}]`\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", body, flags=re.MULTILINE))


def test_every_section_the_loader_knows_is_probed(tmp_path: Path) -> None:
    assert known_keys("zz = 1\n", tmp_path) == sorted(SECTIONS)
    assert {name.strip("[]").split(".")[0] for name in PROBES} == set(SECTIONS)


@pytest.mark.parametrize("section", list(PROBES))
def test_every_config_key_has_its_row(section: str, tmp_path: Path) -> None:
    text = page("config")
    documented = section_keys(text, section)
    if section == "step_types.NAME":
        # A step type takes every key of these sections too; the page says so once.
        for shared in ("thresholds", "timeouts", "history"):
            documented |= section_keys(text, shared)
    missing = set(known_keys(PROBES[section], tmp_path)) - documented
    assert not missing, f"[{section}] keys missing from docs/reference/config.md: {missing}"


def subcommands(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += [prefix + name, *subcommands(sub, f"{prefix}{name} ")]
    return found


def test_every_command_and_flag_has_its_section() -> None:
    text = page("cli")
    names = subcommands(build_parser())
    assert {name for names in COMMANDS.values() for name in names} <= set(names)
    assert not [name for name in names if f"## `zombietop {name}`" not in text]
    flags = {
        option
        for parser in [build_parser(), *build_parser().commands.choices.values()]
        for action in parser._actions
        for option in action.option_strings
    }
    assert not [flag for flag in sorted(flags) if flag not in text]


def test_every_metric_has_its_row() -> None:
    text = page("metrics")
    families = [
        *Metrics(channels=("command",)).registry.collect(),
        *fleet_families(sample_snapshot(), NOW),
        *ServeMetrics(lambda: 0).registry.collect(),
    ]
    assert len(families) > 10
    assert not [f.name for f in families if f"| `{f.name}" not in text]


def test_every_engine_and_ping_route_is_named() -> None:
    sources = page("sources")
    assert not [kind for kind in ENGINES if f"| `{kind}` |" not in sources]
    assert not [form for e in engines() for form in e.forms if f"`{form}`" not in sources]
    api = page("http-api")
    for ending in ("/start", "/fail", "/log", "/beat", "/<0-255>", "/metrics", "/wall"):
        assert f"`{ending}" in api
