"""The MCP server: the project's memory as tools and resources, over stdio, with the official SDK.

Every tool is a thin use of the services the CLI uses: writes go through the one write path (the
batch refuses any file outside the project's memory folders), results are the JSON contract's
objects, and a domain error becomes a tool error with the same message the CLI would print.
When no watcher runs, the server starts one in its own process, so the model stays loaded and the
CLI's commands (recall from an agent's hooks, the write path's index updates) are answered warm too.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from memfiles import __version__
from memfiles.config import Settings
from memfiles.contract import error_for, error_object
from memfiles.errors import MemfilesError, os_error
from memfiles.format.ids import normalize_id
from memfiles.services.agents.recall import DEFAULT_K, TRIGGERS
from memfiles.store.project import Project

log = logging.getLogger("memfiles.mcp")
T = TypeVar("T")
Trigger = Literal["turn", "act", "replan", "failure", "risky", "resume", "answer", "memory-edit", "compaction"]
assert set(Trigger.__args__) == set(TRIGGERS)  # type: ignore[attr-defined]
K = Annotated[int, Field(ge=1, le=50, description="How many hits (per layer for recall).")]
Floor = Annotated[
    float | None, Field(ge=0, le=1, description="The score every hit needs, in place of each layer's floor.")
]
INSTRUCTIONS = """The project's memory: decisions, frictions, todos, lessons, facts, procedures,
episodes and insights, one Markdown entry per finding with a stable id (D-005). Call `recall` with
what you are about to do at every new turn, before acting (trigger act), after a failure (failure,
with the error text), before risky actions (risky), on resume or compaction (resume, compaction, with
your run) and before answering (answer). Keep your run's state with working_set; record what
happened with add (kind episode) and promote repeated episodes to procedures."""


def _guard(call: Callable[[], T]) -> T:
    """Run a tool body; a MemfilesError (bad input, refused write) or an OSError becomes a tool error, not a
    crash (`_Server.call_tool` answers it with the contract's error object)."""
    from memfiles.services.indexing.index_client import forget_waits

    forget_waits()  # what an earlier call found of the index is not this call's to shorten a wait with
    try:
        return call()
    except MemfilesError as error:
        raise ToolError(str(error)) from error
    except OSError as error:  # a state file that is a folder, a full disk: `io`, naming the file, as the CLI says
        said = os_error(error)
        raise ToolError(str(said)) from said


def _entry_id(text: str, width: int) -> str:
    """An id as an agent gives it (`t-1`, `@@T-001`) in canonical form; MemfilesError when it is none."""
    try:
        return normalize_id(text, width)
    except ValueError as error:
        raise MemfilesError(str(error)) from None


class Tools:
    """The tool bodies, over one project; kept apart from the SDK so that each is a plain method."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def project(self) -> Project:
        return Project(self.settings)  # cheap: files are read per call, so hand edits are always seen

    def _notify(self, project: Project, result: Any) -> str | None:
        from memfiles.services.indexing.index_client import notify

        return notify(project, result)

    def _write(
        self,
        ops: list[Any],
        request_id: str | None = None,
        warnings: list[str] | None = None,
        guard: Any = None,
        problems: list[Any] | None = None,
        allow_dangling: bool = False,
    ) -> dict[str, Any]:
        """The write, and the write object as the CLI's --json gives it (services/write.write_json): the
        batch's own warnings, a renumber's references left to check, and `renumbered`."""
        from memfiles.services.upkeep.refs import write_warnings
        from memfiles.services.write import write_json, write_ops

        project = self.project
        result, warning = write_ops(
            project,
            ops,
            request_id=request_id,
            notify=self._notify,
            guard=guard,
            problems=problems,
            allow_dangling=allow_dangling,
        )
        extra = [*(warnings or []), *([warning] if warning else [])]
        return write_json(project, result, write_warnings(project, result, extra))

    def search(self, query: str, k: int, kind: str | None, area: str | None, status: str | None) -> dict[str, Any]:
        from memfiles.limits import cut_query
        from memfiles.services.agents.recall import EntryReader, filtered_search, to_hits

        query, cut = cut_query(" ".join(query.split()))  # past the limit: its start, and a warning
        if not query:
            raise MemfilesError("query is empty: say what to look for")
        if status:
            from memfiles.services.read import resolve_statuses

            (status,) = resolve_statuses(self.settings.schema, (status,))  # "opne" is refused, as by memsearch
        filters: dict[str, Any] = {"area": area, "status": status}
        if kind:
            from memfiles.services.read import resolve_kinds

            (found,) = resolve_kinds(self.settings.schema, (kind,))  # name or prefix, any case: memsearch's rule
            filters["kind"] = found.name
        filters = {key: value for key, value in filters.items() if value}
        warnings: list[str] = [cut] if cut else []
        raw, _source = filtered_search(self.settings, [(query, filters, k)], warnings=warnings)
        hits = to_hits(EntryReader(self.project), raw[0], query, k)
        from memfiles.services.indexing.search_text import pruned_notes  # a pruned id asked for, as memsearch says it

        warnings += pruned_notes(self.settings.memory_dir, self.settings.schema.prefixes, query, hits)
        return {"query": query, "hits": hits, "warnings": warnings}

    def show(self, entry_id: str) -> dict[str, Any]:
        """As `show --json`: a pruned id gives the entry as it was; a file that does not parse is named in
        `skipped` and the others are read."""
        from memfiles.services.read import show_json

        return show_json(self.project, _entry_id(entry_id, self.settings.schema.id_width))

    def add(self, fields: dict[str, Any], unique: bool, allow_dangling: bool = False) -> dict[str, Any]:
        from memfiles.services.upkeep.unique import check_adds
        from memfiles.store.ops import parse_op

        op = {"op": "add", **{key: value for key, value in fields.items() if value not in (None, [], "")}}
        parsed = parse_op(op, 1, self.settings.schema, self.settings.wrap)
        checked = {"op": "add", "title": parsed.get("title"), "body": parsed.get("body")}
        warnings, guard = check_adds(self.project, [checked], unique)  # refuses (a tool error) with unique
        return self._write([parsed], warnings=warnings, guard=guard, allow_dangling=allow_dangling)

    def import_ops(
        self, ops: list[dict[str, Any]], request_id: str | None, allow_dangling: bool = False
    ) -> dict[str, Any]:
        from memfiles.store.ops import check_ops

        # as `memfiles import` does: every op's problems, with the batch's own checks (missing ids,
        # successors) of the well-formed ones, in one error; then nothing is written
        parsed, problems = check_ops({"ops": ops}, self.settings.schema, self.settings.wrap)
        return self._write(parsed, request_id, problems=problems, allow_dangling=allow_dangling)


class Unconfigured:
    """Stands in for Tools when the project's configuration cannot be used: every tool call and resource
    read is an error saying why, so that the agent reads the reason instead of a closed connection."""

    def __init__(self, error: MemfilesError) -> None:
        self.error = error

    def __getattr__(self, name: str) -> Any:
        served = MemfilesError(
            f"memfiles cannot serve this project: {self.error} (fix it, then restart the MCP server)"
        )
        for place in ("code", "path", "line", "key", "field"):  # the error object names what to fix, as the CLI's
            if hasattr(self.error, place):
                setattr(served, place, getattr(self.error, place))
        raise served


class _Server(MCPServer):
    """The SDK's server, with every tool error answered as the contract's error object (docs/json.md, as
    `--json` prints it) in the result's text, marked as an error: a refusal keeps its code and the file
    and line, op and field, or config key it names. Arguments that fail the tool's schema are said as the
    CLI says a bad option (`k: must be at most 100 (got 500)`, not pydantic's report and its link), and an
    argument the tool does not take is refused, as the CLI refuses an unknown option."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        schema = self._tool_input_schema(name) or {}
        known = schema.get("properties")
        unknown = sorted(set(arguments or {}) - set(known)) if isinstance(known, dict) else []
        if unknown:  # the SDK drops them in silence: `kinds` for `kind` searched everything
            said = f"{', '.join(unknown)}: not an argument of {name} (its arguments: {', '.join(known)})"
            return _refused(name, error_object("usage", said))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if type(error) is not ToolError:  # an UnexpectedToolError: a crash of the tool's body stays one
                raise
            cause = error.__cause__
            while cause is not None and not isinstance(cause, MemfilesError):  # the SDK wraps _guard's
                cause = cause.__cause__
            if isinstance(cause, MemfilesError):
                return _refused(name, error_for(cause))
            cause = error.__cause__
            if type(cause).__name__ == "ValidationError" and hasattr(cause, "errors"):  # the tool's schema
                said = "; ".join(_argument_problem(problem) for problem in cause.errors())
                return _refused(name, error_object("usage", said))
            prefix = f"Error executing tool {name}: "  # anything else the SDK refused (an unknown tool)
            return _refused(name, error_object("usage", str(error).removeprefix(prefix)))


def _refused(name: str, error: dict[str, Any]) -> CallToolResult:
    """A tool error whose text is the contract's error object as JSON."""
    logging.getLogger(__name__).info("tool %r refused: %s", name, error["error"]["message"])
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(error, ensure_ascii=False))], is_error=True)


