"""Configuration: every setting and environment variable checked against its rule, with the file and key
(or the variable) named in the refusal, exit 2, and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.errors import ConfigError
from tests.conftest import REPO, Run, snapshot

# (what the file says, the key the error must name, words the message must hold)
BAD_SETTINGS = [
    ("wrap = true", "wrap", "got true"),
    ("wrap = 1", "wrap", "0 (off) or a whole number from 20 to 1000"),
    ("wrap = 100.0", "wrap", "got 100.0"),
    ('wrap = "100"', "wrap", 'got "100"'),
    ("stale_days = 1.9", "stale_days", "a whole number from 1 to 36500, got 1.9"),
    ("stale_days = 0", "stale_days", "got 0"),
    ("stale_days = false", "stale_days", "got false"),
    ("id_width = -3", "id_width", "a whole number from 1 to 9, got -3"),
    ("id_width = 12", "id_width", "got 12"),
    ("title_limit = 5", "title_limit", "from 10 to 1000"),
    ("body_limit = 0", "body_limit", "from 100 to 1000000"),
    ("index_timeout = 0", "index_timeout", "above 0 up to 600"),
    ("index_timeout = nan", "index_timeout", "got nan"),
    ("index_timeout = true", "index_timeout", "got true"),
    ('index_timeout = "2"', "index_timeout", 'got "2"'),
    ("lock_timeout = -1", "lock_timeout", "from 0 up to 3600"),
    ("lock_timeout = inf", "lock_timeout", "got inf"),
    ("watch_idle_exit = -5", "watch_idle_exit", "from 0 up to 604800"),
    ('watch_idle_exit = "2h"', "watch_idle_exit", 'got "2h"'),
    ('watch_torch = "no"', "watch_torch", "true or false (unquoted in a file; a variable also takes 1/0"),
    ('bulk_precision = "fp16"', "bulk_precision", 'must be "auto" or "float32" or "bfloat16", got "fp16"'),
    ('index_url = "not a url"', "index_url", "http:// or https:// URL (or host:port)"),
    ('index_url = "ftp://host"', "index_url", 'got "ftp://host"'),
    ('index_url = "http://host:99999"', "index_url", "got"),
    ("index_url = 8000", "index_url", "got 8000"),
    ('index_url = "http://user:pw@host:8000"', "index_url", "with no user, query or fragment"),
    ('index_url = "http://host:8000/?tenant=x"', "index_url", "with no user, query or fragment"),
    ('index_collection = "my project"', "index_collection", "must be 1-40 letters, digits"),
    ("llm_timeout = 0", "llm_timeout", "above 0 up to 3600"),
    ('llm_timeout = "2m"', "llm_timeout", 'got "2m"'),
    ('index_collection = "a..b"', "index_collection", "(no '..')"),
    ('index_collection = "-team"', "index_collection", 'got "-team"'),
    ("index_collection = 7", "index_collection", "got 7"),
    ('llm_url = "localhost:8080"', "llm_url", "must be an http:// or https:// URL, got"),
    ('llm_url = ""', "llm_url", 'got ""'),
    ('model = ""', "model", "non-empty"),
    ('model = "~no-such-user-xyz/model"', "model", "names a home folder that does not exist"),
    ("llm_model = 3", "llm_model", "non-empty string"),
    ('docs_dir = "/etc"', "docs_dir", "relative to the project root"),
    ('skills_dir = "../elsewhere"', "skills_dir", "inside it"),
    ('exclude = "vendor/*"', "exclude", "a list of glob patterns"),
    ("exclude = [1]", "exclude", "got [1]"),
    ('refs_exclude = [""]', "refs_exclude", "a list of glob patterns"),
    ('open_statuses = "open"', "open_statuses", "a list of statuses"),
    ('open_statuses = ["opne"]', "open_statuses", "'opne' is not a status any kind has"),
    ('open_statuses = ["retired"]', "open_statuses", "'retired' is not a status"),
    ("stale-days = 3", "stale-days", "did you mean 'stale_days'?"),
    ("colour = 'red'", "colour", "unknown setting 'colour'"),
    ("kinds = 3", "kinds", "must be a table of [kinds.NAME] tables"),
    ("[kinds.Risk]\nprefix = 'R'", "kinds.Risk", "lowercase word"),
    ("[kinds]\nrisk = 'R'", "kinds.risk", "must be a table with prefix, statuses, file"),
    ("[kinds.risk]\nprefix = 'R'\ncolour = 1", "kinds.risk", "unknown keys colour"),
    (
        "[kinds.episode]\nstatuses = ['recorded']",
        "kinds.episode.statuses",
        "must keep 'promoted': `memfiles promote` reads recorded episodes",
    ),
    ("[kinds.working]\nstatuses = ['active']", "kinds.working.statuses", "must keep 'done', 'blocked', 'ended'"),
    (
        "[kinds.working]\nstatuses = ['ended', 'active', 'done', 'blocked']",
        "kinds.working.statuses",
        "must start with 'active', the status a new working gets",
    ),
    (
        "[kinds.episode]\nstatuses = ['promoted', 'recorded']",
        "kinds.episode.statuses",
        "must start with 'recorded'",
    ),
    ("[kinds.risk]\nprefix = 'R'\nfile = 'persona.md'", "kinds.risk.file", "memory/persona.md is the agents' persona"),
    ("[kinds.risk]\nprefix = 'R'\nfile = 'working/risks.md'", "kinds.risk.file", "holds runs' working memory only"),
    ("[kinds.working]\nfile = 'runs.md'", "kinds.working.file", "holds runs' working memory only"),
    ("[kinds.risk]\nfile = 'risks.md'", "kinds.risk.prefix", "a new kind needs a prefix"),
    ("[kinds.risk]\nprefix = 'r'", "kinds.risk.prefix", 'got "r"'),
    ("[kinds.risk]\nprefix = 'R-1'", "kinds.risk.prefix", "capital letters or digits"),
    ("[kinds.risk]\nprefix = 'ABCDEFGHI'", "kinds.risk.prefix", "1 to 8"),
    ("[kinds.risk]\nprefix = 7", "kinds.risk.prefix", "got 7"),
    ("[kinds.risk]\nprefix = 'R'\nstatuses = []", "kinds.risk.statuses", "distinct lowercase words"),
    ("[kinds.risk]\nprefix = 'R'\nstatuses = ['open', 'open']", "kinds.risk.statuses", "distinct"),
    ("[kinds.risk]\nprefix = 'R'\nstatuses = 'open'", "kinds.risk.statuses", 'got "open"'),
    ("[kinds.risk]\nprefix = 'R'\nstatuses = ['Open Now']", "kinds.risk.statuses", "lowercase words"),
    ("[kinds.risk]\nprefix = 'R'\nfile = 'risks.txt'", "kinds.risk.file", "a .md file name"),
    ("[kinds.risk]\nprefix = 'R'\nfile = '../risks.md'", "kinds.risk.file", 'got "../risks.md"'),
    ("[kinds.risk]\nprefix = 'R'\nfile = '/tmp/risks.md'", "kinds.risk.file", "inside memory/"),
    ("[kinds.risk]\nprefix = 'D'", "kinds", "two kinds share the prefix D"),
]


@pytest.mark.parametrize(("text", "key", "words"), BAD_SETTINGS, ids=[case[0] for case in BAD_SETTINGS])
def test_bad_setting_names_file_and_key(root: Path, text: str, key: str, words: str) -> None:
    """Each rule refuses its bad value with a ConfigError naming memory/memfiles.toml, the key and the value."""
    (root / "memory" / "memfiles.toml").write_text(text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(root)
    error = caught.value
    assert (error.path, error.key) == ("memory/memfiles.toml", key)
    assert str(error).startswith("memory/memfiles.toml: ") and key in str(error), str(error)
    assert words in str(error)


GOOD_SETTINGS = [
    ("wrap = 0", "wrap", 0),
    ("wrap = 72", "wrap", 72),
    ("stale_days = 30", "stale_days", 30),
    ("index_timeout = 5", "index_timeout", 5.0),
    ("lock_timeout = 0", "lock_timeout", 0.0),
    ("watch_idle_exit = 0", "watch_idle_exit", 0.0),
    ("watch_idle_exit = 600", "watch_idle_exit", 600.0),
    ("watch_torch = false", "watch_torch", False),
    ('bulk_precision = "float32"', "bulk_precision", "float32"),
    ('index_url = "localhost:8000"', "index_url", "localhost:8000"),
    ('index_collection = "web-app_2.x"', "index_collection", "web-app_2.x"),
    ('index_url = "https://chroma.example:443/base"', "index_url", "https://chroma.example:443/base"),
    ('llm_url = "http://127.0.0.1:8080/v1"', "llm_url", "http://127.0.0.1:8080/v1"),
    ('model = "sentence-transformers/all-MiniLM-L6-v2"', "model", "sentence-transformers/all-MiniLM-L6-v2"),
    ('docs_dir = "documentation/site"', "docs_dir", "documentation/site"),
    ('exclude = ["vendor/*", "third_party/*"]', "exclude", ("vendor/*", "third_party/*")),
    ('open_statuses = ["open"]', "open_statuses", ("open",)),
    ("open_statuses = []", "open_statuses", ()),
]


@pytest.mark.parametrize(("text", "key", "value"), GOOD_SETTINGS, ids=[case[0] for case in GOOD_SETTINGS])
def test_good_setting_is_used(root: Path, text: str, key: str, value: object) -> None:
    """A value inside its rule is taken as written (ints as ints, seconds as floats, lists as tuples)."""
    (root / "memory" / "memfiles.toml").write_text(text + "\n")
    assert getattr(load_settings(root), key) == value


def test_schema_settings_reach_the_schema(root: Path) -> None:
    """id_width, title_limit and body_limit land in the schema, and a kind of one's own is added."""
    (root / "memory" / "memfiles.toml").write_text(
        "id_width = 4\ntitle_limit = 80\nbody_limit = 500\n"
        '[kinds.risk]\nprefix = "R2"\nstatuses = ["open", "mitigated"]\nfile = "sub/risks.md"\n'
    )
    schema = load_settings(root).schema
    assert (schema.id_width, schema.title_limit, schema.body_limit) == (4, 80, 500)
    risk = schema.kind("risk")
    assert risk is not None and (risk.prefix, risk.statuses, risk.file) == (
        "R2",
        ("open", "mitigated", "retired"),
        "sub/risks.md",
    )


