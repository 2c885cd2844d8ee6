"""The distiller: experience logs (memory/<domain>/experiences.jsonl) into knowledge entries, each
finding filed on the entry that already says it (confirmed, or a contradiction appended) or added."""