def _argument_problem(problem: dict[str, Any]) -> str:
    """One pydantic error as `argument: what is wrong (got value)`."""
    where = ".".join(str(part) for part in problem.get("loc", ())) or "arguments"
    message = str(problem.get("msg", "is not valid"))
    message = message[:1].lower() + message[1:]
    given = problem.get("input")
    got = "" if problem.get("type") == "missing" else f" (got {json.dumps(given, default=str)[:80]})"
    return f"{where}: {message}{got}"


def build(settings: Settings | None, tools: Any = None) -> MCPServer:
    """The server with its tools and resources, for the project of `settings` (or over `tools`)."""
    tools = tools if tools is not None else Tools(settings)  # type: ignore[arg-type]
    server = _Server(name="memfiles", instructions=INSTRUCTIONS, version=__version__)

    @server.tool()
    def search(
        query: str,
        k: K = 10,
        kind: str | None = None,
        area: str | None = None,
        status: str | None = None,
    ) -> dict[str, Any]:
        """Search the project's memory by meaning; ids (F-014), flags and error strings also hit exactly.

        Returns {"query", "hits": [{"rank", "score", "signals", "entry"}], "warnings"}. Working memory is
        left out unless kind is "working".
        """
        return _guard(lambda: tools.search(query, k, kind, area, status))

    @server.tool()
    def recall(
        query: str = "", trigger: Trigger = "turn", run: str | None = None, k: K = DEFAULT_K, floor: Floor = None
    ) -> dict[str, Any]:
        """Recall prior experience for what you are about to do, by layer in order: procedure, episode,
        lesson (known failure patterns and their fixes), insight, working. The trigger (turn, act, replan,
        failure, risky, resume, answer, memory-edit, compaction) decides which layers are mandatory; a hit
        scores its layer's floor or more (floor: one for every layer, 0 for all), and each group says when
        it is empty and why. A promoted episode gives way to its procedure. For a failure, pass the error
        text: episodes are matched on its error signature."""
        from memfiles.services.agents.recall import recall as recall_service

        return _guard(lambda: recall_service(tools.project, query, trigger, run, k, floor))

    @server.tool()
    def show(id: str) -> dict[str, Any]:
        """One entry by id (D-005 or @@D-005): {"entry": {...}, "skipped": [...]} with its path, line,
        metadata and body; a pruned id gives the entry as it was, `pruned` saying when and why."""
        return _guard(lambda: tools.show(id))

    @server.tool()
    def add(
        kind: str,
        title: str,
        area: str,
        body: str,
        status: str | None = None,
        refs: list[str] | None = None,
        tags: list[str] | None = None,
        evidence: list[str] | None = None,
        file: str | None = None,
        section: str | None = None,
        date: str | None = None,
        unique: bool = False,
        allow_dangling: bool = False,
    ) -> dict[str, Any]:
        """Add an entry through the one write path; returns the write object (added ids, the entry).

        A near-duplicate of an existing entry is a warning (with unique=true: refused). kind is decision,
        friction, todo, lesson, fact, procedure, episode or insight; title one line of at most 120
        characters; the body stands alone. evidence: entry ids, files, commit:SHA, run:ID. date:
        YYYY-MM-DD, default today (an older note imported with its own date). refs must name entries that
        exist; allow_dangling=true keeps one that does not, with a warning.
        """
        fields = {
            "kind": kind,
            "title": title,
            "area": area,
            "body": body,
            "status": status,
            "refs": refs,
            "tags": tags,
            "evidence": evidence,
            "file": file,
            "section": section,
            "date": date,
        }
        return _guard(lambda: tools.add(fields, unique, allow_dangling))

    @server.tool(name="import")
    def import_ops(
        ops: list[dict[str, Any]], request_id: str | None = None, allow_dangling: bool = False
    ) -> dict[str, Any]:
        """Apply a batch of ops all or nothing ({"op": "add"|"update"|"retire"|"prune"|"section", ...}).

        With request_id, a batch already applied changes nothing and returns the first result again
        (replayed: true). An error names the op's position and field; then nothing is written.
        allow_dangling=true keeps refs to ids that do not exist, with a warning.
        """
        return _guard(lambda: tools.import_ops(ops, request_id, allow_dangling))

    @server.tool()
    def working_get(run: str | None = None) -> dict[str, Any]:
        """A run's working memory exactly as last saved: {"working": {goal, stage, hypothesis, last_action,
        last_observation, next_step, blockers, evidence_refs, active_action_ids, todo_active, todo_done,
        todo_blocked}}. Default run: the one active run."""
        from memfiles.services.agents import working

        def body() -> dict[str, Any]:
            project = tools.project
            return {"working": working.require(project, working.resolve_run(project, run)).as_json()}

        return _guard(body)

    @server.tool()
    def working_set(
        run: str | None = None,
        goal: str | None = None,
        stage: str | None = None,
        hypothesis: str | None = None,
        last_action: str | None = None,
        last_observation: str | None = None,
        next_step: str | None = None,
        blockers: list[str] | None = None,
        evidence_refs: list[str] | None = None,
        active_action_ids: list[str] | None = None,
        add_evidence: list[str] | None = None,
        todo_add: list[str] | None = None,
        todo_done: list[str] | None = None,
        todo_block: list[str] | None = None,
        end: bool = False,
        episode: bool = False,
    ) -> dict[str, Any]:
        """Save a run's working memory (starting the run when it has none: give goal). Fields given
        replace the saved ones (lists too); the others stay. Todos are task-level: todo_add takes task
        texts, todo_done and todo_block take todo ids or exact texts. end closes the run; with episode,
        it is recorded as an episode first. Returns {"working": ..., "added": [new ids]}."""
        from memfiles.mcp.working_tool import working_set as apply

        values = {
            "goal": goal,
            "stage": stage,
            "hypothesis": hypothesis,
            "last_action": last_action,
            "last_observation": last_observation,
            "next_step": next_step,
            "blockers": blockers,
            "evidence_refs": evidence_refs,
            "active_action_ids": active_action_ids,
        }
        todos = {"add": todo_add or [], "done": todo_done or [], "blocked": todo_block or []}
        return _guard(lambda: apply(tools, run, values, add_evidence or [], todos, end, episode))

    @server.tool()
    def promote(
        ids: list[str],
        to: Literal["procedure", "insight"],
        reason: str,
        title: str | None = None,
        body: str | None = None,
        area: str | None = None,
        again: bool = False,
    ) -> dict[str, Any]:
        """Promote episodes (E-003, E-007) to a procedure or an insight: a new entry citing them as
        evidence; each episode records what it was promoted to. Returns the write object. An episode
        already promoted to an entry of that kind is refused, naming it, unless again is true."""
        from memfiles.services.agents.promote import promote as promote_service

        def body_() -> dict[str, Any]:
            project = tools.project
            done = promote_service(
                project, ids, to, reason, title=title, body=body, area=area, notify=tools._notify, again=again
            )
            return done.as_json(project)

        return _guard(body_)

    @server.resource("memfiles://persona", name="persona", mime_type="text/markdown")
    def persona_resource() -> str:
        """The persona: behaviour configuration for agents (memory/persona.md); never a search hit."""
        from memfiles.services.agents.persona import persona

        return persona(tools.project)["text"]

    @server.resource("memfiles://{entry_id}", name="entry", mime_type="text/markdown")
    def entry_resource(entry_id: str) -> str:
        """One memory entry by id, as Markdown, headed by the file and line it lives at."""
        from memfiles.format.render import render_entry
        from memfiles.services.read import PrunedEntry, find_entry, read_project

        try:
            found = find_entry(read_project(tools.project), entry_id, tools.settings.schema)
        except (MemfilesError, ValueError) as error:  # ValueError: not an id at all (memfiles://second)
            raise ResourceNotFoundError(str(error)) from error
        if isinstance(found, PrunedEntry):
            record = found.record
            said = f"pruned on {record.get('date', '?')} from {record.get('path', '?')}: {record.get('reason', '')}"
            return f"<!-- {found.entry.id} was {said} -->\n{render_entry(found.entry)}\n"
        return f"<!-- {found.where} -->\n{render_entry(found.entry)}\n"

    return server


