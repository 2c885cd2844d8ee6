"""The layers of docs/architecture.md hold: no module imports a layer above its own, at module level or
inside a function, and the capability packages of services/ form no cycle.

Every `import memfiles...` and `from memfiles... import` in src/memfiles is read with ast (function-level
imports included: a cycle through them is a cycle all the same). Each module belongs to a unit (a
top-level package or module, or a services/ package); each unit has a rank; an import may go to a unit of
a lower rank, or within its own unit. Rank 0, the pure core, may import within itself. A new unit fails
the test until it is given a rank here and a room in docs/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

SOURCE = REPO / "src" / "memfiles"
SERVICE_PACKAGES = ("indexing", "distiller", "agents", "upkeep", "watch")
RANKS = {
    # the pure core: the format's grammar, parse, render, ids and validation; the contract; the errors
    "format": 0,
    "contract": 0,
    "errors": 0,
    "root": 0,
    "limits": 0,
    "hook_events": 0,
    "jsonin": 0,
    "jsonline": 0,
    "settings_memo": 3,  # above config, which it loads when its memo is stale, and store (its folder)
    "memfiles": 0,  # memfiles/__init__.py
    "config": 1,
    "markdown": 1,
    "store": 2,
    "mdlint": 2,
    "index": 3,
    "services": 4,  # read, write, hook_text: what every capability shares
    "services.indexing": 5,
    "services.distiller": 6,
    "services.agents": 7,
    "services.upkeep": 8,
    "services.watch": 9,
    "lsp": 10,
    "mcp": 10,
    "cli": 11,
}


def unit_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "memfiles"
    if parts[1] == "services" and len(parts) > 2 and parts[2] in SERVICE_PACKAGES:
        return f"services.{parts[2]}"
    return parts[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE).with_suffix("").parts
    return ".".join(("memfiles", *parts)).removesuffix(".__init__")


def imports() -> list[tuple[str, int, str]]:
    """(module, line, imported module) for every memfiles import in the package."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        me = module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "memfiles":
                targets = [node.module]
                if node.module in ("memfiles", "memfiles.services"):  # `from memfiles.services import x`
                    targets = [f"{node.module}.{alias.name}" for alias in node.names]
                found.extend((me, node.lineno, target) for target in targets)
            elif isinstance(node, ast.Import):
                found.extend((me, node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "memfiles")
    return found


def test_every_unit_has_a_rank() -> None:
    units = {unit_of(module_name(path)) for path in SOURCE.rglob("*.py")}
    assert units - set(RANKS) == set(), "a new package or module: give it a rank here and a room in the docs"


def test_no_import_goes_up_a_layer() -> None:
    offenders = []
    for module, line, target in imports():
        me, to = unit_of(module), unit_of(target)
        if to == me or to == "__version__":
            continue
        if RANKS[to] > RANKS[me] or (RANKS[to] == RANKS[me] and RANKS[me] != 0):
            offenders.append(f"{module}:{line} imports {target} ({me} {RANKS[me]} -> {to} {RANKS[to]})")
    assert offenders == []


def test_the_architecture_page_names_every_services_package() -> None:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    for package in SERVICE_PACKAGES:
        assert f"services/{package}/" in page, package
    for path in sorted((SOURCE / "services").glob("*.py")):
        if path.name != "__init__.py":
            assert f"services/{path.name}" in page, path.name


def test_only_the_index_client_asks_the_watcher() -> None:
    """Every caller reaches the watcher through services/indexing (index_client.py: `connect` and
    `running_watcher`), or, on the two fast paths, through cli/watcher_wire.py; nobody else sends a line.
    Outside services/indexing, ipc.py lends only where the socket is and the server's side."""
    lent = {"socket_path", "pid_path", "serve"}
    offenders = []
    for path in sorted(SOURCE.rglob("*.py")):
        me = module_name(path)
        text = path.read_text(encoding="utf-8")
        if "AF_UNIX" in text and path.name not in ("ipc.py", "watcher_wire.py"):
            offenders.append(f"{me}: a socket of its own")
        if unit_of(me) == "services.indexing":
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
                asks = any(name.startswith("memfiles.services.indexing.ipc") for name in modules)
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                names = {alias.name for alias in node.names}
                asks = (node.module == "memfiles.services.indexing.ipc" and not names <= lent) or (
                    node.module == "memfiles.services.indexing" and "ipc" in names
                )
                wire = node.module == "memfiles.cli.watcher_wire" and "exchange" in names
                asks = asks or (wire and me not in ("memfiles.cli.quick_search", "memfiles.cli.hook_entry"))
            else:
                continue
            if asks:
                offenders.append(f"{me}:{node.lineno}")
    assert offenders == []
