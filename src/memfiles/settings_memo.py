"""The settings a thin client needs (cli/hook_entry.py: hooks_timeout), without loading config.py on
every call. This module reads them through config.load_settings, with every rule, once per change of what
they are read from, and keeps the values in .memfiles/settings.memo beside a digest of that source: the
text of memory/memfiles.toml and pyproject.toml, the MEMFILES_* variables config.py reads (their names
are kept in the memo), this version of memfiles and the names remembered. A call then costs reading
two small files and the memo. Nothing but config.py reads the settings out of the config files.

The memo holds no variable's value (MEMFILES_CHROMA_URL may carry a password), only the digest; it is
its owner's alone (0600) in a folder git ignores.
"""

from __future__ import annotations

import os

from memfiles.jsonline import dumps, loads
from memfiles.root import CONFIG_FILES, STATE_DIR

TYPE_CHECKING = False  # not typing's: the thin hook client imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

MEMO_FILE = "settings.memo"  # in .memfiles/
# The settings a thin client reads: each must depend on the config files and variables alone (not on the
# current folder), since nothing else is in the memo's key. Add a name here to remember it too.
REMEMBERED = ("hooks_timeout",)


def config_texts(root: str) -> list[str | None] | None:
    """Each config file's text (None for one that does not exist); None when one exists and cannot be
    read as a file (a folder, a link to nothing): the settings reader then says what is wrong."""
    texts: list[str | None] = []
    for name in CONFIG_FILES:
        path = os.path.join(root, name)
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as handle:
                texts.append(handle.read())
        except FileNotFoundError:
            if os.path.islink(path):
                return None
            texts.append(None)
        except OSError:
            return None
    return texts


def _key(texts: list[str | None], environ: Mapping[str, str], names: Sequence[str]) -> str:
    """The digest of what the remembered values were read from."""
    from memfiles import __version__

    try:
        from _sha256 import sha256  # the C module alone: hashlib costs more to import
    except ImportError:
        from hashlib import sha256
    variables = [[str(name), environ.get(str(name)) or ""] for name in names]
    source = dumps([__version__, REMEMBERED, texts, variables])
    return sha256(source.encode("ascii")).hexdigest()


def remembered(root: str, environ: Mapping[str, str] | None = None) -> dict[str, object] | None:
    """The REMEMBERED settings of the project at `root` as config.load_settings reads them, from the
    memo when its source is unchanged; None when the settings cannot be read (a bad value: the full
    command says which, and where)."""
    environ = os.environ if environ is None else environ
    texts = config_texts(root)
    if texts is None:
        return None
    memo = os.path.join(root, STATE_DIR, MEMO_FILE)
    try:
        with open(memo, encoding="ascii") as handle:
            kept = loads(handle.read())
        if isinstance(kept, dict) and isinstance(kept.get("variables"), list):
            values = kept.get("values")
            if (
                kept.get("key") == _key(texts, environ, kept["variables"])
                and isinstance(values, dict)
                and all(name in values for name in REMEMBERED)
            ):
                return values
    except (OSError, ValueError):
        pass
    try:
        from memfiles.config import environment_variables, load_settings

        settings = load_settings(root, environ=environ)  # type: ignore[arg-type]
    except Exception:
        return None
    values = {name: getattr(settings, name) for name in REMEMBERED}
    if config_texts(root) == texts:  # else changed while being read: used once, not remembered
        names = environment_variables()
        _write(root, memo, {"variables": list(names), "key": _key(texts, environ, names), "values": values})
    return values


def _write(root: str, memo: str, content: dict[str, object]) -> None:
    """The memo written whole (a temporary file renamed over it), its owner's alone; a failure is let go:
    the settings are read in full again next time."""
    import contextlib
    from pathlib import Path

    from memfiles.store.fileio import ensure_private_dir

    temporary = f"{memo}.{os.getpid()}"
    try:
        ensure_private_dir(Path(root) / STATE_DIR)
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(handle, "w", encoding="ascii") as out:
            out.write(dumps(content))
        os.replace(temporary, memo)
        with contextlib.suppress(OSError):  # where the thin client kept hooks_timeout before this memo
            os.remove(os.path.join(root, STATE_DIR, "hooks", "timeout"))
    except Exception:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
