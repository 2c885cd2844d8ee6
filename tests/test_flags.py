"""Which tool flags a record names, and when a flag entry counts a run (services/distiller/flags.py)."""

from __future__ import annotations

from memfiles.services.distiller.flags import find_flags


def keys(text: str) -> list[str]:
    return [flag.key for flag in find_flags(text)]


def test_an_option_counts_with_its_command_only() -> None:
    """`-setup` of set_clock_gating_check is not a flag on its own: the command with its option is."""
    assert keys("Relax the gating margin with set_clock_gating_check -setup 0.2") == [
        "set_clock_gating_check -setup 0.2"
    ]
    assert keys("Used `-noretime` to keep the registers") == []
    assert keys("Tried -setup 0.2 by itself") == []


def test_long_options_commands_and_quoted_commands() -> None:
    """Long options stand alone; a quoted command counts whole; 'run X with -opt' names X's option."""
    assert keys("Cap fanout with --max-fanout 16 before mapping") == ["--max-fanout 16"]
    assert keys("--no-buffer, --cell-padding 4 and --overflow-target=0.1") == [
        "--no-buffer",
        "--cell-padding 4",
        "--overflow-target 0.1",
    ]
    assert keys("`abc -D 1250` matched the SDC") == ["abc -D 1250"]
    assert keys("Run synth with -noflatten and flatten per hierarchy") == ["synth -noflatten"]
    assert keys("`set_clock_groups -asynchronous -group clk_a -group clk_b`") == [
        "set_clock_groups -asynchronous -group"
    ]


def test_one_use_named_twice_is_one_flag() -> None:
    """The prose and the quoted form of one command are one flag: the general one."""
    assert keys("Run synth with -noflatten. Used `synth -top core -noflatten`.") == ["synth -noflatten"]


def test_words_with_dashes_are_not_flags() -> None:
    """Hyphenated words, negative numbers and dashes in prose are not options."""
    assert keys("A two-cycle path, wns -0.41, signed-off runs - and per-hierarchy flatten") == []


def test_an_entry_flag_covers_the_runs_that_used_it() -> None:
    """A value must match when the entry gives one; a flag without a value or command covers any."""
    (entry,) = find_flags("Timing closes with --max-fanout 16")
    assert entry.covers(find_flags("--max-fanout 16 again")[0])
    assert not entry.covers(find_flags("--max-fanout 32")[0])
    assert not entry.covers(find_flags("--skip-io")[0])
    (bare,) = find_flags("Raise --droute-end-iter when DRC stays")
    assert bare.covers(find_flags("--droute-end-iter 64")[0])
    (skip,) = find_flags("Skip IO placement with --skip-io")
    assert skip.covers(find_flags("`global_placement --skip-io`")[0])
    (command,) = find_flags("`synth -noflatten`")
    assert command.covers(find_flags("`synth -top core -noflatten`")[0])
    assert not command.covers(find_flags("`abc -noflatten`")[0])


def test_short_options_with_values_are_flags_as_the_domain_writes_them() -> None:
    """`-n 4`, `-j8`, `-O2`: a one-letter option with a value is a flag on its own, kept as written; a
    command a sentence starts with owns its short options; `-j8` and `-j 8` are one flag."""
    assert keys("pytest -n 4") == ["pytest -n 4"]
    assert [f.text for f in find_flags("make -j8")] == ["make -j8"]
    assert keys("Compile with -O2") == ["-O 2"] and find_flags("Compile with -O2")[0].text == "-O2"
    assert keys("go test -race ./...") == ["go test -race"]
    (glued,) = find_flags("Build with -j8")
    assert glued.covers(find_flags("Build with -j 8")[0]) and not glued.covers(find_flags("with -j 4")[0])
    # a long option still stands alone after a verb of prose; a multi-letter single-dash one still needs
    # its command
    assert keys("pass --no-retime") == ["--no-retime"]
    assert keys("Tried -setup 0.2 by itself") == []


def test_a_flag_replaced_by_another_was_not_used() -> None:
    """'instead of' turns down the flag after it, in its clause, as a negation does."""
    from memfiles.services.distiller.flags import used_flags

    assert [f.text for f in used_flags("Build with -j2 instead of -j8")] == ["-j2"]
    assert [f.text for f in used_flags("Use --retries 3 rather than --retries 1")] == ["--retries 3"]
