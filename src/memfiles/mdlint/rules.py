"""Which PyMarkdown rules apply to memory files, how they are configured, and the user's overrides.

Every rule PyMarkdown enables by default stays on unless it is listed here; each one turned off or
re-configured says why in one line (docs/lint.md says it at length). The user overrides any of it in
PyMarkdown's own table, `[tool.pymarkdown]` of the project's pyproject.toml, with PyMarkdown's keys:

    [tool.pymarkdown]
    plugins.md013.line_length = 120
    plugins.md040.enabled = false
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memfiles.errors import ConfigError


def default_rules(wrap: int = 100) -> dict[str, Any]:
    """The memfiles rule set as a PyMarkdown configuration; `wrap` is the write path's wrap width."""
    plugins: dict[str, dict[str, Any]] = {
        # An entry is a level-3 heading right under the file's `# Title` when a file has no sections
        # (@@D-001), so the level jumps from 1 to 3 by design.
        "md001": {"enabled": False},
        # The metadata list of every entry uses `-`; bodies follow it (the write path rewrites `*` and `+`).
        "md004": {"style": "dash"},
        # Tabs are part of code (a Makefile recipe); outside code they are reported.
        "md010": {"code_blocks": False},
        # Prose is wrapped at the write path's width. Code, headings and tables cannot be wrapped without
        # changing them; an entry heading is bounded by the title limit `check` enforces.
        "md013": {"line_length": wrap, "code_blocks": False, "headings": False, "tables": False}
        if wrap > 0
        else {"enabled": False},
        # A list's numbers are its author's: `7. seventh` starts at seven, and the fix renumbered it from 1.
        "md029": {"enabled": False},
        # A procedure quotes what to type at a prompt (`$ make test`); the output is rarely worth keeping.
        "md014": {"enabled": False},
        # A title may end in C# or F#: an entry heading never has closing #s (a title ending in ` #` is
        # refused), so a `#` at its end is text, not a closed heading missing its space.
        "md020": {"enabled": False},
        # Entries repeat body sub-headings (`#### Why`) under different parents; only siblings must differ.
        "md024": {"siblings_only": True},
        # A heading is an entry's title as its author chose it ("Why does hold fail?"); the index repeats it.
        "md026": {"enabled": False},
        # A blank line inside a list item would make the whole list loose (rendered differently).
        "md031": {"list_items": False},
        # Notes quote `<details>` and `<kbd>` on purpose, and type names like Vec<T> in prose are only
        # fixable by the author adding backticks; the renderer shows them either way.
        "md033": {"enabled": False},
        # A bold line ("**Why**") is a common lead-in in notes, not a heading missing from the outline.
        "md036": {"enabled": False},
        # `2 * n * m` and `_ spaced _` are not emphasis in CommonMark (they show their marks), but this rule
        # reads them as emphasis with spaces, and its fix (`2 *n* m`) turns them into italics: it changed
        # what a body said, which the write path and fmt promise never to do.
        "md037": {"enabled": False},
        # A code span's spaces are its text (`` ` ` `` shows a space, `` ` x` `` a leading one); the fix
        # dropped them, and turned a span of spaces into two backticks.
        "md038": {"enabled": False},
        # Two quotes with a blank line between are two quotes (CommonMark and GitHub agree): as written.
        "md028": {"enabled": False},
        # Notes quote logs, transcripts and output that have no language; `text` on every fence is noise.
        "md040": {"enabled": False},
        # An indented block and a fence render the same; a body quoting both is a matter of style.
        "md046": {"enabled": False},
        # A link's words are the author's; "see here" is a style matter, not a broken promise of the format.
        "md059": {"enabled": False},
        # Lining up a table's pipes is cosmetic; a note's table is read rendered.
        "md060": {"enabled": False},
    }
    return {
        "plugins": plugins,
        # Tables are GitHub Markdown: without the extension a table row is a long paragraph line to md013.
        "extensions": {"markdown-tables": {"enabled": True}},
    }


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


@dataclass(frozen=True)
class LintConfig:
    """A complete PyMarkdown configuration and a digest of it (part of every cache key)."""

    settings: dict[str, Any]
    source: str | None = None

    @functools.cached_property
    def digest(self) -> str:
        from memfiles.mdlint.engine import engine_version

        text = json.dumps(self.settings, sort_keys=True) + engine_version()
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def enabled(self, rule: str) -> bool:
        return self.settings.get("plugins", {}).get(rule.lower(), {}).get("enabled", True) is not False


@functools.cache
def known_rules() -> frozenset[str]:
    """PyMarkdown's rule ids (md009, pml100 ...), from its plugin files, without importing it."""
    spec = importlib.util.find_spec("pymarkdown")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    folder = Path(next(iter(spec.submodule_search_locations))) / "plugins"
    return frozenset(path.stem.removeprefix("rule_").replace("_", "") for path in folder.glob("rule_*.py"))


def user_rules(root: Path) -> tuple[dict[str, Any], str | None]:
    """`[tool.pymarkdown]` of the root's pyproject.toml ({} when there is none), and where it came from
    (the file's name relative to the root, as every error about it names it)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return {}, None
    shown = "pyproject.toml"

    def refused(message: str, key: str | None = None) -> ConfigError:
        return ConfigError(f"{shown}: {message}", key=key, path=shown)

    from memfiles.config import read_toml  # the one reading of TOML: its errors name the file and line

    table = read_toml(pyproject, shown).get("tool", {}).get("pymarkdown")
    if table is None:
        return {}, None
    if not isinstance(table, dict):
        raise refused("[tool.pymarkdown] must be a table", "tool.pymarkdown")
    for key in ("plugins", "extensions"):
        if not isinstance(table.get(key, {}), dict):
            raise refused(
                f"tool.pymarkdown.{key} must be a table (like {key}.md013.enabled = false)", f"tool.pymarkdown.{key}"
            )
    known = known_rules()
    for name, rule in table.get("plugins", {}).items():
        key = f"tool.pymarkdown.plugins.{name}"
        if known and re.fullmatch(r"(md|pml)\d+", name.lower()) and name.lower() not in known:
            raise refused(f"{key}: PyMarkdown has no such rule (md001 ... md060)", key)
        if not isinstance(rule, dict):
            raise refused(f"{key} must be a table (like enabled = false)", key)
    return table, shown


def load_lint_config(root: Path, wrap: int = 100) -> LintConfig:
    """The memfiles defaults with the user's `[tool.pymarkdown]` laid over them; ConfigError for a
    setting no file memfiles writes could pass."""
    table, source = user_rules(root)
    merged = _merge(default_rules(wrap), table)
    plugins = merged.get("plugins", {})
    style = plugins.get("md004", {}).get("style", "dash")
    if style not in ("dash", "consistent") and plugins.get("md004", {}).get("enabled", True) is not False:
        key = "tool.pymarkdown.plugins.md004.style"
        raise ConfigError(
            f"{source}: {key} = {style!r}: every entry's metadata list is written with '-', "
            "so only 'dash' or 'consistent' can pass",
            key=key,
            path=source,
        )
    length = plugins.get("md013", {}).get("line_length")
    md013_on = plugins.get("md013", {}).get("enabled", True) is not False
    if source and md013_on and wrap > 0 and isinstance(length, int) and not isinstance(length, bool) and length < wrap:
        key = "tool.pymarkdown.plugins.md013.line_length"
        raise ConfigError(
            f"{source}: {key} = {length} is below the width memfiles wraps prose at (wrap = {wrap}): "
            f"set wrap = {length} in [tool.memfiles] or memory/memfiles.toml too",
            key=key,
            path=source,
        )
    return LintConfig(merged, source)
