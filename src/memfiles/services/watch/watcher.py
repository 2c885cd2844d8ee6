"""The watcher's life: take ownership of the index, catch up, watch the memory folders, serve the socket,
and run the worker, reconcile and idle threads until told to stop."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from memfiles.errors import LockTimeout, MemfilesError, ParseError
from memfiles.services.indexing.ipc import pid_path, serve, socket_path
from memfiles.services.watch.events import Debouncer, Handler
from memfiles.store.fileio import ensure_private_dir, identity, read_text
from memfiles.store.lock import FileLock
from memfiles.store.project import Project

log = logging.getLogger("memfiles.watch")


class WatcherRunning(MemfilesError):
    """Another watcher owns this project's index."""

    exit_code = 1


OUTGOING_WAIT = 30.0  # seconds a new watcher waits for one on its way out (its stop saves the catalog)


def _answers(settings: Any) -> bool:
    """Whether a watcher answers on the project's socket (one on its way out has taken it away)."""
    from memfiles.services.indexing.index_client import running_watcher

    try:
        return running_watcher(settings) is not None
    except MemfilesError:
        return True  # one that listens but fails to answer is still there


class Watcher:
    """The one owner of a project's embedded index while it runs."""

    def __init__(
        self,
        project: Project,
        debounce: float = 0.15,
        reconcile_every: float = 30.0,
        idle_exit: float = 0.0,
        started_by: str = "hand",
    ) -> None:
        self.project = project
        self.settings = project.settings
        self.reconcile_every = reconcile_every
        self.idle = project.settings.watch_save_after  # seconds without a sync before the idle save
        self.idle_exit = idle_exit  # seconds without a query or a change before it exits on its own; 0: never
        self.started_by = started_by  # hand, search, write, hook or mcp: `memfiles status` says it
        self.last_active = time.monotonic()
        self.debouncer = Debouncer(debounce)
        self.stopping = threading.Event()
        self.ready = threading.Event()
        self.failed: str | None = None  # why start() failed, for clients that asked meanwhile
        self.uprooted = False  # its project folder or index folder went away (stale)
        self.restart = False  # its settings changed (stale): run the same command again
        self.told_to_stop = False  # a signal or the idle exit: never restart
        self._leaving = threading.Lock()  # stale() and request_stop() decide restart one at a time
        self._socket_file: int | None = None  # the inodes of the socket and pid file this watcher made
        self._pid_file: int | None = None
        self.watched: set[Path] = set()
        self._watches: dict[Path, Any] = {}  # folder -> watchdog's ObservedWatch, kept after the folder goes
        self._threads: list[threading.Thread] = []
        self._exit = contextlib.ExitStack()

    # The keeper's parts, as the watcher's own (tests and status read them).
    @property
    def session(self) -> Any:
        return self.keeper.session

    @property
    def state(self) -> Any:
        return self.keeper.state

    @property
    def catalog(self) -> Any:
        return self.keeper.catalog

    def start(self) -> None:
        """Take ownership, open the index, catch up, then watch and serve. Raises WatcherRunning."""
        from memfiles.services.indexing.daemon import starting_path
        from memfiles.services.indexing.index_session import open_index
        from memfiles.services.watch.idle import rebuild_when_idle
        from memfiles.services.watch.keeper import IndexKeeper

        ensure_private_dir(self.settings.index_dir)
        owner = FileLock(self.settings.index_dir / "watch.lock", timeout=0.0, busy="a watcher is running")
        try:
            owner.acquire()
        except LockTimeout:
            if _answers(self.settings):
                pid = read_text(pid_path(self.settings)).strip() if pid_path(self.settings).exists() else "?"
                raise WatcherRunning(f"a watcher is already running for {self.project.root} (pid {pid})") from None
            # The owner took its socket away: it is on its way out (stopped, or stale); wait for it.
            owner = FileLock(owner.path, timeout=OUTGOING_WAIT, busy="a watcher is stopping")
            try:
                owner.acquire()
            except LockTimeout:
                raise WatcherRunning(f"a watcher for {self.project.root} is still stopping") from None
        self._exit.callback(owner.release)
        self._origin = self._where()
        if not self._same_settings():  # changed between reading them and now: the first call restarts it
            self._origin = (None, *self._origin[1:])
        pid_path(self.settings).write_text(f"{os.getpid()}\n")
        self._pid_file = pid_path(self.settings).stat().st_ino
        self._exit.callback(self._withdraw)
        starting_path(self.settings).unlink(missing_ok=True)  # the owner is known now
        self._serve()
        try:
            # The watcher holds the store lock for its whole life: no other process opens the embedded store.
            session = self._exit.enter_context(open_index(self.settings, timeout=self.settings.lock_timeout))
            self.keeper = IndexKeeper(self.project, session)
            result = self.keeper.backfill(rebuild=False, check=False)  # changes made while no watcher ran
            log.info("caught up: %s", result["summary"])
            self._observe()
        except BaseException as error:  # clients waiting for `ready` are told at once, not after minutes
            self.failed = str(error) or type(error).__name__
            log.error("could not start: %s", self.failed)
            raise
        self.active()  # the idle exit counts from the end of the catch-up, however long it took
        self.ready.set()
        for target, name, args in (
            (self._work, "sync", ()),
            (self._reconcile_loop, "reconcile", ()),
            (rebuild_when_idle, "idle", (self.keeper, self.stopping, self.idle)),
            *([(self._exit_when_idle, "idle-exit", ())] if self.idle_exit > 0 else []),
        ):
            thread = threading.Thread(target=target, args=args, name=f"memfiles-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("watching %s (%d entries indexed)", self.project.root, len(self.keeper.catalog.docs))

    def stop(self) -> None:
        self.stopping.set()
        self.debouncer.wake.set()
        for thread in self._threads:
            thread.join(timeout=5)
        if hasattr(self, "keeper"):
            self.keeper.settle(timeout=30)
        try:
            if hasattr(self, "keeper") and not self.uprooted:  # a save would make the moved folders anew
                self.keeper.persist()
        except Exception:  # the catalog is derived: losing this save costs a rebuild, never the shutdown
            log.exception("could not save the catalog on the way out")
        finally:
            self._exit.close()
        if hasattr(self, "keeper"):  # one that never started (another watcher runs) has nothing to stop
            log.info("stopped")

    def serve_forever(self) -> None:
        while not self.stopping.wait(0.5):
            pass

    def _serve(self) -> None:
        from memfiles.services.watch.dispatch import answer

        server = serve(socket_path(self.settings), lambda request: answer(self, request))
        self._socket_file = socket_path(self.settings).stat().st_ino  # taken away by _withdraw, on exit
        self._exit.callback(server.server_close)
        self._exit.callback(server.shutdown)

    # --- staying the project's watcher -------------------------------------------------------------

    def _where(self) -> tuple[Any, ...]:
        """What the watcher's settings and paths were read from: the config files' stamps, and the
        identity of the root folder and of its index folder (a folder deleted and made again by a
        backfill is another folder: this watcher's store files are gone with the old one)."""
        from memfiles.config import config_stamp

        return (config_stamp(self.project.root), identity(self.project.root), identity(self.settings.index_dir))

    def _withdraw(self, pid_too: bool = True) -> None:
        """Take this watcher's socket away (and, on its exit, its pid file): no client reaches it, and a
        new watcher may start (it waits for this one's lock). Never a successor's files at those paths.
        A stopping watcher keeps its pid file until it exits, so that `watch --stop` still finds it."""
        files = [(socket_path(self.settings), self._socket_file)]
        if pid_too:
            files.append((pid_path(self.settings), self._pid_file))
        for path, inode in files:
            with contextlib.suppress(OSError):
                if inode is not None and path.stat().st_ino == inode:
                    path.unlink()

    def stale(self) -> str | None:
        """Why this watcher no longer serves its project as the files stand, or None: its settings changed
        (new kinds, another model...), the project folder moved away, or its index folder was deleted.
        Such a watcher answers nothing more and exits (on a change of settings its process starts again:
        `restart`); clients go on without it meanwhile. (Before, it answered with the old settings: an
        entry of a new kind was never indexed, and backfill asked it and said there was no drift.)
        A config file changed in a way that leaves the settings as they were (a version bump in
        pyproject.toml) changes nothing."""
        origin = getattr(self, "_origin", None)
        if origin is None:
            return None
        now = self._where()
        if now == origin:
            return None
        uprooted = now[1] != origin[1] or now[2] != origin[2]
        if not uprooted and self._same_settings():
            self._origin = now  # the bytes changed, the settings did not
            return None
        if now[1] != origin[1]:
            reason = f"the project folder {self.project.root} moved or is gone"
        elif now[2] != origin[2]:
            reason = f"its index folder {self.settings.index_dir} was deleted (or made anew)"
        else:
            reason = "the configuration changed (memory/memfiles.toml or pyproject.toml)"
        with self._leaving:
            if not self.stopping.is_set():
                self.uprooted = uprooted  # nothing of it to save where it was
                self.restart = not uprooted and not self.told_to_stop  # the same command runs again (cli watch)
                log.info("%s: %s", reason, "starting again on it" if self.restart else "exiting")
                self.stopping.set()
                self.debouncer.wake.set()
                self._withdraw(pid_too=False)
        return reason

    def _same_settings(self) -> bool:
        """Whether the config files, read now, give the settings this watcher runs on (False when they
        cannot be read: its next process says why)."""
        from memfiles.config import load_settings

        try:
            return load_settings(self.project.root) == self.settings
        except Exception:
            return False

    def request_stop(self) -> None:
        """Stop for good (a signal, `watch --stop`, the idle exit): a change seen meanwhile restarts nothing."""
        with self._leaving:
            self.told_to_stop = True
            self.restart = False
            self.stopping.set()
            self.debouncer.wake.set()
            self._withdraw(pid_too=False)

    # --- events -----------------------------------------------------------------------------------

    def active(self) -> None:
        """A query or a change: the idle exit counts from now."""
        self.last_active = time.monotonic()

    def exits_at(self) -> float | None:
        """When (time.time()) the idle exit stops it if nothing happens meanwhile; None when it never does."""
        if self.idle_exit <= 0:
            return None
        return time.time() + max(0.0, self.idle_exit - (time.monotonic() - self.last_active))

    def touched(self, path: Path) -> None:
        if self.project.is_memory_path(path):
            self.active()
            self.debouncer.touched(self.project.rel(path))

    def forget_folder(self, folder: Path) -> None:
        """A folder deleted or moved away: every indexed file below it is gone (or elsewhere now)."""
        prefix = self.project.rel(folder).rstrip("/") + "/"
        with self.keeper.mutex:
            paths = {doc.path for doc in self.keeper.catalog.docs.values() if doc.path.startswith(prefix)}
        for rel in paths:
            self.touched(self.project.root / rel)
        self.watched = {w for w in self.watched if not str(w).startswith(str(folder))}

    def _observe(self) -> None:
        from watchdog.observers import Observer

        self.observer = Observer()
        self.handler = Handler(self.touched, self.debouncer.rediscover_soon, self.forget_folder)
        # The root itself, not recursively: a new package folder shows up as a created directory.
        self.observer.schedule(self.handler, str(self.project.root), recursive=False)  # type: ignore[arg-type]
        self._schedule_memory_dirs()
        self.observer.start()

        def stop_observer() -> None:
            self.observer.stop()
            self.observer.join(timeout=5)

        self._exit.callback(stop_observer)

    def _schedule_memory_dirs(self) -> list[Path]:
        added = []
        for folder in self.project.memory_dirs():
            if folder not in self.watched:
                stale = self._watches.pop(folder, None)
                if stale is not None:
                    # The folder was deleted and made again (a branch without it and back, `git stash -u`):
                    # watchdog would hand back the same watch, whose emitter died with the old folder, and
                    # nothing in the new one would be seen until a restart. So that watch goes first.
                    with contextlib.suppress(KeyError):
                        self.observer.unschedule(stale)
                self._watches[folder] = self.observer.schedule(self.handler, str(folder), recursive=True)  # type: ignore[arg-type]
                self.watched.add(folder)
                added.append(folder)
        return added

    # --- the worker threads -----------------------------------------------------------------------

    def _work(self) -> None:
        debouncer = self.debouncer
        while not self.stopping.is_set():
            debouncer.wake.wait(timeout=1.0)
            debouncer.wake.clear()
            if debouncer.rediscover.is_set():
                debouncer.rediscover.clear()
                for folder in self._schedule_memory_dirs():
                    log.info("watching new memory folder %s", self.project.rel(folder))
                    for path in folder.rglob("*.md"):
                        self.touched(path)
            time.sleep(min(debouncer.window / 3, 0.05))
            paths = debouncer.take_quiet()
            if paths:
                try:
                    self.keeper.sync_paths(paths)
                except Exception:  # an index fault is logged; the loop goes on
                    log.exception("sync of %d files failed", len(paths))

    def _exit_when_idle(self) -> None:
        """Stop the watcher once nothing has asked it anything or changed a memory file for `idle_exit` s."""
        step = min(30.0, max(0.1, self.idle_exit / 10))
        while not self.stopping.wait(step):
            quiet = time.monotonic() - self.last_active
            if quiet >= self.idle_exit:
                log.info("no query and no change for %.1f s (idle exit after %g s): exiting", quiet, self.idle_exit)
                self.request_stop()

    def _reconcile_loop(self) -> None:
        while not self.stopping.wait(self.reconcile_every):
            if self.stale():
                return
            self.debouncer.rediscover_soon()
            try:
                self.keeper.reconcile()
            except ParseError:
                pass  # a file mid-edit: its own sync will report it
            except Exception:
                log.exception("reconcile failed")
