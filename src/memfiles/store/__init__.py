"""Files on disk: discovery, atomic writes, the cross-process lock, the op batch (the only writer)."""
