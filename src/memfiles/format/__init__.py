"""The pure core: the memory-file format. Standard library only; no chromadb, torch, watchdog or click."""
