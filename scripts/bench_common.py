"""What every benchmark of cold processes does first.

memfiles is measured as it runs once installed: its modules byte-compiled, as pip compiles a wheel's and
as Python caches them on a first import. With PYTHONDONTWRITEBYTECODE set (as on the machine these
figures come from) nothing would cache them, every cold command would compile memfiles' modules from
source (0.1-0.2 s a search), and the baselines' packages (numpy, Python's own) would not pay that.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def compile_memfiles() -> None:
    """Byte-compile the memfiles package being measured (a no-op when its caches are current)."""
    import memfiles

    folder = Path(memfiles.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], check=True, stdout=subprocess.DEVNULL)


def warm_watcher(root: Path, query: list[str], timeout: float = 120.0) -> None:
    """Bring the project's running watcher to its steady state before it is timed: run `query` (a
    command that searches) once, then wait until the watcher's log says its queries use the torch
    encoder it loads in the background after a first query (services/watch/keeper.py). With
    watch_torch off, or when torch could not be loaded, the log says so or says nothing: after
    `timeout` seconds the benchmark goes on and times what the watcher answers with."""
    from memfiles.config import load_settings

    settings = load_settings(root)  # the environment and the project's config, as the watcher read them
    subprocess.run(query, capture_output=True, check=False, env={**os.environ, "MEMFILES_ROOT": str(root)})
    log = root / ".memsearch" / "watch.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if "queries now use the torch encoder" in text or "queries stay on the numpy encoder" in text:
            return
        if not settings.watch_torch:
            return
        time.sleep(0.2)
    print(f"warning: the watcher did not say within {timeout:g} s which encoder answers its queries", file=sys.stderr)
