"""MemoryFile to text, in the one canonical form: render(parse(t)) == t for every canonical file."""

from __future__ import annotations

from memfiles.format.grammar import BODY_SEPARATOR, BOM, body_needs_separator, entry_heading, section_heading
from memfiles.format.ids import Schema
from memfiles.format.model import Entry, MemoryFile
from memfiles.format.toc import render_index


def render_entry(entry: Entry) -> str:
    """An entry as it stands in a file: heading, metadata list, body."""
    parts = [entry_heading(entry.id, entry.title), "\n".join(f"- {key}: {value}" for key, value in entry.meta())]
    if entry.body:
        if body_needs_separator(entry.body):
            parts.append(BODY_SEPARATOR)
        parts.append(entry.body)
    return "\n\n".join(parts)


def render(memory: MemoryFile, schema: Schema | None = None) -> str:
    """The canonical text of `memory`, with a freshly generated index, in the file's newline (Manual too)."""
    blocks: list[str] = []
    if memory.title is not None:
        blocks.append(f"# {memory.title}")
    if memory.preamble:
        blocks.append(memory.preamble)
    blocks.append(render_index(memory, schema or Schema()))
    for section in memory.sections:
        if section.name is not None:
            blocks.append(section_heading(section.name))
        if section.intro:
            blocks.append(section.intro)
        blocks.extend(render_entry(entry) for entry in section.entries)
    text = "\n\n".join(blocks) + "\n"
    if memory.manual is not None:
        text += "\n" + memory.manual
    if memory.newline != "\n":
        text = text.replace("\n", memory.newline)
    return BOM + text if memory.bom else text
