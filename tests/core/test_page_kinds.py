"""Page kinds are members of ``PageKind``: no module writes or compares one as a bare string,
and the event log keeps each as the same string it always did."""

from __future__ import annotations

import ast
from pathlib import Path

from zombietop.health import Flag
from zombietop.model import EventKind
from zombietop.page import PageKind
from zombietop.store import Store

REPO = Path(__file__).resolve().parents[2]
WORDS = {str(kind) for kind in PageKind}


def _page_words(tree: ast.AST) -> list[tuple[int, str]]:
    """A page kind's word compared with something about a page (``page == "all_clear"``), or
    stored under the event's ``page`` key (``{"page": "incident"}``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            words = [s for s in sides if isinstance(s, ast.Constant) and s.value in WORDS]
            if words and any(
                "page" in ast.unparse(s).lower() or "kind" in ast.unparse(s).lower() for s in sides
            ):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and key.value == "page"
                    and isinstance(value, ast.Constant)
                    and value.value in WORDS
                ):
                    found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_names_a_page_kind_by_its_word() -> None:
    problems = []
    for folder in ("core", "tui"):
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            where = path.relative_to(REPO)
            problems += [f"{where}:{line} {said}" for line, said in _page_words(tree)]
    assert not problems, "use the member of PageKind (core/page.py):\n" + "\n".join(problems)


def test_every_flag_that_pages_once_has_its_page_kind() -> None:
    for flag in Flag:
        if flag.pages_once:
            assert PageKind.of_flag(flag) == flag.value


async def test_the_event_log_keeps_a_page_kind_as_its_word(store: Store) -> None:
    """Events written before ``PageKind`` hold the same strings: no migration is needed."""
    for kind in PageKind:
        await store.record_event(
            kind=EventKind.PAGE, actor="watchdog", message="m", task_id="t1", data={"page": kind}
        )
    read = [event.data["page"] for event in await store.events(task_id="t1")]
    assert sorted(read) == sorted(str(kind) for kind in PageKind)
    assert all(type(word) is str and PageKind(word) == word for word in read)
