"""The settings a thin client needs (cli/hook_entry.py: hooks_timeout), without loading config.py on
every call: config.load_settings reads them in full, with every rule, once per change of what they are
read from, and the values are kept in .memfiles/settings.memo beside that source (the text of
memory/memfiles.toml and pyproject.toml, and the MEMFILES_* variables). A call then costs reading two
small files and the memo. Nothing but config.py reads the settings out of the config files.
"""

from __future__ import annotations

import os

from memfiles.jsonline import dumps, loads
from memfiles.root import CONFIG_FILES, STATE_DIR

TYPE_CHECKING = False  # not typing's: the thin hook client imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping

MEMO_FILE = "settings.memo"  # in .memfiles/
REMEMBERED = ("hooks_timeout",)  # the settings a thin client reads: add a name here to remember it too


def source(root: str, environ: Mapping[str, str]) -> list[object]:
    """What the settings are read from besides the defaults: each config file's text (None when absent)
    and the MEMFILES_* variables that are set."""
    texts: list[object] = []
    for name in CONFIG_FILES:
        try:
            with open(os.path.join(root, name), encoding="utf-8", errors="surrogateescape") as handle:
                texts.append(handle.read())
        except OSError:
            texts.append(None)
    variables = sorted([name, value] for name, value in environ.items() if name.startswith("MEMFILES_") and value)
    return [texts, variables]


def remembered(root: str, environ: Mapping[str, str] | None = None) -> dict[str, object] | None:
    """The REMEMBERED settings of the project at `root` as config.load_settings reads them, from the
    memo when its source is unchanged; None when the settings cannot be read (a bad value: the full
    command says which, and where)."""
    environ = os.environ if environ is None else environ
    now = source(root, environ)
    memo = os.path.join(root, STATE_DIR, MEMO_FILE)
    try:
        with open(memo, encoding="ascii") as handle:
            kept = loads(handle.read())
        if isinstance(kept, dict) and kept.get("source") == now and isinstance(kept.get("values"), dict):
            return kept["values"]
    except (OSError, ValueError):
        pass
    try:
        from memfiles.config import load_settings

        settings = load_settings(root, environ=environ)  # type: ignore[arg-type]
    except Exception:
        return None
    values: dict[str, object] = {name: getattr(settings, name) for name in REMEMBERED}
    try:
        os.makedirs(os.path.dirname(memo), exist_ok=True)
        with open(f"{memo}.{os.getpid()}", "w", encoding="ascii") as handle:
            handle.write(dumps({"values": values, "source": now}))
        os.replace(f"{memo}.{os.getpid()}", memo)
    except OSError:
        pass  # read in full again next time
    return values
