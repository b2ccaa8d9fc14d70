"""Two runs of ``bench_fresh_splits.py`` on the same fits: what a change moved.

Each run's ``--jsonl`` file holds one record per fit; the fits are paired
by data set, split seed and estimator, and each is judged against the peer
of its own run (``judged`` of ``bench_fresh_splits.py``: the goals of issue
15). For every estimator the script prints the fits paired and changed,
the mean change of the gain over the peer with its standard error (higher
test log density, or lower log loss, is a gain), how many fits moved up
and down by more than ``--tolerance``, the fits that miss a goal in each
run, and the median time ratio of the second run to the first. It then
lists the fits whose gain moved by more than ``--list-above``. Run the
two sides one after the other on a quiet machine: their time ratios share
no run, so the machine's drift between them is in the ratio too (the fits
the change did not touch show how much).

    PYTHONPATH=<before>:<before>/benchmarks python benchmarks/bench_fresh_splits.py \\
        --seeds 0,1,2 --jsonl before.jsonl
    PYTHONPATH=.:benchmarks python benchmarks/bench_fresh_splits.py \\
        --seeds 0,1,2 --jsonl after.jsonl
    python benchmarks/compare_fresh_splits.py before.jsonl after.jsonl
"""

import argparse
import json

import numpy as np
from bench_defaults import PEERS
from bench_fresh_splits import judged  # benchmarks/ is sys.path[0]


def load(path):
    """``{(data, seed, model): record}`` of one run's JSON lines."""
    with open(path) as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return {(r["data"], r["seed"], r["model"]): r for r in records}


def judged_fits(run):
    """``{key: (time s, gain over the peer, number of misses)}`` of a run."""
    peers = {key[:2]: r for key, r in run.items() if r["model"] in PEERS.values()}
    out = {}
    for key, record in run.items():
        if record["model"] in PEERS.values() or key[:2] not in peers:
            continue
        _, gain, misses = judged(record, peers[key[:2]])
        out[key] = (record.get("seconds", np.nan), gain, len(misses))
    return out


def compare(before, after, tolerance=1e-3, list_above=0.05):
    """The per-estimator table and the list of large moves, as Markdown."""
    first, second = judged_fits(before), judged_fits(after)
    paired = sorted(set(first) & set(second))
    lines = [
        "| estimator | fits | changed | gain change, mean (SE) | up / down "
        "| fits missing a goal, first -> second | time second / first, median |",
        "| --- | ---: | ---: | --- | --- | --- | ---: |",
    ]
    listed = []
    for model in sorted({key[2] for key in paired}):
        keys = [key for key in paired if key[2] == model]
        change = np.array([second[k][1] - first[k][1] for k in keys])
        times = np.array([second[k][0] / first[k][0] for k in keys])
        se = np.nanstd(change, ddof=1) / np.sqrt(max(np.sum(np.isfinite(change)), 1))
        missed = [sum(run[k][2] > 0 for k in keys) for run in (first, second)]
        lines.append(
            f"| {model} | {len(keys)} | {int(np.sum(np.abs(change) > 0))} | "
            f"{np.nanmean(change):+.4f} ({se:.4f}) | "
            f"{int(np.sum(change > tolerance))} / {int(np.sum(change < -tolerance))} | "
            f"{missed[0]} -> {missed[1]} | {np.nanmedian(times):.2f} |"
        )
        for key, moved in zip(keys, change, strict=True):
            if abs(moved) > list_above:
                listed.append(
                    f"- {key[0]} split {key[1]}, {model}: gain "
                    f"{first[key][1]:+.3f} -> {second[key][1]:+.3f}, time "
                    f"{first[key][0]:.2f} -> {second[key][0]:.2f} s"
                )
    return "\n".join(lines + [""] + listed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", help="the first run's --jsonl (before)")
    parser.add_argument("second", help="the second run's --jsonl (after)")
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--list-above", type=float, default=0.05)
    args = parser.parse_args()
    print(compare(load(args.first), load(args.second), args.tolerance, args.list_above))


if __name__ == "__main__":
    main()
