"""Which markdownlint rules apply to memory files, how they are configured, and the user's overrides.

The rules are markdownlint's (MD001-MD060), as rumdl implements them. Every rule is on unless it is
listed in OFF with its reason (docs/lint.md says it at length): most of those are rules whose finding
the write path could not fix without changing what the author wrote, and the write path never refuses
a finding for style (D-110), so a default rule must be one a written body always passes.

A project overrides any of it in `pyproject.toml`, in PyMarkdown's table as before (its keys are
translated; one with no equivalent is a config error naming it) or in rumdl's own:

    [tool.pymarkdown]
    plugins.md013.line_length = 120
    plugins.md040.enabled = true

    [tool.rumdl.MD013]
    line-length = 120
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memfiles.errors import ConfigError

# markdownlint's names of its rules (the message says `md009 no-trailing-spaces: ...`).
NAMES = {
    "md001": "heading-increment",
    "md003": "heading-style",
    "md004": "ul-style",
    "md005": "list-indent",
    "md007": "ul-indent",
    "md009": "no-trailing-spaces",
    "md010": "no-hard-tabs",
    "md011": "no-reversed-links",
    "md012": "no-multiple-blanks",
    "md013": "line-length",
    "md014": "commands-show-output",
    "md018": "no-missing-space-atx",
    "md019": "no-multiple-space-atx",
    "md020": "no-missing-space-closed-atx",
    "md021": "no-multiple-space-closed-atx",
    "md022": "blanks-around-headings",
    "md023": "heading-start-left",
    "md024": "no-duplicate-heading",
    "md025": "single-title",
    "md026": "no-trailing-punctuation",
    "md027": "no-multiple-space-blockquote",
    "md028": "no-blanks-blockquote",
    "md029": "ol-prefix",
    "md030": "list-marker-space",
    "md031": "blanks-around-fences",
    "md032": "blanks-around-lists",
    "md033": "no-inline-html",
    "md034": "no-bare-urls",
    "md035": "hr-style",
    "md036": "no-emphasis-as-heading",
    "md037": "no-space-in-emphasis",
    "md038": "no-space-in-code",
    "md039": "no-space-in-links",
    "md040": "fenced-code-language",
    "md041": "first-line-heading",
    "md042": "no-empty-links",
    "md043": "required-headings",
    "md044": "proper-names",
    "md045": "no-alt-text",
    "md046": "code-block-style",
    "md047": "single-trailing-newline",
    "md048": "code-fence-style",
    "md049": "emphasis-style",
    "md050": "strong-style",
    "md051": "link-fragments",
    "md052": "reference-links-images",
    "md053": "link-image-reference-definitions",
    "md054": "link-image-style",
    "md055": "table-pipe-style",
    "md056": "table-column-count",
    "md058": "blanks-around-tables",
    "md059": "descriptive-link-text",
    "md060": "table-column-style",
}

# Off, and why (one line each; docs/lint.md says more).
OFF = {
    # An entry is a level-3 heading right under the file's `# Title` when a file has no sections (D-001).
    "md001": "the jump from the file's title to its level-3 entries is the format",
    "md011": "`(text)[url]` shows as written; making it a link would change what a reader sees",
    "md014": "a procedure quotes what to type at a prompt (`$ make test`)",
    "md020": "a title may end in C# or F#; an entry heading never has closing #s",
    "md024": "two sub-headings alike are the author's words; no fix keeps them",
    "md026": "a heading is a title as its author chose it",
    "md028": "two quotes with a blank line between are two quotes",
    "md029": "a list's numbers are its author's (`7. seventh` starts at seven)",
    "md033": "notes quote <details> and <kbd> on purpose; Vec<T> in prose shows either way",
    "md036": "a bold line (**Why**) is a common lead-in in notes",
    "md037": "`2 * n * m` is not emphasis in CommonMark, and the fix made it italics",
    "md038": "a code span's spaces are its text",
    "md040": "notes quote logs and output that have no language",
    "md042": "an empty link is the author's; no fix keeps it",
    "md045": "an image's missing words are the author's to write",
    "md046": "an indented block and a fence render the same",
    "md051": "a link to another entry's heading is found in its file, not in the entry's own chunk",
    "md052": "a reference is the author's; no fix keeps it",
    "md053": "an unused link definition shows nothing, and removing it would lose the author's text",
    "md056": "a table's cells are the author's; no fix keeps them",
    "md059": "a link's words are the author's",
    "md060": "lining up a table's pipes is cosmetic",
}
ON = sorted(set(NAMES) - set(OFF))


def default_rules(wrap: int = 100) -> dict[str, dict[str, Any]]:
    """The memfiles settings of the rules that are on (rumdl's keys); `wrap` is the write path's width."""
    return {
        "MD004": {"style": "dash"},  # every entry's metadata list uses `-`; bodies follow it
        "MD007": {"indent": 2},
        "MD009": {"br-spaces": 2},
        "MD010": {"code-blocks": False},  # a tab in code is the code's (a Makefile recipe)
        # prose is wrapped at the write path's width; code, headings and tables cannot be wrapped
        "MD013": {"line-length": wrap, "code-blocks": False, "headings": False, "tables": False, "reflow": False}
        if wrap > 0
        else {},
        "MD024": {"siblings-only": True},
        "MD031": {"list-items": False},  # a blank line inside a list item would make the list loose
    }


@dataclass(frozen=True)
class LintConfig:
    """A complete rule configuration (rumdl's terms) and a digest of it (part of every cache key).

    `keys` maps a rumdl setting (`MD013.line-length`) to the key the user wrote, for errors."""

    rules: dict[str, dict[str, Any]]
    on: frozenset[str] = frozenset(ON)
    source: str | None = None
    keys: dict[str, str] = field(default_factory=dict)

    @functools.cached_property
    def toml(self) -> str:
        lines = ["[global]", f"enable = {_value(sorted(rule.upper() for rule in self.on))}", "line-length = 0"]
        for rule in sorted(self.rules):
            if rule.lower() in self.on and self.rules[rule]:
                lines.append(f"[{rule}]")
                lines += [f"{key} = {_value(value)}" for key, value in sorted(self.rules[rule].items())]
        return "\n".join(lines) + "\n"

    @functools.cached_property
    def digest(self) -> str:
        from memfiles.mdlint.engine import engine_version

        return hashlib.sha256((self.toml + engine_version()).encode("utf-8")).hexdigest()[:16]

    def enabled(self, rule: str) -> bool:
        return rule.lower() in self.on or not rule.lower().startswith("md")

    def setting(self, rule: str, key: str, default: Any = None) -> Any:
        return self.rules.get(rule.upper(), {}).get(key, default)

    def never_fixed(self, rules: tuple[str, ...]) -> list[str]:
        """`rules`, md009 when it is strict (its fix drops a hard break's spaces), md010 when it reads code
        (its fix drops a Makefile recipe's tabs)."""
        out = list(rules)
        if self.setting("MD009", "strict") is True:
            out.append("md009")
        if self.setting("MD010", "code-blocks", True) is not False:
            out.append("md010")
        return out

    @contextlib.contextmanager
    def file(self) -> Iterator[Path]:
        """The configuration as a rumdl TOML file, for the length of the block."""
        handle, name = tempfile.mkstemp(prefix="memfiles-rumdl-", suffix=".toml")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(self.toml)
            yield Path(name)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)


def _value(value: Any) -> str:
    """A TOML value (booleans, numbers, strings and lists of them: all a rule setting holds)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    return json.dumps(str(value))


def rule_name(rule: str) -> str:
    return NAMES.get(rule.lower(), rule.lower())


def _refused(shown: str, message: str, key: str) -> ConfigError:
    return ConfigError(f"{shown}: {message}", key=key, path=shown)


def _from_pymarkdown(table: dict[str, Any], shown: str, settings: _Settings) -> None:
    """PyMarkdown's `[tool.pymarkdown]` keys as rumdl's: `plugins.md013.line_length` is
    `MD013.line-length`, `plugins.mdNNN.enabled` turns a rule on or off."""
    for name, value in table.items():
        if name == "extensions":
            _extensions(value, shown)
        elif name != "plugins":
            raise _refused(
                shown,
                f"tool.pymarkdown.{name} has no equivalent in memfiles' linter (rumdl)",
                f"tool.pymarkdown.{name}",
            )
    plugins = table.get("plugins", {})
    if not isinstance(plugins, dict):
        raise _refused(
            shown,
            "tool.pymarkdown.plugins must be a table (like plugins.md013.enabled = false)",
            "tool.pymarkdown.plugins",
        )
    for name, rule in plugins.items():
        key = f"tool.pymarkdown.plugins.{name}"
        if name.lower() not in NAMES:
            raise _refused(shown, f"{key}: no such rule (md001 ... md060; pml rules have no equivalent)", key)
        if not isinstance(rule, dict):
            raise _refused(shown, f"{key} must be a table (like enabled = false)", key)
        for option, value in rule.items():
            settings.set(name, option.replace("_", "-"), value, f"{key}.{option}")


def _extensions(value: Any, shown: str) -> None:
    if not isinstance(value, dict):
        raise _refused(shown, "tool.pymarkdown.extensions must be a table", "tool.pymarkdown.extensions")
    for name, setting in value.items():
        key = f"tool.pymarkdown.extensions.{name}"
        if name != "markdown-tables" or not isinstance(setting, dict) or setting.get("enabled", True) is not True:
            raise _refused(shown, f"{key}: memfiles always reads GitHub tables and nothing else is configurable", key)


def _from_rumdl(table: dict[str, Any], shown: str, settings: _Settings) -> None:
    """rumdl's own `[tool.rumdl]`: `[tool.rumdl.MD013] line-length = 120`, `disable = ["MD013"]`."""
    for name, value in table.items():
        key = f"tool.rumdl.{name}"
        if name in ("enable", "disable", "extend-enable", "extend-disable"):
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise _refused(shown, f"{key} must be a list of rule ids", key)
            for rule in value:
                if rule.lower() not in NAMES:
                    raise _refused(shown, f"{key}: no such rule {rule!r} (MD001 ... MD060)", key)
                settings.set(rule, "enabled", "disable" not in name, key)
        elif name.lower() in NAMES and isinstance(value, dict):
            for option, item in value.items():
                settings.set(name, str(option), item, f"{key}.{option}")
        else:
            raise _refused(shown, f"{key}: memfiles reads rule tables (MD013) and enable/disable lists only", key)


class _Settings:
    """The rules being built: the defaults, then the user's keys laid over them."""

    def __init__(self, wrap: int) -> None:
        self.rules = copy.deepcopy(default_rules(wrap))
        self.on = set(ON)
        self.keys: dict[str, str] = {}

    def set(self, rule: str, option: str, value: Any, key: str) -> None:
        rule = rule.upper()
        if option == "enabled":
            if not isinstance(value, bool):
                raise ConfigError(f"{key} must be true or false", key=key)
            (self.on.add if value else self.on.discard)(rule.lower())
        else:
            self.rules.setdefault(rule, {})[option] = value
            self.keys[f"{rule}.{option}"] = key
        self.keys.setdefault(rule, key)


def user_rules(root: Path, settings: _Settings) -> str | None:
    """Lay `[tool.pymarkdown]` and `[tool.rumdl]` of the root's pyproject.toml over `settings`; the
    file's name (relative to the root) when either is there."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return None
    shown = "pyproject.toml"
    from memfiles.config import read_toml  # the one reading of TOML: its errors name the file and line

    tool = read_toml(pyproject, shown).get("tool", {})
    found = None
    for name, translate in (("pymarkdown", _from_pymarkdown), ("rumdl", _from_rumdl)):
        table = tool.get(name)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise _refused(shown, f"[tool.{name}] must be a table", f"tool.{name}")
        try:
            translate(table, shown, settings)
        except ConfigError as error:
            raise ConfigError(
                error.message if error.message.startswith(shown) else f"{shown}: {error.message}",
                key=error.key,
                path=shown,
            ) from None
        found = shown
    return found


def load_lint_config(root: Path, wrap: int = 100) -> LintConfig:
    """The memfiles defaults with the user's settings laid over them; ConfigError for a setting no file
    memfiles writes could pass, or one the linter refuses."""
    settings = _Settings(wrap)
    source = user_rules(root, settings)
    config = LintConfig(settings.rules, frozenset(settings.on), source, settings.keys)
    if source is None:
        return config
    style = config.setting("MD004", "style", "dash")
    if style not in ("dash", "consistent") and config.enabled("md004"):
        key = settings.keys.get("MD004.style", "tool.rumdl.MD004.style")
        raise ConfigError(
            f"{source}: {key} = {style!r}: every entry's metadata list is written with '-', so only 'dash' or"
            " 'consistent' can pass",
            key=key,
            path=source,
        )
    length = config.setting("MD013", "line-length")
    if (
        wrap > 0
        and config.enabled("md013")
        and isinstance(length, int)
        and not isinstance(length, bool)
        and length < wrap
    ):
        key = settings.keys.get("MD013.line-length", "tool.rumdl.MD013.line-length")
        raise ConfigError(
            f"{source}: {key} = {length} is below the width memfiles wraps prose at (wrap = {wrap}): set wrap ="
            f" {length} in [tool.memfiles] or memory/memfiles.toml too",
            key=key,
            path=source,
        )
    _validate(config)
    return config


@functools.lru_cache(maxsize=8)
def _refusal(toml: str) -> str | None:
    """What rumdl says against a configuration (an unknown option, a value of the wrong type), or None."""
    from memfiles.mdlint.engine import rumdl_path

    binary = rumdl_path()
    if binary is None:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False, encoding="utf-8") as out:
        out.write(toml)
    try:
        arguments = [binary, "check", "--stdin", "--config", out.name, "--deny-config-warnings", "--quiet"]
        done = subprocess.run(arguments, input=b"# x\n", capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        os.unlink(out.name)
    if done.returncode != 2:
        return None
    output = (done.stderr + done.stdout).decode("utf-8", "replace").splitlines()
    said = [line for line in output if "config warning" in line or "Invalid configuration" in line]
    return said[0].split("] ", 1)[-1].strip() if said else "a setting it cannot use"


def _validate(config: LintConfig) -> None:
    said = _refusal(config.toml)
    if said is None:
        return
    key = None
    for rumdl_key, user_key in config.keys.items():
        rule, _, option = rumdl_key.partition(".")
        if option and option in said and rule in said:
            key = user_key
            break
    where = f"{config.source}: {key}" if key else f"{config.source}"
    raise ConfigError(f"{where}: the linter refused it: {said}", key=key, path=config.source)
