"""Bad input on the write commands (a clear message naming the file, exit 2, nothing written) and their
JSON: the write object on success, the error object on a refusal."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Run, add_ops, snapshot


class TestBadInput:
    def test_import_of_a_missing_file(self, run: Run, root: Path) -> None:
        """import missing.json: exit 2 naming it, the io error object under --json, nothing written."""
        result = run("import", str(root / "missing.json"), "--json")
        assert result.exit_code == 2 and f"{root / 'missing.json'}: no such file" in result.stderr
        error = json.loads(result.stdout)["error"]
        assert (error["code"], error["path"]) == ("io", str(root / "missing.json"))
        assert snapshot(root) == {}

    def test_import_of_a_folder(self, run: Run, root: Path) -> None:
        """import DIR: exit 2, "is a folder"."""
        result = run("import", str(root))
        assert result.exit_code == 2 and f"{root}: is a folder" in result.stderr

    def test_import_of_non_utf8_json_names_the_line(self, run: Run, root: Path) -> None:
        """A Latin-1 byte on line 3 of the batch: exit 2 with path:3 and the byte."""
        (root / "ops.json").write_bytes(
            b'{"ops": [\n  {"op": "add", "kind": "D", "title": "ok",\n   "area": "caf\xe9"}]}'
        )
        result = run("import", str(root / "ops.json"), "--json")
        assert result.exit_code == 2 and "ops.json:3: not UTF-8 text: byte 0xe9" in result.stderr
        assert json.loads(result.stdout)["error"]["line"] == 3
        assert snapshot(root) == {}

    def test_import_of_empty_stdin(self, run: Run, root: Path) -> None:
        """import - with nothing on standard input: exit 2, "<stdin>: is empty"."""
        result = run("import", "-", input="")
        assert result.exit_code == 2 and "<stdin>: is empty; expected the batch" in result.stderr
        assert snapshot(root) == {}

    def test_import_with_a_byte_order_mark_is_read(self, run: Run, root: Path) -> None:
        """A batch saved with a UTF-8 byte-order mark (as some editors do) is applied."""
        (root / "ops.json").write_bytes(b"\xef\xbb\xbf" + add_ops(1).encode())
        assert run("import", str(root / "ops.json")).exit_code == 0

    def test_a_document_without_an_ops_list_names_the_file(self, run: Run, root: Path) -> None:
        """{"ops": {}}: exit 2, the file named, code parse."""
        (root / "ops.json").write_text('{"ops": {}}')
        result = run("import", str(root / "ops.json"), "--json")
        assert result.exit_code == 2 and f'{root / "ops.json"}: expected {{"ops": [...]}}' in result.stderr
        assert json.loads(result.stdout)["error"]["code"] == "parse"

    def test_invalid_json_gives_the_parse_error_object(self, run: Run, root: Path) -> None:
        """Malformed JSON with --json: code parse, the path and the line."""
        (root / "ops.json").write_text('{"ops": [\n  {"op": "add",}\n]}')
        error = json.loads(run("import", str(root / "ops.json"), "--json").stdout)["error"]
        assert (error["code"], error["path"], error["line"]) == ("parse", str(root / "ops.json"), 2)

    def test_body_file_missing_folder_and_non_utf8(self, run: Run, root: Path) -> None:
        """--body-file that is missing, a folder, or not UTF-8: exit 2 naming it, nothing written."""
        (root / "latin1.txt").write_bytes(b"line one\ncaf\xe9\n")
        for path, words in (
            (root / "missing.txt", "missing.txt: no such file"),
            (root, "is a folder"),
            (root / "latin1.txt", "latin1.txt:2: not UTF-8 text: byte 0xe9 at column 4"),
        ):
            result = run("add", "-k", "D", "-t", "t", "-a", "a", "--body-file", str(path))
            assert result.exit_code == 2 and words in result.stderr, (path, result.stderr)
        assert snapshot(root) == {}

    def test_add_with_empty_stdin_and_no_body(self, run: Run, root: Path) -> None:
        """add without --body and with empty standard input: exit 2, "<stdin>: is empty; expected the body"."""
        result = run("add", "-k", "D", "-t", "t", "-a", "a", input="")
        assert result.exit_code == 2 and "<stdin>: is empty; expected the body" in result.stderr
        assert snapshot(root) == {}


WRITE_KEYS = {"added", "updated", "retired", "pruned", "renumbered", "replayed", "entries", "warnings"}
ERROR_KEYS = {"code", "message", "path", "line", "op", "key", "field", "problems"}


class TestJsonContract:
    def test_every_write_command_prints_the_write_object(self, run: Run, root: Path) -> None:
        """add, set, retire, prune and import --json print the same object, the touched entries in full."""
        from memfiles.contract import entry_object
        from memfiles.format.model import Entry

        entry_keys = set(
            entry_object(Entry("D-1", "t", "2026-01-01", "a", "s"), kind=None, path=None, line=None, section=None)
        )
        (root / "ops.json").write_text(add_ops(1, kind="friction"))
        outputs = {
            "add": run("add", "-k", "D", "-t", "One", "-a", "x", "--body", "b", "--json"),
            "add2": run("add", "-k", "D", "-t", "Two", "-a", "x", "--body", "b", "--json"),
            "set": run("set", "D-001", "--status", "accepted", "--json"),
            "retire": run("retire", "D-001", "--successor", "D-002", "--reason", "r", "--json"),
            "import": run("import", str(root / "ops.json"), "--json"),
            "prune": run("prune", "F-001", "--reason", "r", "--json"),
        }
        for name, result in outputs.items():
            assert result.exit_code == 0, (name, result.output)
            data = json.loads(result.stdout)
            assert set(data) == WRITE_KEYS, name
            for entry in data["entries"]:
                assert set(entry) == entry_keys, name
        add = json.loads(outputs["add"].stdout)
        assert add["added"] == ["D-001"] and add["entries"][0]["path"] == "memory/decisions.md"
        assert add["entries"][0]["line"] and add["entries"][0]["body"] == "b"
        assert json.loads(outputs["set"].stdout)["entries"][0]["status"] == "accepted"
        retired = json.loads(outputs["retire"].stdout)["entries"][0]
        assert (retired["status"], retired["successor"], retired["reason"]) == ("retired", "D-002", "r")
        pruned = json.loads(outputs["prune"].stdout)
        assert pruned["pruned"] == ["F-001"] and pruned["entries"] == []

    def test_refusals_print_the_error_object(self, run: Run, root: Path) -> None:
        """With --json, each kind of refusal prints the error object with every key: op, usage, refused,
        ambiguous, lock."""
        run("add", "-k", "D", "-t", "Chroma hangs with two writers", "-a", "x", "--body", "Two clients hang.")
        cases = {
            "op": run("set", "D-404", "--status", "accepted", "--json"),
            "usage": run("add", "-k", "D", "--json"),
            "refused": run(
                "add",
                "-k",
                "D",
                "-t",
                "Chroma hangs with two writers",
                "-a",
                "x",
                "--body",
                "Two clients hang.",
                "--unique",
                "--json",
            ),
        }
        for code, result in cases.items():
            assert result.exit_code == (1 if code == "refused" else 2), (code, result.output)
            error = json.loads(result.stdout)["error"]
            assert set(error) == ERROR_KEYS and error["code"] == code, (code, error)
            assert error["message"] in result.stderr
        assert json.loads(cases["op"].stdout)["error"]["field"] == "id"

    def test_a_lock_timeout_prints_the_lock_error_object(self, run: Run, root: Path) -> None:
        """Another writer holding the lock past lock_timeout: exit 2 and code lock."""
        from memfiles.store.lock import FileLock

        (root / "memory" / "memfiles.toml").write_text("lock_timeout = 0.2\n")
        with FileLock(root / ".memfiles" / "write.lock"):
            result = run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b", "--json")
        assert result.exit_code == 2
        assert json.loads(result.stdout)["error"]["code"] == "lock"

    def test_every_domain_error_maps_to_its_code(self) -> None:
        """error_json maps each error class to its documented code and carries path/line, op, field, key."""
        from memfiles.cli.app import error_json
        from memfiles.errors import (
            AmbiguousId,
            BatchError,
            ConfigError,
            IndexUnavailable,
            LockTimeout,
            OpError,
            ParseError,
            ReadError,
            RefusedError,
        )

        assert error_json(ParseError("memory/a.md", 7, "bad"))["error"] == {
            "code": "parse",
            "message": "memory/a.md:7: bad",
            "path": "memory/a.md",
            "line": 7,
            "op": None,
            "key": None,
            "field": None,
            "problems": [],
        }
        batch = error_json(BatchError([OpError(2, "title is long", "title"), OpError(5, "id: no entry", "id")]))
        assert batch["error"]["op"] == 2 and len(batch["error"]["problems"]) == 2
        codes = {
            ConfigError("x"): "config",
            LockTimeout("x"): "lock",
            IndexUnavailable("x"): "index",
            RefusedError("x"): "refused",
            ReadError("a.json", "no such file"): "io",
            AmbiguousId("F-001", ["a.md:1", "a.md:9"]): "ambiguous",
        }
        for error, code in codes.items():
            assert error_json(error)["error"]["code"] == code