def test_model_folder_is_found_from_the_root(root: Path, tmp_path: Path, monkeypatch) -> None:
    """A relative model folder is resolved against the project root, not the current folder."""
    (root / "models" / "mini").mkdir(parents=True)
    (root / "memory" / "memfiles.toml").write_text('model = "./models/mini"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_settings(root).model == str((root / "models" / "mini").resolve())


def test_open_statuses_may_name_a_status_of_a_configured_kind(root: Path) -> None:
    """open_statuses is checked after the kinds, so a status only a kind of one's own has is accepted."""
    (root / "memory" / "memfiles.toml").write_text(
        'open_statuses = ["watching"]\n[kinds.risk]\nprefix = "R"\nstatuses = ["watching", "gone"]\n'
    )
    assert load_settings(root).open_statuses == ("watching",)


def test_pyproject_table_is_named_as_such(root: Path) -> None:
    """A bad value under [tool.memfiles] in pyproject.toml names pyproject.toml and the key."""
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.memfiles]\nwrap = true\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(root)
    assert (caught.value.path, caught.value.key) == ("pyproject.toml", "wrap")


def test_tool_memfiles_must_be_a_table(root: Path) -> None:
    """`tool.memfiles = 3` is refused, naming the key."""
    (root / "pyproject.toml").write_text("[tool]\nmemfiles = 3\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml: tool.memfiles must be a table") as caught:
        load_settings(root)
    assert caught.value.key == "tool.memfiles"


