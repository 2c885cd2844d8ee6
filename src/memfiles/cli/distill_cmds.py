"""Commands of the distiller and of deduplication: distil, dupes."""

from __future__ import annotations

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json, warn


def _pct(rate: float) -> str:
    return f"{rate * 100:.0f}%"


def _print_report(report) -> None:  # type: ignore[no-untyped-def]
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
    click.echo(
        f"New entries:   +{len(added['Known Failure Patterns'])} Known Failure Patterns, "
        f"+{len(added['Successful Tool Flags'])} Successful Tool Flags, +{len(added['PDK / Tool Quirks'])} PDK Quirks"
    )
    click.echo(
        f"Annotations:   {len(data['annotated'])} existing entries updated"
        f" ({len(report.confirmed)} confirmed, {len(report.contradictions)} contradicted)"
    )
    for item in report.contradictions:
        click.echo(
            f"Contradiction: {item['id']} {item['title']!r}: was '{item['old_fix']}', "
            f"now '{item['new_fix']}' ({item['evidence']})"
        )
    if data["dedupe"] == "lexical":
        click.echo("Dedupe:        the index was not reachable; near-duplicates were found by word overlap only")
    click.echo(f"knowledge.md:  {data['knowledge']}  [{'updated' if data['updated'] else 'unchanged'}]")


@click.command()
@click.option("--domain", help="A subfolder of memory/ holding experiences.jsonl.")
@click.option("--all", "all_", is_flag=True, help="Every domain.")
@click.option("--min-records", type=int, default=5, show_default=True, help="Skip a domain with fewer valid records.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
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
    domain: str | None,
    all_: bool,
    min_records: int,
    dry_run: bool,
    summary_json: bool,
    drafter: str,
    as_json: bool,
) -> None:
    """Distil memory/<domain>/experiences.jsonl into knowledge entries in memory/<domain>/knowledge.md.

    New findings become entries under Known Failure Patterns, Successful Tool Flags and PDK / Tool
    Quirks. A finding the file already holds (found through the index, or by word overlap when the
    index is away) confirms the existing entry instead; the same symptom with a different fix is
    noted as a contradiction. Running it twice on the same records changes nothing.

    \b
    Example:
      memfiles distil --domain synthesis
      memfiles distil --all --min-records 10 --json
    """
    from memfiles.services.distill import distil_domain
    from memfiles.services.experiences import check_domain, load_experiences, valid_domains

    if bool(domain) == all_:
        raise click.UsageError("give --domain NAME or --all")
    memory_dir = app.settings.memory_dir
    with errors_to_exit():
        domains = valid_domains(memory_dir) if all_ else [check_domain(memory_dir, domain or "")]
        if summary_json:
            print_json([load_experiences(memory_dir, d, f"memory/{d}/experiences.jsonl").summary() for d in domains])
            return
        draft = None
        if drafter == "llm":
            from memfiles.services.drafter import LlmDrafter

            draft = LlmDrafter(app.settings)
        reports = [
            distil_domain(app.project, d, min_records=min_records, dry_run=dry_run, drafter=draft) for d in domains
        ]
    for report in reports:
        for line in report.warnings:
            warn(line)
    if as_json:
        print_json([r.as_json() for r in reports] if all_ else reports[0].as_json())
        return
    for n, report in enumerate(reports):
        if n:
            click.echo()
        _print_report(report)
    if all_:
        click.echo()
        click.echo(f"{'domain':<14} {'records':>7} {'signoff':>7} {'new':>4} {'annotated':>9}  status")
        for report in reports:
            data = report.as_json()
            new = sum(len(v) for v in data["added"].values())
            state = (
                f"skipped ({data['skipped']})" if data["skipped"] else ("updated" if data["updated"] else "unchanged")
            )
            click.echo(
                f"{report.domain:<14} {data['records_read']:>7} {_pct(data['signoff_rate']):>7} {new:>4}"
                f" {len(data['annotated']):>9}  {state}"
            )


@click.command()
@click.option("--threshold", type=float, help="Combined similarity at or above which two entries are near-duplicates.")
@json_option
@pass_app
def dupes(app: App, threshold: float | None, as_json: bool) -> None:
    """List pairs of entries that say the same thing, with their similarity.

    Uses the index (meaning and word overlap combined) when there is one, word overlap alone otherwise.

    \b
    Example:
      memfiles dupes --threshold 0.7 --json
    """
    from memfiles.services.dedupe import duplicate_pairs

    with errors_to_exit():
        pairs, mode = duplicate_pairs(app.project, threshold)
    if as_json:
        print_json(
            {
                "mode": mode,
                "pairs": [
                    {
                        "a": a.id,
                        "b": b.id,
                        "score": a.score,
                        "dense": a.dense,
                        "lexical": a.lexical,
                        "a_where": f"{a.path}:{a.line}",
                        "b_where": f"{b.path}:{b.line}",
                    }
                    for a, b in pairs
                ],
            }
        )
        return
    if mode == "lexical":
        warn("no index: near-duplicates by word overlap only (run memfiles backfill for meaning)")
    for a, b in pairs:
        click.echo(f"{a.score:.3f}  {a.id} {a.title!r} ({a.path}:{a.line})  ~  {b.id} {b.title!r} ({b.path}:{b.line})")
    if not pairs:
        click.echo("no near-duplicates", err=True)
