"""Keeping the memory sound: check (every promise of the format), audit (leftovers of edits, evidence),
refs (references in every file), and near-duplicates (dupes, the write path's unique check)."""
