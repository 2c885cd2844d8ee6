"""The persona: behaviour configuration for agents (tone, limits, habits), in memory/persona.md.

It is read and returned on request, never indexed and never a search hit: the project's file
discovery leaves it out (store/project.py), whatever it holds.
"""

from __future__ import annotations

from typing import Any

from memfiles.errors import ReadError
from memfiles.store.fileio import read_memory_text
from memfiles.store.project import PERSONA_FILE, Project


def persona(project: Project) -> dict[str, Any]:
    """{"path", "exists", "text"}: the persona file relative to the root, and its text ("" when absent)."""
    path = project.settings.memory_dir / PERSONA_FILE
    exists = path.is_file()
    shown = project.rel(path)
    if not exists and path.exists():  # a folder of that name: "no persona" would send one to write a file there
        raise ReadError(shown, "is not a file: the persona is a Markdown file; move this out of the way")
    return {"path": shown, "exists": exists, "text": read_memory_text(path, shown) if exists else ""}
