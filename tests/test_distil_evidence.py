"""The distiller on a domain it has never seen (issue 37): a finding goes to an entry on every piece of
evidence, the author's words stay as written, and short options are flags."""

from __future__ import annotations

import json
from pathlib import Path

from memfiles import parse
from memfiles.services.distiller.knowledge import parse_contradictions
from tests.conftest import Run

FAILURES, FLAGS = "Known Failure Patterns", "Successful Tool Flags"


def ci(run_id: str, day: int, issues: list[str], fixes: list[str], signoff: bool = True, notes: str = "") -> dict:
    """A record of a CI log with the issue's fields only: no tool, no area."""
    return {
        "timestamp": f"2026-11-{day:02d}T09:00:00Z",
        "run_id": run_id,
        "signoff_achieved": signoff,
        "issues_encountered": issues,
        "fixes_applied": fixes,
        "key_metrics": {"duration_s": 900 + day},
        "notes": notes,
    }


def write_log(root: Path, records: list[dict], domain: str = "ci") -> None:
    folder = root / "memory" / domain
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "experiences.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def distil(run: Run, *args: str, domain: str = "ci") -> dict:
    result = run("distil", "--domain", domain, "--min-records", "1", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["domains"][0]


def entries(root: Path, section: str, domain: str = "ci") -> list:
    memory = parse((root / "memory" / domain / "knowledge.md").read_text())
    return [e for e in memory.entries if memory.section_of(e.id) == section]


J2 = "Build with -j2 so that only two linkers run at once"


def test_the_identical_fix_worded_differently_is_one_entry(run: Run, root: Path) -> None:
    """ "The linker was killed by the OOM killer" with the fix that worked for "Out of memory while
    linking" (symptoms at 0.35, under any threshold of meaning alone): a confirmation of that entry, with
    the shared fix shown in --explain, not a second entry. Before, the fix counted for nothing."""
    write_log(root, [ci("c1", 1, ["Out of memory while linking the server binary"], [J2])])
    distil(run)
    write_log(
        root,
        [
            ci("c1", 1, ["Out of memory while linking the server binary"], [J2]),
            ci("c2", 15, ["The linker was killed by the OOM killer"], [J2]),
        ],
    )
    report = distil(run)
    (oom,) = entries(root, FAILURES)
    assert oom.evidence == ("c1", "c2") and not oom.contradicted
    (decision,) = [d for d in report["decisions"] if d["run"] == "c2" and d["finding"] == "symptom"]
    assert decision["action"] == "confirmed" and decision["signals"]["same_fix"] == J2
    assert decision["signals"]["meaning"] < 0.8 <= decision["score"]
    out = run("distil", "--domain", "ci", "--min-records", "1", "--explain").stdout
    assert "c2 line 2: run: already" in out  # counted, so not read again


def test_the_same_rare_test_with_a_replaced_fix_contradicts_its_entry(run: Run, root: Path) -> None:
    """A short repeat naming the same test function, with a new fix that worked where the old one had
    just failed: a contradiction on the test's entry (the replacing fix recorded there), not a second
    entry about the same test. A test of another name is another entry."""
    raised = "Raise the timeout of test_upload_retries to 120 s"
    mock = "Replace the real S3 call in test_upload_retries with the moto mock"
    records = [
        ci("t1", 2, ["test_upload_retries times out on the shared runner"], [raised]),
        ci("t2", 16, ["test_upload_retries still times out after the timeout was raised"], [raised], signoff=False),
        ci("t3", 17, ["test_upload_retries flaked on main"], [mock]),
        ci("t4", 18, ["test_upload_resume fails with a checksum mismatch"], ["Compare checksums of the whole file"]),
    ]
    write_log(root, records[:1])
    distil(run)
    write_log(root, records)
    report = distil(run)
    retries, resume = entries(root, FAILURES)
    assert retries.evidence == ("t1",) and retries.failed == ("t2",)
    assert [(c.runs, c.fix) for c in parse_contradictions(retries.contradicted)] == [(["t3"], mock)]
    assert resume.evidence == ("t4",)
    (decision,) = [d for d in report["decisions"] if d["run"] == "t3"]
    assert decision["action"] == "contradicted" and decision["signals"]["rare"] == ["test_upload_retries"]


def test_explain_shows_every_signal_of_a_decision(run: Run, root: Path) -> None:
    """--explain: the meaning, the fix's words left out of it, the same fix, the rare identifier, the place
    (tool and area) with what each adds, the sum and the threshold; --json holds the same as `signals`."""
    fix = "Pin NCCL to 2.18.3 in the training image"
    records = [
        {**ci("n1", 3, ["NCCL error in test_allreduce_fp16 during init"], [fix]), "tool": "torch 2.2", "stage": "x"},
        {**ci("n2", 9, ["test_allreduce_fp16 fails: NCCL init error"], [fix]), "tool": "torch 2.2", "stage": "x"},
        {**ci("n3", 10, ["Disk full"], ["Prune"]), "tool": "docker 24", "stage": "y"},
    ]
    write_log(root, records)
    report = distil(run)
    signals = next(d["signals"] for d in report["decisions"] if d["run"] == "n2")
    assert set(signals) == {"entry", "meaning", "symptom", "without", "same_fix", "rare", "where", "guard", "score",
                            "threshold"}  # fmt: skip
    assert signals["same_fix"] == fix and signals["rare"] == ["test_allreduce_fp16"]
    assert set(signals["where"]) == {"tool", "stage"} and signals["guard"] is None
    write_log(root, [*records, {**records[1], "run_id": "n4", "timestamp": "2026-11-20T09:00:00Z"}])
    out = run("distil", "--domain", "ci", "--min-records", "1", "--explain").stdout
    line = next(line for line in out.splitlines() if line.strip().startswith("n4 line 4: symptom"))
    for said in ("meaning 1.00", "same fix +0.50", "rare test_allreduce_fp16", "same stage, tool", ">= 0.80"):
        assert said in line, line


def test_the_authors_commands_flags_and_identifiers_are_kept(run: Run, root: Path) -> None:
    """A body keeps commands, flags and identifiers as written, in code spans, never re-cased ("Fix: Git
    config ...", "Npm ci fails ..." before); a sentence that starts with one starts with the code span;
    a title keeps the words as written."""
    records = [
        {
            **ci("w1", 1, ["npm ci fails with EINTEGRITY for a tarball"], ["Regenerate package-lock.json"]),
            "tool": "npm 10.2",
        },
        ci(
            "w2",
            2,
            ["Checkout fails on the Windows runner: Filename too long"],
            ["git config --system core.longpaths true"],
        ),
        ci("w3", 3, ["the linker was killed by the OOM killer"], ["Build with -j2 instead of -j8"]),
        ci("w4", 4, ["The runner ran out of disk"], ["Prune images"]),
    ]
    write_log(root, records)
    distil(run)
    by_title = {e.title: e for e in entries(root, FAILURES)}
    npm = by_title["npm ci fails with EINTEGRITY for a tarball"]
    assert npm.body.startswith("**`npm ci` fails with EINTEGRITY for a tarball.**")
    assert "Fix: Regenerate `package-lock.json`." in npm.body
    longpaths = by_title["Checkout fails on the Windows runner: Filename too long"]
    assert "Fix: `git config --system core.longpaths true`." in " ".join(longpaths.body.split())
    # "The" is how this log writes the word: the first letter of prose is upper-cased, a flag never
    linker = by_title["The linker was killed by the OOM killer"]
    assert "Fix: Build with `-j2` instead of `-j8`." in " ".join(linker.body.split())
    flags = [e.title for e in entries(root, FLAGS)]
    assert "`-j2` in signed-off runs" in flags and "`-j8` in signed-off runs" not in flags
    assert "`git config --system` in signed-off runs" in flags


def test_short_options_with_values_are_flags(run: Run, root: Path) -> None:
    """`pytest -n 4` in a signed-off run with nothing else to file is a flag, not "no issue, no flag and
    no quirk"; `make -j8` and `make -j 8` are one flag."""
    records = [
        ci("f1", 1, [], [], notes="Green; ran pytest -n 4 as usual."),
        ci("f2", 2, [], ["Rebuild with make -j8"]),
        ci("f3", 3, [], ["Rebuild with make -j 8"]),
        ci("f4", 4, [], ["Rebuild with make -j 4"], signoff=False),
    ]
    write_log(root, records)
    report = distil(run)
    flags = {e.title: e for e in entries(root, FLAGS)}
    assert flags["`pytest -n 4` in signed-off runs"].evidence == ("f1",)
    assert flags["`make -j8` in signed-off runs"].evidence == ("f2", "f3")
    assert not flags["`make -j8` in signed-off runs"].failed  # -j 4 is another value
    assert not [d for d in report["decisions"] if d["action"] == "ignored" and d["run"] in ("f1", "f2", "f3")]
