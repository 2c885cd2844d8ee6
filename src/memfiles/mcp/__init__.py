"""memfiles over the Model Context Protocol: `memfiles mcp` (needs the mcp extra)."""
