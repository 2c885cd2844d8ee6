"""Services: what the commands and servers do, by capability (docs/architecture.md). Here, what every
capability shares: reading entries (read.py), the write path (write.py, lint.py) and the marker around
injected context (hook_text.py). The packages: indexing, distiller, agents, upkeep, watch. An import goes
down the layers, never up (tests/test_structure.py)."""
