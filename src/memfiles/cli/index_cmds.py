"""Commands of the index: backfill, watch, status."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

import click

from memfiles.cli.app import App, CommandError, Number, errors_to_exit, json_option, pass_app, print_json, warn
from memfiles.errors import MemfilesError


@click.command()
@click.option("--rebuild", is_flag=True, help="Start from an empty collection.")
@click.option("--check", "check_only", is_flag=True, help="Write nothing (not even a new index); exit 1 on any drift.")
@json_option
@pass_app
def backfill(app: App, rebuild: bool, check_only: bool, as_json: bool) -> None:
    """Bring the semantic index in line with the files: upsert every entry, delete ids that left.

    Entries whose text and model are unchanged are not embedded again; a catalog left behind by a
    watcher that died is rebuilt. A file that does not parse is named and its entries are left as the
    index has them. The index lives in .memsearch/; with a Chroma server (index_url / --chroma-url /
    MEMFILES_CHROMA_URL) it is this clone's view there, and each text's vector is taken from the server
    when another clone shared it (and shared when embedded here). --rebuild encodes everything again
    before it replaces the index: searches answer meanwhile. With --check, a project without an index
    exits 1 ("no index yet") and nothing is created.

    \b
    Example:
      memfiles backfill            # after a clone, or whenever in doubt
      memfiles backfill --check    # drift? exit 1 and say which ids
    """
    from memfiles.services.indexing.backfill import has_drift
    from memfiles.services.indexing.index_client import connect

    with errors_to_exit():
        if rebuild and check_only:  # --check writes nothing, --rebuild rewrites everything
            raise click.UsageError("--rebuild and --check do not go together: give one")
        result = connect(app.settings).backfill(rebuild=rebuild, check=check_only)
        skipped = _skipped(app, result["drift"]["unreadable"])
    drift = result["drift"]
    for item in skipped:
        where = f"{item['path']}:{item['line']}" if item["line"] is not None else item["path"]
        warn(f"{where}: {item['message']} (skipped: its entries were left as the index had them)")
    for line in duplicate_lines(drift):
        warn(line)
    for line in result.get("warnings") or ():
        warn(line)
    if check_only:
        if as_json:
            print_json({**drift, "skipped": skipped})
        else:
            for key in ("missing_or_stale", "retag", "orphaned"):
                if drift[key]:
                    click.echo(f"{key.replace('_', ' ')}: {', '.join(drift[key])}")
        if result.get("exists") is False:
            click.echo("no index yet: run memfiles backfill", err=True)
        elif not as_json:
            click.echo("drift found: run memfiles backfill" if has_drift(drift) else "no drift", err=True)
        raise SystemExit(1 if has_drift(drift) or result.get("exists") is False else 0)
    if as_json:
        print_json({**result["report"], "skipped": skipped})
    else:
        click.echo(result["summary"])


def duplicate_lines(drift: dict) -> list[str]:
    """One warning per id that two entries carry: the index can hold only one of them."""
    return [
        f"{entry_id} is carried by {len(places)} entries ({', '.join(places)}): the index holds only one;"
        f" give the others ids of their own with memfiles renumber {entry_id} --at PATH:LINE"
        for entry_id, places in (drift.get("duplicate_ids") or {}).items()
    ]


def _skipped(app: App, unreadable: list[str]) -> list[dict]:
    """The files the backfill could not read, as the read commands' `skipped` findings: each with the line
    where it broke (read again here: the backfill, perhaps run by the watcher, reports only the path)."""
    if not unreadable:
        return []  # the usual case: nothing to read again
    from memfiles.contract import finding
    from memfiles.services.read import read_project

    problems = {problem.path: problem for problem in read_project(app.project).problems}
    found = []
    for path in unreadable:
        problem = problems.get(path)
        line, message = (
            (problem.line, problem.message) if problem else (None, "does not parse (memfiles check says why)")
        )
        found.append(finding("unparseable", path, line, message).as_json())
    return found


@click.command()
@click.option("--foreground", is_flag=True, help="Stay attached and log to stderr (default: start in the background).")
@click.option("--stop", "stop_", is_flag=True, help="Stop the running watcher and wait until it is gone.")
@click.option("--debounce", type=Number(0, 60), default=0.15, show_default=True, help="Seconds a file must be quiet.")
@click.option(
    "--reconcile-every",
    type=Number(0, 86400, strict=True),
    default=30.0,
    show_default=True,
    help="Seconds between whole-tree hash checks.",
)
@click.option(
    "--idle-exit",
    type=float,
    default=0.0,
    show_default=True,
    help="Exit after this many seconds without a query or a change to the memory files (0: never).",
)
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), hidden=True)
# A watcher left behind (memsearch, a write, a hook) takes its idle exit from watch_idle_exit as it starts,
# each start: the number on its command line outlived a change of the setting, which restarts it.
@click.option("--idle-exit-setting", "idle_from_settings", is_flag=True, hidden=True)
# Who started it (a search, a write, a hook, or a person: `memfiles status` says so).
@click.option("--started-by", type=click.Choice(["hand", "search", "write", "hook"]), default="hand", hidden=True)
@pass_app
def watch(
    app: App,
    foreground: bool,
    stop_: bool,
    debounce: float,
    reconcile_every: float,
    idle_exit: float,
    log_file: Path | None,
    idle_from_settings: bool,
    started_by: str,
) -> None:
    """Keep the index in step with the memory files, and answer memsearch warm.

    Watches every memory/ folder of the project (new package folders too), syncs each changed file
    once it has been quiet for the debounce window, catches up on start, reconciles on a timer, and
    serves memsearch, the write path and backfill over .memsearch/watch.sock (owner-only). One per
    project (per clone: with a Chroma server it keeps this clone's view, checkouts and pulls included,
    taking the vectors other clones shared). In the background it logs to .memsearch/watch.log,
    rotated at 1 MB (3 old files kept).
    Started here it stays until stopped (or --idle-exit); one that memsearch, a write or the agent hooks
    leave behind exits after the watch_idle_exit setting (15 min) without a query or a change.
    `memfiles status` says who started it and when it will exit.

    \b
    Example:
      memfiles watch              # in the background; returns once it answers
      memfiles watch --foreground
      memfiles watch --stop       # returns once the process is gone
    """
    import signal

    from memfiles.config import WATCH_IDLE_EXIT_MAX
    from memfiles.services.indexing.daemon import log_path, setup_logging, start_background
    from memfiles.services.indexing.index_client import running_watcher
    from memfiles.services.indexing.ipc import pid_path
    from memfiles.services.watch import Watcher

    if stop_:
        stop_watchers(app)
        return
    try:
        settings = app.settings
    except MemfilesError as error:
        if foreground and log_file is not None:  # its restart on a config broken meanwhile: the log says why
            setup_logging(log_file)
            logging.getLogger("memfiles.watch").error("could not start: %s", error)
        raise
    if idle_from_settings:
        idle_exit = settings.watch_idle_exit
    if not 0 <= idle_exit <= WATCH_IDLE_EXIT_MAX:  # nan and inf too: a typo must not mean "never" silently
        raise click.BadParameter(
            f"must be a number of seconds from 0 (never) up to {WATCH_IDLE_EXIT_MAX}, got {idle_exit:g}",
            param_hint="'--idle-exit'",
        )
    if not foreground:
        with errors_to_exit():
            running = running_watcher(settings)
        if running is not None:  # what was asked for holds: `memfiles watch && memfiles status` goes on
            click.echo(f"watcher already running (pid {running.get('pid') or pid_path(settings).read_text().strip()})")
            if idle_exit:
                click.echo("memfiles: --idle-exit not applied: the running watcher keeps its own", err=True)
            return
        with errors_to_exit():
            pid = start_background(settings, debounce, reconcile_every, idle_exit)
        click.echo(f"watcher running (pid {pid}); log: {log_path(settings)}")
        return
    with errors_to_exit():
        setup_logging(log_file, settings.watch_log_bytes)
        watcher = Watcher(
            app.project, debounce=debounce, reconcile_every=reconcile_every, idle_exit=idle_exit, started_by=started_by
        )

    def on_signal(number: int, _frame: object) -> None:
        watcher.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        with errors_to_exit():
            watcher.start()
        watcher.serve_forever()
    finally:
        watcher.stop()
    if watcher.restart:  # its settings changed: the same command, in a fresh process image, reads them
        for thread in threading.enumerate():  # a hook's deferred write (episodes, session state) ends first:
            if thread is not threading.current_thread() and not thread.daemon:  # exec would cut it short
                thread.join(timeout=60)
        if not watcher.told_to_stop:  # a stop asked for meanwhile wins
            os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


@click.command()
@json_option
@pass_app
def status(app: App, as_json: bool) -> None:
    """Say whether a watcher runs, how many entries are on disk and in the index, and any drift.

    A file that does not parse is named; the others are counted and compared all the same.
    --json prints {"root", "watcher", "index", "drift", "skipped"} (docs/json.md), instants in ISO 8601 UTC.

    \b
    Example:
      memfiles status --json
    """
    from memfiles.cli.reads import read_with_warnings
    from memfiles.services.indexing.index_client import status as index_status

    with errors_to_exit():
        reading = read_with_warnings(app)  # names each file that does not parse, at its line
        report = index_status(app.settings)
    report["skipped"] = [item.as_json() for item in reading.skipped]
    drift = report["drift"]
    catalog = report["index"].get("catalog") or {}
    failed = report["index"].get("error") or (report["index"].get("server") or {}).get("error")
    if as_json:
        print_json(report)
        raise SystemExit(1 if failed else 0)
    watcher, index = report["watcher"], report["index"]
    click.echo(f"root:     {report['root']}")
    if watcher["running"]:
        encoder = f" (queries in {watcher['query_encoder']})" if watcher.get("query_encoder") else ""
        click.echo(f"watcher:  running, pid {watcher['pid']}{encoder}")
        if watcher.get("started_by"):
            click.echo(f"          {lifetime(watcher)}")
    elif watcher.get("starting"):
        click.echo(f"watcher:  starting, pid {watcher['pid']} (it does not answer yet)")
    else:
        click.echo("watcher:  not running")
    if drift is None:
        click.echo(f"entries:  {sum(1 for _ in reading.loaded.entries())} on disk")
        error = report["index"].get("error")
        click.echo(f"index:    {error}" if error else "index:    none yet (run memfiles backfill)")
    else:
        unread = len(drift.get("unreadable") or [])
        files = "1 file that does not parse" if unread == 1 else f"{unread} files that do not parse"
        kept = f" (and those of {files}, kept as indexed)" if unread else ""
        held = "in this clone's view" if index.get("server") else "in the index"
        click.echo(f"entries:  {drift['on_disk']} on disk{kept}, {drift['indexed']} {held}")
        count = len(drift["missing_or_stale"]) + len(drift["retag"]) + len(drift["orphaned"])
        click.echo(f"drift:    {'none' if not count else f'{count} ids (memfiles backfill --check)'}")
        for line in duplicate_lines(drift):
            click.echo(f"warning:  {line}")
        if catalog and not catalog.get("in_step", True):
            click.echo("catalog:  behind the store (memsearch rebuilds it; memfiles backfill saves it)")
    click.echo(f"store:    {index.get('store')}" + (" (this clone's view)" if index.get("server") else ""))
    server = index.get("server")
    if server:
        shared = f"{server['vectors']:,} vectors shared by every clone" if server["vectors"] is not None else None
        click.echo(f"server:   {server['url']}, collection {server['collection']} ({shared or server['error']})")
    if index.get("model"):
        click.echo(f"model:    {index['model']}")
    if watcher.get("last_sync"):
        click.echo(f"synced:   {watcher['last_sync']}")
    if failed:
        raise SystemExit(1)  # what the files say is printed; the index (or its server) could not be read


STARTED_BY = {
    "hand": "by hand (memfiles watch)",
    "search": "by memsearch",
    "write": "by a write",
    "hook": "by an agent's hook",
    "mcp": "by the MCP server, in its process",
}


def lifetime(watcher: dict) -> str:
    """Who started the watcher, when, and when it will exit (docs/json.md, status)."""
    since = f" at {watcher['since']}" if watcher.get("since") else ""
    said = f"started {STARTED_BY.get(watcher['started_by'], watcher['started_by'])}{since}; "
    from memfiles.services.indexing.index_client import duration

    if watcher["started_by"] == "mcp":
        return said + "stays as long as the MCP server"
    if not watcher.get("idle_exit"):
        return said + "stays until stopped (memfiles watch --stop)"
    return said + (
        f"exits after {duration(watcher['idle_exit'])} without a query or a change (at {watcher['exits_at']}"
        " if nothing happens)"
    )


def stop_watchers(app: App) -> None:
    """`memfiles watch --stop`: the watcher that answers, or the ones starting (their pid files say). A
    config that does not load does not keep a running watcher from being stopped: its socket and pid
    files are found from the root alone, and the config's error is said as a warning."""
    from memfiles.config import Settings
    from memfiles.errors import ConfigError
    from memfiles.root import find_root
    from memfiles.services.indexing.daemon import live_watchers, stop_running
    from memfiles.services.indexing.index_client import running_watcher

    try:
        settings = app.settings
    except ConfigError as error:
        with errors_to_exit():
            settings = Settings(root=find_root(given=app.root_option))
        click.echo(f"memfiles: warning: {error}; stopping the watcher all the same", err=True)
    with errors_to_exit():
        answer = running_watcher(settings)
    # one just spawned by memsearch or a hook may not listen yet: its pid file (or the spawner's) says
    pids = [int(answer["pid"])] if answer is not None else live_watchers(settings)
    if not pids:
        click.echo("no watcher is running", err=True)
        raise SystemExit(1)
    for pid in pids:
        if not stop_running(pid):
            raise CommandError(f"the watcher (pid {pid}) is still running after SIGTERM: stop it with kill -9 {pid}", 1)
        click.echo(f"stopped the watcher (pid {pid})")
