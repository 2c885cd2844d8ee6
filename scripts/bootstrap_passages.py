"""Best-passage scoring against the plain grid under query resampling (thirteenth session).

`eval_retrieval.py loco --passages` reads, in one run, LOCO with best-passage scoring free (1.061x /
1.058x / 1.120x plain RRF held out, CACM / CISI / SeaMonkey) against 1.049x / 1.072x / 1.088x without
it. A single run's fold choice is one draw (L-071), so this redoes both procedures on the same bootstrap
samples of each collection's judged queries (paired: `bootstrap_loco` draws the same samples for both
from its seed) and prints how often each reaches 1.05x, and how often passages do better.

    python scripts/eval_retrieval.py loco --passages --save-sweep /tmp/sweep.pkl
    python scripts/bootstrap_passages.py /tmp/sweep.pkl

`--idea sentences` does the same for a long request read by its best sentence too (fourteenth session,
try_query_sentences.py), from `eval_retrieval.py loco --sentences --save-sweep`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from eval_retrieval import NAMES, load_sweep, plain, plain_or_passages, plain_or_sentences
from retrieval_sweep import best, bootstrap_loco


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sweep", type=Path, help="the pickle eval_retrieval.py --passages --save-sweep wrote")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--idea", choices=["passages", "sentences"], default="passages")
    args = parser.parse_args()
    saved, queries, rrf = load_sweep(args.sweep)
    with_idea, idea_label = (
        (plain_or_passages, "best passage") if args.idea == "passages" else (plain_or_sentences, "best sentence")
    )
    on = lambda s: getattr(s, args.idea)  # noqa: E731
    if not any(on(s) for s in queries):
        print(
            f"{args.sweep}: no {args.idea} settings in it; run eval_retrieval.py loco --{args.idea} --save-sweep",
            file=sys.stderr,
        )
        sys.exit(2)
    runs = {
        "plain grid": bootstrap_loco(queries, rrf, NAMES, plain, args.resamples),
        f"grid + {idea_label}": bootstrap_loco(queries, rrf, NAMES, with_idea, args.resamples),
    }
    print(f"{args.resamples} bootstrap samples of each collection's judged queries, the same for both procedures\n")
    print("| procedure | held out | median ÷ RRF | 95% of samples between | samples ≥ 1.05× |")
    print("|---|---|---|---|---|")
    for label, ratios in runs.items():
        for name in NAMES:
            r = ratios[name]
            low, mid, high = np.percentile(r, [2.5, 50, 97.5])
            print(f"| {label} | {name} | {mid:.3f}× | {low:.3f}× to {high:.3f}× | {np.mean(r >= 1.05):.0%} |")
    print()
    for label, ratios in runs.items():
        every = np.all([ratios[n] >= 1.05 for n in NAMES], axis=0)
        print(f"{label}: ≥ 1.05× on every collection in {np.mean(every):.0%} of the samples")
    results, baselines = saved["results"], saved["baselines"]
    print("\nWhat the rule would ship (best mean nDCG@10 over all three; not held out):")
    for label, allowed in (
        ("plain grid", plain),
        (f"with {args.idea}", lambda s: with_idea(s) and on(s)),
        (f"with {args.idea}, depth 50", lambda s: with_idea(s) and on(s) and s.depth == 50),
    ):
        chosen = best(results, NAMES, allowed)
        shown = ", ".join(f"{n} {results[chosen][n][0] / baselines[n]['RRF k=60'][0]:.3f}x" for n in NAMES)
        print(f"  {label}: {chosen.label()} ({shown})")
    print()
    plain_r, idea_r = runs["plain grid"], runs[f"grid + {idea_label}"]
    for name in NAMES:
        better, worse = np.mean(idea_r[name] > plain_r[name]), np.mean(idea_r[name] < plain_r[name])
        print(f"{name}: {args.idea} higher in {better:.0%} of the samples, lower in {worse:.0%}")


if __name__ == "__main__":
    main()
