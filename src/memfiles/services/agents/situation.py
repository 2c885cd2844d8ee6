"""What an agent is about to do, as queries the memory can answer.

A command is short and mostly arguments: `kubectl apply -f deploy/api.yaml --context prod` shares few
words with "Deploy the API to staging before production", and scored 0.24 against it. Read for what it
is about, it is a deploy of the api to production. So a situation (a command, a prompt, a run's goal)
becomes, besides its own text:

- a sentence per task it names (TASKS: deploy, release, migration, roll-back ... by the tools and words
  that say them), with the words of the situation the memory itself uses (its titles and areas: `api`
  is kept, `yaml` is not) and the environment (`--context prod`, `prod.tfvars`: to production), for
  procedures; and the same task as a run's record says it ("deploy failed ..."), for episodes;
- each command the memory writes as code (a procedure's `` `alembic upgrade head` ``) that the command at
  hand is an instance of (the same tool and subcommand, placeholders and environments aside, no
  `--force` on one side only): the index scores an entry holding a code-like query verbatim at 0.9 or
  more, so the procedure naming the very command comes first.

The caller searches every query and keeps each entry's best score (layers.merged). Stdlib only.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

ENVIRONMENTS = {
    "prod": "production",
    "prd": "production",
    "production": "production",
    "live": "production",
    "staging": "staging",
    "stage": "staging",
    "stg": "staging",
    "preprod": "staging",
    "dev": "development",
    "development": "development",
    "qa": "qa",
    "sandbox": "sandbox",
    "preview": "preview",
}


@dataclass(frozen=True)
class Task:
    """A kind of action: the sentence that names it, the words a run's record uses for it when it went
    wrong (an episode is the story of one run: "Release of 2.3 failed on the fuzz step" is far from
    "release a new version" and near "release failed"), the words that say it in a prompt (a regular
    expression on the lower-cased text), and the commands that do it, comma-separated, each `tool
    [subcommand ...] [--flag ...]`."""

    sentence: str
    run: str
    words: str
    commands: str = ""

    @cached_property
    def patterns(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(pattern.split()) for pattern in self.commands.split(",") if pattern.strip())

    def done_by(self, step: Step) -> bool:
        """Whether `step` does this task: one of its commands, or a script named for it (`./deploy_prod.sh`)."""
        if step.script and re.search(self.words, " ".join(_words(step.tool))):
            return True
        return any(_runs(step, pattern) for pattern in self.patterns if pattern[0] == step.tool.lower())


TASKS = (
    Task(
        "deploy",
        "deploy failed",
        r"\b(deploy\w*|redeploy\w*|roll(ing)? ?out|go live|(push|put) (\w+ ){0,3}live"
        r"|(ship|push|put|roll|send|promote) (\w+ ){0,3}(to|in|on|into) (prod\w*|staging|live))\b",
        "kubectl apply, kubectl rollout, kubectl set, kubectl replace, kubectl scale, helm install, helm upgrade,"
        " fly deploy, flyctl deploy, vercel, netlify deploy, wrangler deploy, wrangler pages, serverless deploy,"
        " sam deploy, cdk deploy, kamal deploy, cap, ansible-playbook, aws ecs, aws lambda, aws s3 sync,"
        " gcloud run, gcloud app, az webapp, make deploy, just deploy, deploy",
    ),
    Task(
        "release a new version",
        "release failed",
        r"\b(releas\w*|publish\w*|new version|cut (a |the )?\w* ?(release|version)|ship \d[\w.]*|changelog"
        r"|tag (and|the|a) )",
        "npm publish, pnpm publish, yarn publish, changeset publish, changeset version, twine upload,"
        " poetry publish, hatch publish, flit publish, uv publish, cargo publish, cargo release, gem push,"
        " gh release, goreleaser, semantic-release, git tag, docker push, mvn deploy, make release, just release,"
        " release",
    ),
    Task(
        "run the database migrations",
        "migration failed",
        r"\b(migrat\w*|schema change|alter table|add (a |an )?(\w+ ){0,3}(column|index)|drop column"
        r"|create (unique )?index|new table|\w+ table to (the )?(database|db|\w*sql|supabase))\b",
        "alembic, flyway, liquibase, prisma migrate, knex migrate, sequelize db:migrate, rails db:migrate,"
        " rake db:migrate, manage.py migrate, goose, dbmate, sqlx migrate, diesel migration, supabase db,"
        " supabase migration, atlas migrate, migrate",
    ),
    Task(
        "roll back a deploy",
        "rollback failed",
        r"\b(roll ?back|revert (it|the \w+|this)|undo the (deploy\w*|release))\b",
        "kubectl rollout undo, helm rollback, alembic downgrade",
    ),
    Task(
        "force push rewriting history",
        "force push lost commits",
        r"\b(force[- ]push\w*|rewrite (the )?history|reset --hard|hard reset)\b",
        "git push --force, git push --force-with-lease, git push -f, git reset --hard, git rebase,"
        " git filter-branch, git filter-repo",
    ),
    Task(
        "delete data",
        "deleted by mistake",
        r"\b(drop (the |a )?(table|database|schema)|truncate|wipe|destroy\w*)\b",
        "terraform destroy, kubectl delete, helm uninstall, aws s3 rm, dropdb",
    ),
    Task(
        "apply infrastructure changes",
        "infrastructure change failed",
        r"\b(terraform|infrastructure|pulumi|cloudformation)\b",  # in a prompt; a command by its subcommand
        "terraform apply, terraform plan, tofu apply, pulumi up, cdk deploy, aws cloudformation",
    ),
    Task(
        "run the test suite",
        "tests failed",
        r"\b(run (the |all (the )?)?(\w+ )?tests?|test suite|tests? (are |were |keep )?(fail|hang|flak)\w*)\b",
        "pytest, tox, nox, jest, vitest, playwright test, npm test, pnpm test, yarn test, cargo test, go test,"
        " mvn test, gradle test, rspec, make test",
    ),
    Task(
        "upgrade a dependency",
        "upgrade broke the build",
        r"\b(bump|upgrad\w*|dependenc\w*|update \S+ to v?\d)",
        "pnpm up, pnpm update, npm update, yarn upgrade, pip install -U, poetry update, cargo update, go get,"
        " bundle update, uv lock --upgrade",
    ),
    Task(
        "backfill past data",
        "backfill failed",
        r"\b(backfill\w*|reprocess\w*|re-?run .* (for|over) (past|the last|\w+ \d{4}))\b",
        "airflow dags backfill, airflow backfill, dbt run --full-refresh",
    ),
    Task(
        "restore from a backup",
        "restore failed",
        r"\b(restore\w*|recover (the |a )?\w+|from (a |the )?(backup|snapshot))\b",
        "pg_restore, aws rds restore-db-instance-from-db-snapshot, restic restore, velero restore",
    ),
    Task(
        "rotate a secret",
        "rotation broke",
        r"\b(rotat\w* (the |a |our )?(\w+ ){0,3}(secret|token|key|credential)s?|(secret|token|key)s? (leak|expir)\w*)",
    ),
)


def _runs(step: Step, pattern: tuple[str, ...]) -> bool:
    """Whether `step` runs `pattern`: the tool and subcommands in order as its first words, each flag among
    its flags."""
    names = [part for part in pattern if not part.startswith("-")]
    head = [step.tool.lower(), *(word.lower() for word in step.words)]
    return head[: len(names)] == names and all(part in step.flags for part in pattern if part.startswith("-"))


_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "exec", "command", "npx", "bunx", "xargs"})
_RUNNERS = {("uv", "run"), ("poetry", "run"), ("pnpm", "exec"), ("pnpm", "dlx"), ("bundle", "exec"), ("yarn", "dlx")}
_SQL_CLIENTS = frozenset({"psql", "mysql", "sqlite3", "mariadb", "clickhouse-client", "snowsql", "bq", "cqlsh"})
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "\n", "(", ")"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PLAIN = re.compile(r"^[A-Za-z][\w:.@+-]*$")  # a subcommand or a name, not a path, flag, number or URL
_PLACEHOLDER = re.compile(r"[<>{}$*]|\.\.\.|\bx\.y\.z\b|\bX\.Y\.Z\b|\bN\b", re.I)
# Flags that turn an action into a harsher one: a command with --force is not the one written without it.
_HARSH = re.compile(r"^--?(force\S*|hard|delete|prune|full-refresh|auto-approve|no-verify|D)$")
_CODE_SPAN = re.compile(r"`([^`\n]{3,200})`")
_WORD = re.compile(r"[a-z][a-z0-9]+")
_STOP_TEXT = """
the and for with from into onto that this then than when what which your our its are was were has have not
but all any one two new old use run via per off out how why who get got set can
"""
_STOP = frozenset(_STOP_TEXT.split())
QUERY_LIMIT = 300  # characters of a sentence: it is words, not the command's arguments


@dataclass(frozen=True)
class Step:
    """One simple command of a command line: its tool, its plain words (subcommands, names) and flags."""

    tool: str
    words: tuple[str, ...]
    flags: tuple[str, ...]
    tokens: tuple[str, ...]
    text: str
    script: bool = False  # a script of the project's (./deploy.sh, scripts/release.py), named for what it does

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(token for token in self.tokens if "/" in token and not token.startswith("-"))

    def head(self) -> str:
        return " ".join((self.tool, *self.words[:2]))


def steps(command: str) -> list[Step]:
    """The simple commands of a shell command line (`a && b | c`), wrappers (sudo, env, npx, uv run,
    python -m) and leading variable assignments set aside."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: the words as they stand
        tokens = command.split()
    found: list[Step] = []
    current: list[str] = []
    for token in [*tokens, ";"]:
        if token in _SEPARATORS or set(token) <= set(";&|()"):
            step = _step(current)
            if step is not None:
                found.append(step)
            current = []
        else:
            current.append(token)
    return found


