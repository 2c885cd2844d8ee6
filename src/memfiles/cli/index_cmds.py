"""Commands of the index: backfill."""

from __future__ import annotations

import click

from memfiles.cli.app import App, CommandError, errors_to_exit, json_option, pass_app, print_json


@click.command()
@click.option("--rebuild", is_flag=True, help="Start from an empty collection.")
@click.option("--check", "check_only", is_flag=True, help="Write nothing; report drift and exit 1 if there is any.")
@json_option
@pass_app
def backfill(app: App, rebuild: bool, check_only: bool, as_json: bool) -> None:
    """Bring the semantic index in line with the files: upsert every entry, delete ids that left.

    Entries whose text and model are unchanged are not embedded again. The index lives in
    .memsearch/ (or the Chroma server at index_url / --chroma-url / MEMFILES_CHROMA_URL).

    \b
    Example:
      memfiles backfill            # after a clone, or whenever in doubt
      memfiles backfill --check    # drift? exit 1 and say which ids
    """
    from memfiles.services.index import backfill as run_backfill

    with errors_to_exit():
        result = run_backfill(app.project, rebuild=rebuild, check=check_only)
    drift = result["drift"]
    drifted = bool(drift["missing_or_stale"] or drift["retag"] or drift["orphaned"])
    if check_only:
        if as_json:
            print_json(drift)
        else:
            for key in ("missing_or_stale", "retag", "orphaned"):
                if drift[key]:
                    click.echo(f"{key.replace('_', ' ')}: {', '.join(drift[key])}")
            click.echo("drift found: run memfiles backfill" if drifted else "no drift", err=True)
        raise SystemExit(1 if drifted else 0)
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
            if request(settings, {"op": "ping"}, timeout=5) is not None:
                raise CommandError(f"a watcher is already running (pid {pid_path(settings).read_text().strip()})", 1)
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

    \b
    Example:
      memfiles status --json
    """
    from memfiles.services.index import backfill as run_backfill
    from memfiles.services.index import index_exists
    from memfiles.services.ipc import request

    settings = app.settings
    with errors_to_exit():
        on_disk = sum(1 for _ in app.project.entries())
        answer = request(settings, {"op": "status"}, timeout=30)
        report: dict = {"root": str(settings.root), "entries_on_disk": on_disk}
        if answer is not None:
            answer.pop("ok", None)
            drift = run_backfill(app.project, check=True)["drift"]
            report.update(answer)
        else:
            report["watcher"] = {"running": False}
            report["store"] = settings.index_url or str(settings.index_dir / "chroma")
            drift = run_backfill(app.project, check=True)["drift"] if index_exists(settings) else None
        report["drift"] = drift
    if as_json:
        print_json(report)
        return
    watcher = report["watcher"]
    click.echo(f"watcher:  {'running, pid ' + str(watcher['pid']) if watcher['running'] else 'not running'}")
    indexed = report.get("entries_indexed", drift["indexed"] if drift else 0)
    click.echo(f"entries:  {on_disk} on disk, {indexed} in the index")
    if drift is None:
        click.echo("index:    none yet (run memfiles backfill)")
    else:
        count = len(drift["missing_or_stale"]) + len(drift["retag"]) + len(drift["orphaned"])
        click.echo(f"drift:    {'none' if not count else f'{count} ids (memfiles backfill --check)'}")
    click.echo(f"store:    {report.get('store')}")
    if report.get("model"):
        click.echo(f"model:    {report['model']}")
    if report.get("last_sync"):
        import time

        click.echo(f"synced:   {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(report['last_sync']))}")
