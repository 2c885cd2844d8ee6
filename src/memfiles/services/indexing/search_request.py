"""The filters of a memsearch query, from its options as lists and strings (the full command's, or those
the thin client parsed in cli/quick_search.py `read_args`): kinds by name or prefix and statuses in any
case, an unknown one refused. One rule for the three places that answer such a query: the full command, the
watcher (services/watch/dispatch.py) and the in-process plain path (cli/quick_search.py `here`)."""

from __future__ import annotations

from typing import Any

from memfiles.errors import MemfilesError
from memfiles.format.ids import Schema
from memfiles.format.validate import is_date
from memfiles.index.filters import Filters


def request_filters(schema: Schema, request: dict[str, Any]) -> Filters:
    """The Filters of `request` (keys kind, area, status: lists; path, since: a string or None);
    MemfilesError for an unknown kind or status or a date that is not one, worded as the full command words it."""
    from memfiles.services.read import resolve_kinds, resolve_statuses

    kinds = [found.name for found in resolve_kinds(schema, tuple(request.get("kind") or ()))]
    statuses = resolve_statuses(schema, tuple(request.get("status") or ()))
    since = request.get("since")
    if since is not None and not is_date(since):
        raise MemfilesError(f"{since!r} is not a date (YYYY-MM-DD)")
    return Filters(
        kind=tuple(kinds) or None,
        area=tuple(request.get("area") or ()) or None,
        status=tuple(statuses) or None,
        path=request.get("path"),
        since=since,
    )
