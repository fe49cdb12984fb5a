"""docs/glossary.md defines the project's own words once: no module docstring defines one of
them again, and every file the glossary names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from zombietop.health import Health

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = REPO / "docs" / "glossary.md"


def glossary_words() -> list[str]:
    return re.findall(r"^### (.+)$", GLOSSARY.read_text(encoding="utf-8"), flags=re.M)


def definitions(docstring: str, word: str) -> list[str]:
    """The places where ``docstring`` defines ``word``: a sentence that opens "A look is ..."
    or "A *look* is ...", or the word followed by its definition in brackets ("each look of
    the watchdog (one poll ...")."""
    text = " ".join(docstring.split())
    name = rf"[*`]*{re.escape(word)}[*`]*"
    patterns = [
        rf"(?:^|[.:] )(?:a|an)\s+{name}\s+(?:is|are|means)\b",
        rf"\b{name}(?:\s+of\s+the\s+watchdog)?\s+\(one\s",
    ]
    return [m.group(0) for p in patterns for m in re.finditer(p, text, flags=re.I)]


def test_the_glossary_has_the_words_the_code_kept_defining() -> None:
    words = glossary_words()
    for word in ("look", "face", "wall", "hands", "book", "incident", "notice", "hold", "verdict"):
        assert word in words
    assert words == sorted(words), "keep the glossary in alphabetical order"


def test_no_module_docstring_defines_a_glossary_word_again() -> None:
    words = glossary_words()
    problems = []
    for folder in ("core", "tui"):
        for path in sorted((REPO / folder).rglob("*.py")):
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            for word in words:
                for said in definitions(docstring, word):
                    problems.append(f"{path.relative_to(REPO)}: {said!r}")
    assert not problems, (
        "these module docstrings define a word of docs/glossary.md again; say "
        '"see docs/glossary.md" instead:\n' + "\n".join(problems)
    )


def test_the_definition_finder_finds_the_ways_a_word_was_defined() -> None:
    assert definitions("A look is one round of the watchdog.", "look")
    assert definitions("A *look* is one round of the watchdog.", "look")
    assert definitions("at each look of the watchdog (one poll of the store)", "look")
    assert not definitions("The hold is written only if the task has not beaten.", "hold")
    assert not definitions("Adding an engine is its module and one line here.", "engine")
    assert not definitions("One look of the watchdog: see docs/glossary.md.", "look")


def test_every_file_the_glossary_names_exists() -> None:
    text = GLOSSARY.read_text(encoding="utf-8")
    named = re.findall(r"`((?:core|tui|tests|docs|scripts)/[^`\s]*)`", text)
    assert named, "the glossary names no file: the pattern no longer finds them"
    missing = [name for name in named if not (REPO / name).exists()]
    assert not missing, f"docs/glossary.md names files that do not exist: {missing}"


def test_the_readme_opens_with_every_health_that_pages() -> None:
    first = (REPO / "README.md").read_text(encoding="utf-8").split("\n\n")[1]
    for health in Health:
        if health.pages:
            assert f"`{health}`" in first, f"the README's first paragraph leaves out {health}"
