"""Commands of the index: backfill, watch, status."""

from __future__ import annotations

import click

from memfiles.cli.app import App, CommandError, errors_to_exit, json_option, pass_app, print_json, warn


@click.command()
@click.option("--rebuild", is_flag=True, help="Start from an empty collection.")
@click.option("--check", "check_only", is_flag=True, help="Write nothing (not even a new index); exit 1 on any drift.")
@json_option
@pass_app
def backfill(app: App, rebuild: bool, check_only: bool, as_json: bool) -> None:
    """Bring the semantic index in line with the files: upsert every entry, delete ids that left.

    Entries whose text and model are unchanged are not embedded again; a catalog left behind by a
    watcher that died, or by another client of a server, is rebuilt. A file that does not parse is
    named and its entries are left as the index has them. The index lives in .memsearch/ (or the
    Chroma server at index_url / --chroma-url / MEMFILES_CHROMA_URL). With --check, a project
    without an index exits 1 ("no index yet") and nothing is created.

    \b
    Example:
      memfiles backfill            # after a clone, or whenever in doubt
      memfiles backfill --check    # drift? exit 1 and say which ids
    """
    from memfiles.services.backfill import has_drift
    from memfiles.services.index_client import connect

    with errors_to_exit():
        result = connect(app.settings).backfill(rebuild=rebuild, check=check_only)
    drift = result["drift"]
    for path in drift["unreadable"]:
        warn(f"{path} does not parse: its entries were left as the index had them (memfiles check says why)")
    if check_only:
        if as_json:
            print_json(drift)
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
        print_json(result["report"])
    else:
        click.echo(result["summary"])


@click.command()
@click.option("--foreground", is_flag=True, help="Stay attached and log to stderr (default: start in the background).")
@click.option("--stop", "stop_", is_flag=True, help="Stop the running watcher.")
@click.option("--debounce", type=float, default=0.15, show_default=True, help="Seconds a file must be quiet.")
@click.option(
    "--reconcile-every", type=float, default=30.0, show_default=True, help="Seconds between whole-tree hash checks."
)
@pass_app
def watch(app: App, foreground: bool, stop_: bool, debounce: float, reconcile_every: float) -> None:
    """Keep the index in step with the memory files, and answer memsearch warm.

    Watches every memory/ folder of the project (new package folders too), syncs each changed file
    once it has been quiet for the debounce window, catches up on start, reconciles on a timer, and
    serves memsearch, the write path and backfill over .memsearch/watch.sock. One per project.

    \b
    Example:
      memfiles watch              # in the background; log in .memsearch/watch.log
      memfiles watch --foreground
      memfiles watch --stop
    """
    import logging
    import signal
    import subprocess
    import sys
    import time

    from memfiles.services.ipc import pid_path, request
    from memfiles.services.watch import Watcher

    settings = app.settings
    if settings.index_url:
        raise CommandError("the watcher serves the embedded index; with a Chroma server (index_url) it is not needed")
    from memfiles.services.watch.idle import idle_seconds

    with errors_to_exit():
        idle_seconds()  # a bad MEMFILES_WATCH_IDLE is refused here, not in a background process
    if stop_:
        with errors_to_exit():
            answer = request(settings, {"op": "ping"}, timeout=5)
        if answer is None:
            click.echo("no watcher is running", err=True)
            raise SystemExit(1)
        import os

        os.kill(int(answer["pid"]), signal.SIGTERM)
        click.echo(f"stopped the watcher (pid {answer['pid']})")
        return
    if not foreground:
        from memfiles.store.fileio import ensure_private_dir

        with errors_to_exit():
            running = request(settings, {"op": "ping"}, timeout=5)
        if running is not None:  # what was asked for holds: `memfiles watch && memfiles status` goes on
            click.echo(f"watcher already running (pid {running.get('pid') or pid_path(settings).read_text().strip()})")
            return
        log_path = ensure_private_dir(settings.index_dir) / "watch.log"
        command = [
            sys.executable,
            "-m",
            "memfiles.cli",
            "--root",
            str(settings.root),
            "watch",
            "--foreground",
            "--debounce",
            str(debounce),
            "--reconcile-every",
            str(reconcile_every),
        ]
        with open(log_path, "ab") as log_file:
            child = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, start_new_session=True
            )
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if child.poll() is not None:
                raise CommandError(f"the watcher exited ({child.returncode}); see {log_path}")
            try:
                if request(settings, {"op": "status"}, timeout=600) is not None:
                    click.echo(f"watcher running (pid {child.pid}); log: {log_path}")
                    return
            except Exception:
                pass
            time.sleep(0.2)
        raise CommandError(f"the watcher did not come up; see {log_path}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    with errors_to_exit():
        watcher = Watcher(app.project, debounce=debounce, reconcile_every=reconcile_every)

    def on_signal(number: int, _frame: object) -> None:
        watcher.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with errors_to_exit():
        watcher.start()
    try:
        watcher.serve_forever()
    finally:
        watcher.stop()


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
    from memfiles.services.index_client import status as index_status

    with errors_to_exit():
        reading = read_with_warnings(app)  # names each file that does not parse, at its line
        report = index_status(app.settings)
    report["skipped"] = [item.as_json() for item in reading.skipped]
    drift = report["drift"]
    catalog = report["index"].get("catalog") or {}
    if as_json:
        print_json(report)
        return
    watcher, index = report["watcher"], report["index"]
    click.echo(f"watcher:  {'running, pid ' + str(watcher['pid']) if watcher['running'] else 'not running'}")
    if drift is None:
        click.echo(f"entries:  {sum(1 for _ in reading.loaded.entries())} on disk")
        click.echo("index:    none yet (run memfiles backfill)")
    else:
        click.echo(f"entries:  {drift['on_disk']} on disk, {drift['indexed']} in the index")
        count = len(drift["missing_or_stale"]) + len(drift["retag"]) + len(drift["orphaned"])
        click.echo(f"drift:    {'none' if not count else f'{count} ids (memfiles backfill --check)'}")
        if catalog and not catalog.get("in_step", True):
            click.echo("catalog:  behind the store (memsearch rebuilds it; memfiles backfill saves it)")
    click.echo(f"store:    {index.get('store')}")
    if index.get("model"):
        click.echo(f"model:    {index['model']}")
    if watcher.get("last_sync"):
        click.echo(f"synced:   {watcher['last_sync']}")
