"""Map the repository's folders onto one import namespace; pyproject.toml holds everything else.

``core/`` installs as ``zombietop`` and ``tui/`` as ``zombietop.tui``. Every sub-package under
either is found here, so a new one cannot be left out of the wheel.
"""

from setuptools import find_packages, setup

FOLDERS = {"zombietop": "core", "zombietop.tui": "tui"}


def packages() -> list[str]:
    found = []
    for name, folder in FOLDERS.items():
        found.append(name)
        found.extend(f"{name}.{sub}" for sub in find_packages(folder))
    return found


setup(package_dir=FOLDERS, packages=packages())