def _step(tokens: list[str]) -> Step | None:
    while tokens and (_ASSIGNMENT.match(tokens[0]) or tokens[0] in _WRAPPERS):
        wrapper = tokens[0] in _WRAPPERS
        tokens = tokens[1:]
        while wrapper and tokens and tokens[0].startswith("-"):  # sudo -E, env -i: the wrapper's own flags
            tokens = tokens[1:]
    if len(tokens) >= 2 and (tokens[0], tokens[1]) in _RUNNERS:
        tokens = tokens[2:]
    if len(tokens) >= 3 and re.fullmatch(r"python[\d.]*", tokens[0]) and tokens[1] == "-m":
        tokens = tokens[2:]
    if not tokens or tokens[0] in ("cd", "export", "source", "echo", "set"):
        return None
    if tokens[0] in ("bash", "sh", "zsh") and len(tokens) >= 3 and tokens[1] == "-c":
        inner = steps(tokens[2])
        return inner[0] if inner else None
    if len(tokens) >= 2 and re.fullmatch(r"python[\d.]*|node|bash|sh|ruby|perl", tokens[0]) and "." in tokens[1]:
        tokens = tokens[1:]  # python manage.py migrate: the script is the tool
    tool = tokens[0].rsplit("/", 1)[-1]
    script = "/" in tokens[0] or bool(re.search(r"\.(sh|py|bash|rb|js|ts|pl)$", tool))
    rest = tuple(tokens[1:])
    words = tuple(t for t in rest if _PLAIN.match(t) and t.lower() not in ENVIRONMENTS)
    flags = tuple(t.split("=", 1)[0] for t in rest if t.startswith("-"))
    return Step(tool, words, flags, rest, " ".join(tokens), script)


