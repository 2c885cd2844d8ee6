"""Thin click commands: parse options, call services, print text or --json. Nothing else lives here."""