def start_watcher(settings: Settings) -> Any:
    """A watcher in this process when none runs for the project (None when one does, or it cannot)."""
    from memfiles.services.indexing.index_client import running_watcher

    try:
        if running_watcher(settings, timeout=2) is not None:
            return None  # one runs: every call goes through its socket
        from memfiles.services.watch import Watcher
    except (MemfilesError, ImportError) as error:
        log.warning("no watcher in the MCP server: %s", error)
        return None
    watcher = Watcher(Project(settings), started_by="mcp")  # it lives as long as the server

    def run() -> None:
        try:
            watcher.start()
        except Exception as error:  # the tools still work, opening the store per call
            log.warning("the MCP server could not start its watcher: %s", error)

    threading.Thread(target=run, name="memfiles-mcp-watcher", daemon=True).start()
    return watcher


def serve_unconfigured(error: MemfilesError) -> None:
    """Serve over stdio with every tool answering `error` (a project whose config file is broken)."""
    build(None, Unconfigured(error)).run("stdio")


def serve(settings: Settings, watch: bool = True) -> None:
    """Serve over stdio until the client closes the connection."""
    watcher = start_watcher(settings) if watch else None
    try:
        build(settings).run("stdio")
    finally:
        if watcher is not None and watcher.ready.is_set():
            watcher.stop()