def environment(text: str) -> str | None:
    """The environment a situation names (`--context prod`, `prod.tfvars`, "to staging"), spelled out."""
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in ENVIRONMENTS:
            return ENVIRONMENTS[word]
    return None


def tasks_of(text: str, command: bool) -> list[Task]:
    """The tasks a prompt names (by its words) or a command does (by its tool and subcommands, and the
    words of the SQL a database client is given: `psql -c "ALTER TABLE ..."`), in TASKS' order."""
    if not command:
        said = text.lower()
        return [task for task in TASKS if re.search(task.words, said)]
    found = steps(text)
    said = " ".join(" ".join(step.tokens) for step in found if step.tool in _SQL_CLIENTS).lower()
    return [
        task for task in TASKS if any(task.done_by(step) for step in found) or (said and re.search(task.words, said))
    ]


@dataclass
class Vocabulary:
    """What the memory knows of its own situations: the words of its titles and areas, and the commands
    its entries write as code (with the entry holding each)."""

    words: set[str] = field(default_factory=set)
    commands: list[tuple[Step, str]] = field(default_factory=list)  # (the step, the span as written)
    _stems: set[str] | None = None

    @classmethod
    def of(cls, entries: list[Any]) -> Vocabulary:
        """From parsed entries (anything with title, area and body)."""
        vocabulary = cls()
        for entry in entries:
            vocabulary.words.update(_words(f"{entry.title} {entry.area}"))
            for span in _CODE_SPAN.findall(entry.body):
                for step in steps(span):
                    if step.tokens:  # a command, not a bare name like `pyyaml`
                        vocabulary.commands.append((step, span))
        return vocabulary

    def known(self, text: str) -> list[str]:
        """The words of `text` (paths and flags split) that the memory's titles and areas use, in order
        (`pages` for `page`: compared by their stems)."""
        stems = self.stems()
        seen: list[str] = []
        for word in _words(text):
            if _stem(word) in stems and word not in seen:
                seen.append(word)
        return seen

    def stems(self) -> set[str]:
        if self._stems is None:
            self._stems = {_stem(word) for word in self.words}
        return self._stems

    def spans_for(self, step: Step) -> list[str]:
        """The commands the memory writes that `step` is an instance of: the same tool and subcommand, every
        other word, path and flag of the written one present (placeholders, environments and values
        aside), and the same harsh flags (--force, --hard ...) on both sides."""
        found = []
        harsh = {flag for flag in step.flags if _HARSH.match(flag)}
        present = {token.lower() for token in step.tokens}
        for written, span in self.commands:
            if written.tool != step.tool or written.words[:1] != step.words[:1]:
                continue
            if {flag for flag in written.flags if _HARSH.match(flag)} != harsh or not set(written.flags) <= set(
                step.flags
            ):
                continue
            # its other words and its paths (tests/dags is not tests/unit), placeholders aside
            rest = [w for w in (*written.words[1:], *written.paths) if not _PLACEHOLDER.search(w)]
            if all(word.lower() in present for word in rest) and span not in found:
                found.append(span)
        return found


