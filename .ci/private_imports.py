"""An import-linter contract type: only the allowed modules import a package's private modules.

import-linter's own contracts name modules whole (a wildcard replaces a whole name, so
``textual._*`` is refused), and a package's private modules are every module with a name part
that starts with ``_``. Registered in pyproject.toml as ``private_modules``; lint-imports finds
this file on PYTHONPATH (tests/test_tooling.py puts .ci/ there).
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


def is_private(module: str) -> bool:
    """True when a part of the dotted name after the first starts with one underscore."""
    return any(part.startswith("_") and not part.startswith("__") for part in module.split(".")[1:])


class PrivateModulesContract(Contract):
    """Modules of ``source_package`` import private modules of ``private_of`` only from
    ``allowed_modules``."""

    source_package = fields.StringField()
    private_of = fields.StringField()
    allowed_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        source, package = str(self.source_package), str(self.private_of)
        allowed = {str(module) for module in self.allowed_modules}  # type: ignore[attr-defined]
        if package not in graph.modules:
            raise ValueError(f"{package} is not in the graph: add it to root_packages")
        broken = sorted(
            (importer, imported)
            for importer in graph.find_descendants(source) | {source}
            if importer not in allowed
            for imported in graph.find_modules_directly_imported_by(importer)
            if imported.split(".")[0] == package and is_private(imported)
        )
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported in check.metadata["broken"]:
            private_of = self.private_of
            output.print_error(f"{importer} imports {imported}, a private module of {private_of}")
            output.new_line()
