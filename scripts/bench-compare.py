#!/usr/bin/env python3
"""Compares two sets of `cmdbuf-bench` results (its results.json files, from
the same machine): for every figure both sets measured (device, group,
shape, variant, metric, N), the median of each set's runs, and their ratio
new / old. Prints a markdown table per device, group and metric (how many
figures, the median, lowest and highest ratio), then the figures that moved
most in each direction. Below 1 is faster (or smaller) in the new set.

  bench-compare.py OLD.json[,OLD2.json...] NEW.json[,NEW2.json...] [--worst N]

Several runs of a set are given comma-separated; a figure's value in a set is
the median of its runs' medians. Used for docs/performance.md's comparison of
two commits' binaries run alternately in one call of the GPU machine.
Standard library only.
"""

import argparse
import collections
import json
import statistics


def load(paths):
    """Each figure's medians over the runs in `paths`."""
    figures = collections.defaultdict(list)
    for path in paths.split(","):
        with open(path) as f:
            for r in json.load(f):
                key = (r["device"], r["benchmark"], r["shape"], r["variant"], r["metric"], r["n"])
                figures[key].append(r["median"])
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--worst", type=int, default=10, help="figures listed in each direction")
    args = parser.parse_args()
    old, new = load(args.old), load(args.new)
    common = sorted(set(old) & set(new))
    print(f"{len(common)} figures in both sets; {len(set(old) - set(new))} only in the old, "
          f"{len(set(new) - set(old))} only in the new\n")
    groups = collections.defaultdict(list)
    moved = []
    for key in common:
        before, after = statistics.median(old[key]), statistics.median(new[key])
        if before <= 0:
            continue
        ratio = after / before
        groups[(key[0], key[1], key[4])].append(ratio)
        moved.append((ratio, key, before, after))
    print("| device | group | metric | figures | median new / old | lowest | highest |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (device, group, metric), ratios in sorted(groups.items()):
        print(f"| {device} | {group} | {metric} | {len(ratios)} | {statistics.median(ratios):.2f} | "
              f"{min(ratios):.2f} | {max(ratios):.2f} |")
    moved.sort()
    for title, rows in [("Slower or larger in the new set", reversed(moved[-args.worst:])),
                        ("Faster or smaller in the new set", moved[:args.worst])]:
        print(f"\n{title}:\n\n| new / old | device | group | shape | variant | metric | N | old | new |")
        print("|---:|---|---|---|---|---|---:|---:|---:|")
        for ratio, (device, group, shape, variant, metric, n), before, after in rows:
            print(f"| {ratio:.2f} | {device} | {group} | {shape} | {variant} | {metric} | {n} | {before:.0f} | {after:.0f} |")


if __name__ == "__main__":
    main()
