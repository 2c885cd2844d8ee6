"""Commands of the distiller and of deduplication: distil, dupes."""

from __future__ import annotations

from typing import Any

import click

from memfiles.cli.app import App, Number, errors_to_exit, json_option, pass_app, print_json, warn


def _pct(rate: float) -> str:
    return f"{rate * 100:.0f}%"


def _print_report(report, explain: bool) -> None:  # type: ignore[no-untyped-def]
    data = report.as_json()
    click.echo(f"Domain:        {data['domain']}")
    click.echo(
        f"Records read:  {data['records_read']}"
        + (f" ({data['records_skipped']} malformed lines skipped)" if data["records_skipped"] else "")
    )
    if data["skipped"]:
        click.echo(f"Skipped:       {data['skipped']}")
        return
    oldest, newest = (data["date_range"] + ["?", "?"])[:2]
    click.echo(f"Date range:    {oldest} → {newest}")
    click.echo(f"Signoff rate:  {_pct(data['signoff_rate'])}")
    added = data["added"]
    label = "Would add:    " if data["dry_run"] else "New entries:  "
    click.echo(
        f"{label} +{len(added['Known Failure Patterns'])} Known Failure Patterns, "
        f"+{len(added['Successful Tool Flags'])} Successful Tool Flags, +{len(added['PDK / Tool Quirks'])} PDK Quirks"
    )
    click.echo(
        f"Annotations:   {len(data['annotated'])} existing entries updated ({len(data['confirmed'])} confirmed,"
        f" {len(data['failed'])} with failures noted, {len({c['id'] for c in data['contradictions']})} contradicted)"
    )
    for item in data["contradictions"]:
        click.echo(
            f"Contradiction: {item['id']} {item['title']!r}: recorded fix '{item['old_fix']}', "
            f"but '{item['new_fix']}' reached signoff ({item['evidence']})"
        )
    if data["matching"] == "lexical":
        click.echo("Matching:      by word overlap (the model could not be loaded)")
    click.echo(f"knowledge.md:  {data['knowledge']}  [{_state(data)}]")
    if explain:
        click.echo("Decisions (run, finding: what was done -> entry (score): why):")
        for decision in report.decisions:
            click.echo(f"  {decision}")


def _state(data: dict[str, Any]) -> str:
    if data["dry_run"]:
        return "would update" if data["updated"] else "unchanged"
    return "updated" if data["updated"] else "unchanged"


@click.command()
@click.option(
    "--domain", "domains", multiple=True, help="A subfolder of memory/ holding experiences.jsonl (repeat for several)."
)
@click.option("--all", "all_", is_flag=True, help="Every domain.")
@click.option(
    "--min-records",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Skip a domain with fewer valid records (0 or more).",
)
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option(
    "--explain", is_flag=True, help="Print, per record, the entry each finding went to, each signal's part and why."
)
@click.option("--summary-json", is_flag=True, help="Print load_experiences' structured summary and stop.")
@click.option(
    "--drafter",
    type=click.Choice(["rules", "llm"]),
    default="rules",
    show_default=True,
    help="Who drafts new entries: the built-in rules, or the model at llm_url (OpenAI-compatible).",
)
@json_option
@pass_app
def distil(
    app: App,
    domains: tuple[str, ...],
    all_: bool,
    min_records: int,
    dry_run: bool,
    explain: bool,
    summary_json: bool,
    drafter: str,
    as_json: bool,
) -> None:
    """Distil memory/<domain>/experiences.jsonl into knowledge entries in memory/<domain>/knowledge.md.

    Each record's findings (symptom, fix, outcome; the flags it used; the quirks its notes name) are
    filed where the evidence says: the same symptom with the recorded fix and signoff confirms the
    entry; without signoff it is a failure noted on the entry; a different fix that reached signoff is
    a contradiction, appended to the entry's list; a symptom or flag nobody has filed is a new entry.
    A finding goes to the entry every piece of evidence points to: the symptoms' meaning (the bundled
    model; word overlap when it cannot be loaded), the same fix, a rare identifier both name, the tool
    and the area (--explain shows each). Commands, flags and identifiers stay as the log wrote them.
    Records an entry already counts are not read again, and when nothing changes nothing is written.

    \b
    Example:
      memfiles distil --domain synthesis --explain
      memfiles distil --all --min-records 10 --json
    """
    from memfiles.errors import DrafterError
    from memfiles.services.distiller.distill import distil_domain, not_drafted
    from memfiles.services.distiller.experiences import check_domain, load_experiences, valid_domains

    if domains and all_:
        raise click.UsageError("give --domain NAME or --all, not both")
    if not domains and not all_:
        raise click.UsageError("give --domain NAME or --all")
    memory_dir = app.settings.memory_dir
    with errors_to_exit():
        chosen = (
            valid_domains(memory_dir) if all_ else list(dict.fromkeys(check_domain(memory_dir, d) for d in domains))
        )
        if summary_json:
            summaries = [load_experiences(memory_dir, d, f"memory/{d}/experiences.jsonl").summary() for d in chosen]
            print_json({"summaries": summaries})
            return
        draft = None
        if drafter == "llm":
            from memfiles.services.distiller.drafter import LlmDrafter

            draft = LlmDrafter(app.settings)
        reports = []
        failed: list[str] = []
        errors: list[DrafterError] = []
        stopped_on = None  # the domain on which the endpoint itself failed: the ones after it are not asked
        for d in chosen:  # each domain is its own write: one the drafter failed on does not undo the others
            if stopped_on is not None:  # asking again would cost as much, for nothing
                reports.append(not_drafted(app.project, d, f"not asked: the drafter failed on {stopped_on}"))
                failed.append(d)
                continue
            try:
                reports.append(distil_domain(app.project, d, min_records=min_records, dry_run=dry_run, drafter=draft))
            except DrafterError as error:
                reports.append(not_drafted(app.project, d, error))
                failed.append(d)
                errors.append(error)
                stopped_on = d if error.unreachable else None
        if errors and len(failed) == len(chosen):  # no domain written: the refusal, as for one domain
            raise errors[-1]  # the last: an endpoint that failed stopped the domains after it
    for report in reports:
        for line in report.warnings:
            warn(line)
    if failed:
        warn(f"not distilled, the drafter failed: {', '.join(failed)} (the other domains were; exit 1)")
    if as_json:
        print_json({"domains": [r.as_json() for r in reports]})
        if failed:
            raise SystemExit(1)
        return
    if not reports:
        click.echo("no domains yet: distil reads memory/<domain>/experiences.jsonl, and there is none", err=True)
        return
    for n, report in enumerate(reports):
        if n:
            click.echo()
        _print_report(report, explain)
    if all_ or len(reports) > 1:
        click.echo()
        click.echo(f"{'domain':<14} {'records':>7} {'signoff':>7} {'new':>4} {'annotated':>9}  status")
        for report in reports:
            data = report.as_json()
            new = sum(len(v) for v in data["added"].values())
            state = f"skipped ({data['skipped']})" if data["skipped"] else _state(data)
            click.echo(
                f"{report.domain:<14} {data['records_read']:>7} {_pct(data['signoff_rate']):>7} {new:>4}"
                f" {len(data['annotated']):>9}  {state}"
            )
    if failed:
        raise SystemExit(1)


