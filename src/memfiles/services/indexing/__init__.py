"""How commands reach the index: the one index client (the watcher over its socket, or the store opened
here), the session that opens the store, backfill, the watcher's process (daemon.py) and what a search
returns and prints."""