def _words(text: str) -> list[str]:
    """Lower-case words of three letters or more (paths, flags and identifiers split), common ones out."""
    spaced = re.sub(r"[^a-z0-9]+", " ", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower())
    return [w for w in _WORD.findall(spaced) if len(w) >= 3 and w not in _STOP]


def _stem(word: str) -> str:
    """A word without its plural or verb ending (deploys, deployed, deploying: deploy), for comparing."""
    for ending, instead in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(word) > len(ending) + 3 and word.endswith(ending):
            return word[: -len(ending)] + instead
    return word


def sentence(said: str, known: list[str], where: str | None) -> str:
    """A task's words with the memory's words of the situation and its environment."""
    words = [word for word in known if word not in said and word != where]
    text = " ".join([said, *words[:8]])
    return (f"{text} to {where}" if where else text)[:QUERY_LIMIT]


@dataclass(frozen=True)
class Reading:
    """A situation read for what it is about: each task's sentence, the same task as a run's record
    says it, and the memory's own commands it is an instance of."""

    sentences: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    spans: tuple[str, ...] = ()

    def queries(self, layer: str) -> list[str]:
        """What `layer` is searched with besides the situation's own text: procedures with the tasks'
        sentences, episodes (one run's story each) with the tasks as a run says them, every layer but
        insights with the memory's commands. Lessons and insights with no sentence: on the tuning
        projects it changed nothing for them, and each query is one more search (scripts/eval_situations.py)."""
        if layer == "insight":
            return []
        said = {"procedure": self.sentences, "episode": self.runs}.get(layer, ())
        return list(dict.fromkeys([*said, *self.spans]))


def read(text: str, vocabulary: Vocabulary, command: bool = False, prose: bool = True) -> Reading:
    """`text` read as a prompt or a run's goal (`prose`), as a shell command (`command`), or both (what an
    agent passes to `recall --trigger act` may be either)."""
    found = [*(tasks_of(text, True) if command else []), *(tasks_of(text, False) if prose else [])]
    tasks = list(dict.fromkeys(found))
    known, where = vocabulary.known(text), environment(text)
    spans = [span for step in steps(text) for span in vocabulary.spans_for(step)] if command else []
    return Reading(
        tuple(dict.fromkeys(sentence(task.sentence, known, where) for task in tasks)),
        tuple(dict.fromkeys(sentence(task.run, known, where) for task in tasks)),
        tuple(dict.fromkeys(spans[:3])),
    )