@click.command()
@click.option(
    "--threshold",
    type=Number(0, 1),
    help="Score (0 to 1) at or above which two entries are near-duplicates. Default: the measured one.",
)
@json_option
@pass_app
def dupes(app: App, threshold: float | None, as_json: bool) -> None:
    """List pairs of entries that say the same thing, best first, with their score and signals.

    The score combines three signals, read from the index's stored vectors: how much the pair's
    cosine stands out from each entry's usual neighbours (margin), the TF-IDF similarity of the two
    titles alone (title), and rare code-like tokens both hold, such as class names, error strings,
    stack frames or flags (rare): score = 0.5 + margin + 0.2 x title + 0.1 x rare. Also shown, not
    weighted: the cosine (dense), whether one is the other's nearest neighbour (nearest), and whether
    the areas match (same_area). Two entries with the same title, or near-identical text, are always
    near-duplicates. Without an index, the same score is computed on the words (TF-IDF vectors instead
    of embeddings: word overlap, no meaning), and the command says so. Measured on SeaMonkey's
    duplicate bug reports: see docs/distiller.md.

    \b
    Example:
      memfiles dupes
      memfiles dupes --threshold 0.7 --json
    """
    from memfiles.cli.reads import warn_skipped
    from memfiles.services.read import read_project
    from memfiles.services.upkeep.dupes import duplicate_pairs

    with errors_to_exit():
        reading = read_project(app.project)  # a file that does not parse is named and left out
        pairs, mode, notes = duplicate_pairs(app.project, threshold, reading.loaded.files)
    if as_json:
        skipped = [f.as_json() for f in reading.skipped]
        print_json({"mode": mode, "findings": [pair.finding(mode).as_json() for pair in pairs], "skipped": skipped})
        return
    warn_skipped(reading)
    for note in notes:
        warn(note)
    for pair in pairs:
        a, b, signals = pair.a, pair.b, pair.signals
        if mode == "index":
            why = f"dense {signals['dense']:.2f}, margin {signals['margin']:+.2f}, title {signals['title']:.2f}"
            if signals["nearest"]:
                why += f", {signals['nearest']} nearest"
            if signals["rare"]:
                why += f", rare: {' '.join(signals['rare'])}"
        else:
            why = f"words {signals['lexical']:.2f}, margin {signals['margin']:+.2f}, title {signals['title']:.2f}"
        if signals["same_title"]:
            why += ", same title"
        if signals.get("same_body"):
            why += ", the same body word for word"
        click.echo(
            f"{pair.score:.3f}  {a.id} {a.title!r} ({a.path}:{a.line})  ~  {b.id} {b.title!r} ({b.path}:{b.line})"
        )
        click.echo(f"       {why}")
    if not pairs:
        click.echo("no near-duplicates", err=True)