def test_memfiles_toml_takes_the_readme_block_with_its_header(root: Path) -> None:
    """The README's [tool.memfiles] block copied whole into memory/memfiles.toml means the same as the
    settings at the top level, kinds included."""
    (root / "memory" / "memfiles.toml").write_text(
        '[tool.memfiles]\nwrap = 80\nstale_days = 30\n\n[tool.memfiles.kinds.risk]\nprefix = "R"\n'
        'statuses = ["open", "mitigated"]\nfile = "risks.md"\n'
    )
    settings = load_settings(root)
    assert (settings.wrap, settings.stale_days) == (80, 30)
    assert settings.schema.kind("risk") is not None and settings.schema.kind("R") is not None


def test_memfiles_toml_with_settings_inside_and_outside_the_header_is_refused(root: Path) -> None:
    """memfiles.toml holding wrap at the top and [tool.memfiles]: refused, saying to drop the header."""
    (root / "memory" / "memfiles.toml").write_text("wrap = 80\n\n[tool.memfiles]\nstale_days = 30\n")
    with pytest.raises(ConfigError, match=r"without the \[tool.memfiles\] header") as caught:
        load_settings(root)
    assert (caught.value.path, caught.value.key) == ("memory/memfiles.toml", "wrap")


@pytest.mark.parametrize(
    ("pyproject", "line"),
    [
        ('[project]\nname = "x"\n\n[tool.memfiles]\nwrap = 80\n', 4),
        ('[project]\nname = "x"\n[tool.memfiles.kinds.risk]\nprefix = "R"\n', 3),
        ("[tool]\nmemfiles = { wrap = 80 }\n", 1),
    ],
)
def test_check_names_a_pyproject_table_that_memfiles_toml_shadows(
    run: Run, root: Path, pyproject: str, line: int
) -> None:
    """With memory/memfiles.toml present, pyproject.toml's [tool.memfiles] is read by nothing: check says
    so at the table's line (a warning: exit 1), and says nothing when only one of the two exists."""
    (root / "pyproject.toml").write_text(pyproject)
    assert json.loads(run("check", "--json").stdout)["findings"] == []
    (root / "memory" / "memfiles.toml").write_text("stale_days = 30\n")
    result = run("check", "--json")
    assert result.exit_code == 1
    [found] = json.loads(result.stdout)["findings"]
    assert (found["code"], found["severity"], found["path"], found["line"]) == (
        "config-shadowed",
        "warning",
        "pyproject.toml",
        line,
    )
    assert "memory/memfiles.toml" in found["message"]
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert run("check").exit_code == 0
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.memfiles]\n')  # the root marker
    assert run("check").exit_code == 0


