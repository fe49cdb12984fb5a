"""Map the repository's folders onto one import namespace; pyproject.toml holds everything else.

``core/`` installs as ``zombietop`` and ``tui/`` as ``zombietop.tui``. Every folder under
either is found here, so a new one cannot be left out of the wheel: a folder of Python modules is
a sub-package, and a folder of data (``core/store/sql/``, ``core/sources/sql/``) a namespace
package whose files pyproject.toml's package-data names.
"""

from setuptools import find_namespace_packages, setup

FOLDERS = {"zombietop": "core", "zombietop.tui": "tui"}


def packages() -> list[str]:
    found = []
    for name, folder in FOLDERS.items():
        found.append(name)
        subs = find_namespace_packages(folder, exclude=["__pycache__", "*.__pycache__"])
        found.extend(f"{name}.{sub}" for sub in subs)
    return found


setup(package_dir=FOLDERS, packages=packages())
