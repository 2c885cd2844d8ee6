"""What every benchmark of cold processes does first.

memfiles is measured as it runs once installed: its modules byte-compiled, as pip compiles a wheel's and
as Python caches them on a first import. With PYTHONDONTWRITEBYTECODE set (as on the machine these
figures come from) nothing would cache them, every cold command would compile memfiles' modules from
source (0.1-0.2 s a search), and the baselines' packages (numpy, Python's own) would not pay that.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def compile_memfiles() -> None:
    """Byte-compile the memfiles package being measured (a no-op when its caches are current)."""
    import memfiles

    folder = Path(memfiles.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], check=True, stdout=subprocess.DEVNULL)
