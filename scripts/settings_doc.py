"""Write docs/format.md's settings table from memfiles.config.SETTINGS (the one declaration of each
setting): `python scripts/settings_doc.py`. tests/test_config.py fails when the page and the table differ."""

from __future__ import annotations

from pathlib import Path

from memfiles.config import settings_markdown

PAGE = Path(__file__).resolve().parent.parent / "docs" / "format.md"
BEGIN = "<!-- settings: made by scripts/settings_doc.py from memfiles.config.SETTINGS; do not edit by hand -->"
END = "<!-- end of settings -->"


def rewritten(text: str) -> str:
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{settings_markdown()}{END}{tail}"


if __name__ == "__main__":
    PAGE.write_text(rewritten(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {PAGE}")
