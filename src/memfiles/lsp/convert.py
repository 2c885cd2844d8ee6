"""From the workspace's answers to LSP types: positions in UTF-16 units, hover Markdown, diagnostics."""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from memfiles.contract import FINDING_CODES, Finding
from memfiles.lsp.workspace import Resolution, WorkspaceIndex

SOURCE = "memfiles"

# A finding's severity as the editor shows it.
SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


def uri_of(path: Path) -> str:
    return from_fs_path(str(path)) or path.as_uri()


def path_of(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(os.path.abspath(path)) if path else None  # a linked file by its own place, as Project.rel names it


def utf16(line: str, column: int) -> int:
    """A character column of `line` in UTF-16 code units (LSP's default position encoding)."""
    return len(line[:column].encode("utf-16-le")) // 2


def from_utf16(line: str, units: int) -> int:
    """The character column of `line` at `units` UTF-16 code units (a character two units wide that `units`
    splits counts whole). By the codec, not a loop over the characters: a line of 100,000 took 25 ms a
    keystroke in completion."""
    if units <= 0:
        return 0
    if line.isascii():
        return min(units, len(line))
    head = line.encode("utf-16-le", "surrogatepass")[: units * 2]
    return len(head.decode("utf-16-le", "surrogatepass"))


def span(line_text: str, line: int, start: int, end: int) -> types.Range:
    return types.Range(
        start=types.Position(line=line, character=utf16(line_text, start)),
        end=types.Position(line=line, character=utf16(line_text, end)),
    )


def whole_line(lines: list[str], line: int) -> types.Range:
    """Line `line` (0-based) from its first character to its end."""
    text = lines[line] if 0 <= line < len(lines) else ""
    return span(text, max(line, 0), 0, len(text))


def hover_markdown(index: WorkspaceIndex, resolution: Resolution, token: str) -> str:
    """What a hover shows: the entry's title, kind, status, date, area and body; its fate if retired or pruned;
    for an id two entries carry, that, and no body (which one is meant, nobody can say)."""
    if resolution.state == "ambiguous":
        return f"**{token}**: {resolution.message}"
    if resolution.located is not None:
        located = resolution.located
        entry = located.entry
        kind = index.kind_of(entry.id) or "entry"
        lines = [
            f"**{entry.id}: {entry.title}**",
            "",
            f"{kind} · {entry.status} · {entry.date} · {entry.area} · `{located.where}`",
        ]
        if entry.tags:
            lines.append(f"tags: {', '.join(entry.tags)}")
        written = token[2:] if token.startswith("@@") else token
        if token.startswith("@@") and written != entry.id:  # `@@D-1` resolves; the project spells it D-001
            lines.append(f"\nwrite it `@@{entry.id}`")
        if entry.status == "retired":
            successor = resolution.successor
            if successor is not None:
                lines.append(f"\n**Retired**: its successor is **{successor.entry.id}**: {successor.entry.title}")
            else:
                lines.append("\n**Retired**, with no live successor.")
            if entry.reason:
                lines.append(f"Reason: {entry.reason}")
        lines += ["", "---", "", entry.body]
        return "\n".join(lines)
    if resolution.pruned is not None:
        record = resolution.pruned
        return "\n".join(
            [
                f"**{record.get('id')}: {record.get('title', '')}** (pruned {record.get('date', '')})",
                "",
                f"Reason: {record.get('reason', '')}",
                "",
                "---",
                "",
                str(record.get("entry", "")),
            ]
        )
    if resolution.target is not None and resolution.state == "ok":
        return f"**{token}** → `{index.project.rel(resolution.target)}`"
    return f"**{token}**: {resolution.message}"


def ref_diagnostic(line_text: str, line: int, start: int, end: int, token: str, res: Resolution):
    """A diagnostic for a reference that does not resolve to a live target (None for one that does)."""
    if res.state == "ok":
        return None
    code = f"ref-{res.state}"  # the codes memfiles refs gives the same states (contract.FINDING_CODES)
    severity = SEVERITY[FINDING_CODES[code]]
    data = {"token": token}
    if res.successor is not None:
        data["successor"] = res.successor.entry.id
    return types.Diagnostic(
        range=span(line_text, line, start, end),
        message=res.message,
        severity=severity,
        code=code,
        source=SOURCE,
        data=data,
    )


def finding_diagnostic(lines: list[str], finding: Finding) -> types.Diagnostic:
    """A check or lint finding as a diagnostic on its line."""
    severity = SEVERITY[finding.severity]
    return types.Diagnostic(
        range=whole_line(lines, (finding.line or 1) - 1),
        message=finding.message,
        severity=severity,
        code=finding.code,
        source=SOURCE if not finding.code.startswith("md") else f"{SOURCE} lint",
    )