def test_check_names_a_package_memory_folders_own_configuration(run: Run, root: Path) -> None:
    """Settings come from the root alone: a package memory folder's memfiles.toml (even with a key no
    setting has) and its package's [tool.memfiles] were read by nothing, and check said "ok". Now each is
    config-ignored at the table's line; a package without a memory folder, and the root's own, are not."""
    run("add", "-k", "D", "-t", "Root", "-a", "a", "--body", "b")
    for folder in ("pkgA/memory", "pkgB/memory", "pkgC"):
        (root / folder).mkdir(parents=True)
    (root / "pkgA" / "memory" / "memfiles.toml").write_text("id_width = 5\nbogus_key = 1\n")
    (root / "pkgB" / "pyproject.toml").write_text('[project]\nname = "b"\n\n[tool.memfiles]\nid_width = 4\n')
    (root / "pkgC" / "pyproject.toml").write_text("[tool.memfiles]\nid_width = 4\n")
    (root / "memory" / "memfiles.toml").write_text("stale_days = 30\n")
    result = run("check", "--json")
    assert result.exit_code == 1
    found = [(f["code"], f["severity"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]]
    assert found == [
        ("config-ignored", "warning", "pkgA/memory/memfiles.toml", 1),
        ("config-ignored", "warning", "pkgB/pyproject.toml", 4),
    ]
    assert run("add", "-k", "D", "-t", "Still three digits", "-a", "a", "--body", "b").stdout.strip() == "D-002"
    (root / "pkgA" / "memory" / "memfiles.toml").write_text("# nothing set\n")
    (root / "pkgB" / "pyproject.toml").write_text('[project]\nname = "b"\n\n[tool.memfiles]\n')
    assert run("check").exit_code == 0  # empty: they set nothing, so nothing is ignored


def test_a_broken_pyproject_is_named_at_its_line_beside_memfiles_toml(run: Run, root: Path) -> None:
    """memory/memfiles.toml holds the settings, but the lint reads [tool.rumdl] from pyproject.toml:
    its syntax error is said as every TOML error is, with the line (it lacked "not valid TOML" and the line)."""
    (root / "memory" / "memfiles.toml").write_text("wrap = 80\n")
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.memfiles\n')
    result = run("check", "--json")
    assert result.exit_code == 2
    assert "pyproject.toml:3: not valid TOML: Expected ']'" in result.stderr
    error = json.loads(result.stdout)["error"]
    assert (error["path"], error["line"]) == ("pyproject.toml", 3)


def test_a_list_value_is_shown_as_toml_spells_it(root: Path) -> None:
    (root / "memory" / "memfiles.toml").write_text('[kinds.risk]\nprefix = "R"\nstatuses = ["Open"]\n')
    with pytest.raises(ConfigError, match=r'got \["Open"\]$'):
        load_settings(root)


def test_toml_syntax_error_carries_its_line(root: Path) -> None:
    """A TOML syntax error names the file and the line tomllib reports."""
    (root / "memory" / "memfiles.toml").write_text('wrap = 80\nstale_days = 30\ndocs_dir = "unclosed\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(root)
    assert (caught.value.path, caught.value.line) == ("memory/memfiles.toml", 3)


def test_toml_cut_short_names_its_last_line(root: Path) -> None:
    """A TOML file that ends mid-value ("at end of document") names its last line, as path:line."""
    (root / "memory" / "memfiles.toml").write_text("wrap = 100\nstale_days = [\n")
    with pytest.raises(ConfigError, match=r"^memory/memfiles.toml:2: not valid TOML") as caught:
        load_settings(root)
    assert caught.value.line == 2


def test_non_utf8_config_is_refused(root: Path) -> None:
    """A config file with bytes that are not UTF-8 is a ConfigError, not a traceback."""
    (root / "memory" / "memfiles.toml").write_bytes(b'llm_model = "caf\xe9"\n')
    with pytest.raises(ConfigError, match=r"memory/memfiles.toml: not UTF-8 text"):
        load_settings(root)


@pytest.mark.parametrize("shape", ["folder", "dangling link"])
def test_a_settings_file_that_cannot_be_read_is_named(root: Path, shape: str) -> None:
    """memory/memfiles.toml as a folder or a link to nothing was skipped in silence: defaults were used, and
    `check` said all was well."""
    own = root / "memory" / "memfiles.toml"
    if shape == "folder":
        own.mkdir()
    else:
        own.symlink_to(root / "memory" / "nowhere.toml")
    said = "a folder" if shape == "folder" else "a link to nothing"
    with pytest.raises(ConfigError, match=rf"^memory/memfiles.toml: cannot be read as settings: it is {said}$"):
        load_settings(root)


@pytest.mark.parametrize(
    ("name", "text", "key", "line"),
    [
        ("memory/memfiles.toml", "wrap = 100\n\n[kinds.risk]\nprefix = 'r'\n", "kinds.risk.prefix", 4),
        ("memory/memfiles.toml", "wrap = 100\n[kinds.risk]\nprefix = 'R'\ncolour = 1\n", "kinds.risk", 2),
        ("memory/memfiles.toml", "[tool.memfiles]\nwrap = 100\nstale_days = 0\n", "stale_days", 3),
        ("pyproject.toml", "[project]\nname = 'x'\n\n[tool.memfiles]\nwrap = 7\n", "wrap", 5),
        ("pyproject.toml", "[tool.memfiles.kinds.risk]\nprefix = 'R'\nfile = 'x.txt'\n", "kinds.risk.file", 3),
        (
            "pyproject.toml",
            "[tool.memfiles]\nwrap = 100\n[tool.memfiles.kinds.risk]\nfile = 'x.md'\n",
            "kinds.risk.prefix",
            3,
        ),
    ],
)
def test_a_bad_key_is_named_at_its_line(root: Path, name: str, text: str, key: str, line: int) -> None:
    (root / name).write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(root)
    assert (caught.value.path, caught.value.key, caught.value.line) == (name, key, line)


BAD_ENV = [
    ("MEMFILES_INDEX_TIMEOUT", "abc", 'got "abc"'),
    ("MEMFILES_INDEX_TIMEOUT", "0", 'above 0 up to 600, got "0"'),
    ("MEMFILES_INDEX_TIMEOUT", "-2", 'got "-2"'),
    ("MEMFILES_INDEX_TIMEOUT", "nan", 'got "nan"'),
    ("MEMFILES_INDEX_TIMEOUT", "1e9", 'got "1e9"'),
    ("MEMFILES_CHROMA_URL", "ht tp://x", "http:// or https:// URL (or host:port)"),
    ("MEMFILES_LLM_TIMEOUT", "soon", 'got "soon"'),
    ("MEMFILES_INDEX_COLLECTION", "a b", "must be 1-40 letters, digits"),
    ("MEMFILES_CHROMA_URL", "http://", 'got "http://"'),
    ("MEMFILES_LLM_URL", "localhost:8080", "http:// or https:// URL"),
    ("MEMFILES_WATCH_IDLE_EXIT", "2h", 'from 0 up to 604800, got "2h"'),
    ("MEMFILES_WATCH_IDLE_EXIT", "604801", 'got "604801"'),
    ("MEMFILES_WATCH_TORCH", "maybe", "true or false (unquoted in a file; a variable also takes 1/0, on/off, yes/no)"),
    ("MEMFILES_BULK_PRECISION", "half", 'must be "auto" or "float32" or "bfloat16", got "half"'),
]


@pytest.mark.parametrize(("variable", "value", "words"), BAD_ENV, ids=[f"{v}={x}" for v, x, _ in BAD_ENV])
def test_bad_environment_variable_is_named(root: Path, monkeypatch, variable: str, value: str, words: str) -> None:
    """A bad MEMFILES_* value is refused naming the variable (as the key) and the text as it was given."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        load_settings(root)
    assert caught.value.key == variable and caught.value.path is None
    assert str(caught.value).startswith(f"{variable}: ") and words in str(caught.value)


def test_good_environment_variables_win_over_the_file(root: Path, monkeypatch) -> None:
    """Environment beats the file; an empty variable counts as unset."""
    (root / "memory" / "memfiles.toml").write_text('index_timeout = 3\nllm_url = "http://file:1/v1"\n')
    monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "7.5")
    monkeypatch.setenv("MEMFILES_LLM_URL", "")
    settings = load_settings(root)
    assert (settings.index_timeout, settings.llm_url) == (7.5, "http://file:1/v1")


class TestCommandLine:
    def test_bad_config_refuses_every_command_with_exit_2(self, run: Run, root: Path) -> None:
        """list, check and add all refuse a bad setting with exit 2, one line naming file and key, nothing written."""
        (root / "memory" / "memfiles.toml").write_text("id_width = -3\n")
        before = snapshot(root)
        for args in (("list",), ("check",), ("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")):
            result = run(*args)
            assert result.exit_code == 2, args
            assert result.stderr == (
                "memfiles: memory/memfiles.toml: id_width: must be a whole number from 1 to 9, got -3\n"
            )
        assert snapshot(root) == before

    def test_settings_that_cannot_be_read_refuse_a_write_and_change_nothing(self, run: Run, root: Path) -> None:
        """memory/memfiles.toml as a folder (it was skipped, and the write went on with the defaults): exit 2
        naming it, nothing written."""
        (root / "memory" / "memfiles.toml").mkdir()
        before = snapshot(root)
        result = run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        assert result.exit_code == 2
        assert result.stderr == "memfiles: memory/memfiles.toml: cannot be read as settings: it is a folder\n"
        assert snapshot(root) == before

    def test_bad_environment_variable_refuses_list(self, run: Run, monkeypatch) -> None:
        """MEMFILES_INDEX_TIMEOUT=abc: list exits 2 naming the variable (it used to crash with a traceback)."""
        monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "abc")
        result = run("list")
        assert result.exit_code == 2
        assert "MEMFILES_INDEX_TIMEOUT: must be a number of seconds" in result.stderr

    def test_bad_chroma_url_flag_is_named(self, run: Run, monkeypatch) -> None:
        """--chroma-url is checked like the setting, and the flag is named."""
        monkeypatch.delenv("MEMFILES_CHROMA_URL", raising=False)
        result = run("--chroma-url", "::", "list")
        assert result.exit_code == 2 and "--chroma-url: must be an http:// or https:// URL" in result.stderr

    def test_config_error_as_json(self, run: Run, root: Path) -> None:
        """With --json the refusal is the error object, code config, with the file as path, the key and its
        line (it was null: only a TOML syntax error had one)."""
        (root / "memory" / "memfiles.toml").write_text("# settings\nwrap = 100\nstale_days = 1.9\n")
        error = json.loads(run("audit", "--json").stdout)["error"]
        assert error == {
            "code": "config",
            "message": "memory/memfiles.toml: stale_days: must be a whole number from 1 to 36500, got 1.9",
            "path": "memory/memfiles.toml",
            "line": 3,
            "op": None,
            "key": "stale_days",
            "field": None,
            "problems": [],
        }


def test_a_missing_model_folder_stops_only_the_index(run: Run, root: Path, monkeypatch) -> None:
    """model pointing at a folder that does not exist: writes and checks go on (the files are the truth);
    backfill exits 2 naming the folder and the setting to fix, and nothing is written to the index."""
    monkeypatch.setenv("MEMFILES_MODEL", str(root / "no-such-model"))
    assert run("add", "-k", "D", "-t", "Still written", "-a", "a", "--body", "b").exit_code == 0
    assert run("check").exit_code == 0
    result = run("backfill")
    assert result.exit_code == 2
    assert "no-such-model does not exist" in result.stderr and "MEMFILES_MODEL" in result.stderr


class TestDeclared:
    """Each setting is declared once (memfiles.config.SETTINGS): the loader, the variables, the flags and
    docs/format.md's table are made from it."""

    def test_every_settings_field_is_declared(self) -> None:
        from dataclasses import fields

        from memfiles.config import _SCHEMA_KEYS, SETTINGS, Settings

        own = {f.name for f in fields(Settings)} - {"root", "schema"}
        assert set(SETTINGS) == own | _SCHEMA_KEYS

    def test_the_docs_table_is_made_from_the_declarations(self) -> None:
        from memfiles.config import settings_markdown

        page = (REPO / "docs" / "format.md").read_text(encoding="utf-8")
        assert settings_markdown() in page, "docs/format.md is behind: run python scripts/settings_doc.py"

    @pytest.mark.parametrize("key", ["watch_save_after", "watch_log_bytes", "index_timeout", "search_watch"])
    def test_a_declared_variable_sets_its_setting_and_a_bad_one_is_named(self, root: Path, key: str) -> None:
        from memfiles.config import SETTINGS

        variable = SETTINGS[key].env
        assert variable is not None
        good, value = {"search_watch": ("1", True), "watch_log_bytes": ("4096", 4096)}.get(key, ("60", 60.0))
        assert getattr(load_settings(root, environ={variable: good}), key) == value
        with pytest.raises(ConfigError, match=variable):
            load_settings(root, environ={variable: "nonsense"})

    def test_every_flag_of_a_setting_is_declared_through_it(self) -> None:
        """No command declares --chroma-url (or another setting's flag) by hand."""
        from memfiles.config import SETTINGS

        flags = [s.flag for s in SETTINGS.values() if s.flag]
        for path in sorted((REPO / "src" / "memfiles" / "cli").glob("*.py")):
            text = path.read_text(encoding="utf-8")
            for flag in flags:
                assert f'click.option("{flag}"' not in text, (path.name, flag)
