#!/usr/bin/env python3
"""How long a round of the GPU decode stage's CPU share takes against its work, from measured costs.

The stage gives its CPU threads the last m JPEGs of each batch (``--decode auto``), started
together; each thread takes the round's next image when it is free (e7baebda), and the round ends
when its last image does. The split reads the round's wall time over m as the CPU side's time per
image. This draws rounds of m files at random from ``file_costs.c``'s per-file costs, schedules them
so on T threads, and prints, per m, the round's wall time over its ideal (the work / T), and the
time per image the split would read against the threads' own rate. Thread start-up, the decode
thread's share of the cores and the file reads are left out: the figures are the rounds' tails
alone. A measurement, not part of Stoke.

    python3 benchmarks/gpu/split-rounds/round_makespan.py /tmp/costs.txt --threads 16
"""

import argparse
import heapq
import random
import statistics


def schedule(costs: list[float], free: list[float]) -> tuple[float, list[float]]:
    """Takes ``costs`` in order, each by the first thread free, the threads free at ``free``: the last
    end (the threads' latest free time where there is nothing to take) and the threads' free times."""
    free = list(free)
    heapq.heapify(free)
    end = max(free) if free else 0.0
    for c in costs:
        t = heapq.heappop(free) + c
        end = max(end, t)
        heapq.heappush(free, t)
    return end, free


def makespan(costs: list[float], threads: int) -> float:
    """Wall time of ``costs`` taken in order, each by the first thread free (all start at 0)."""
    return schedule(costs, [0.0] * threads)[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("costs", help="file_costs.c's output: 'us progressive path' per line")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--rounds", type=int, default=2000)
    p.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 48, 66, 96, 128, 192, 256])
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    costs = [float(line.split()[0]) for line in open(args.costs) if line.strip()]
    mean = statistics.fmean(costs)
    own = mean / args.threads  # the threads' own time per image, all busy
    rng = random.Random(args.seed)
    print(f"{len(costs)} files, mean {mean:.0f} us one thread; {args.threads} threads' own rate: {own:.1f} us an image")
    print("| images in the round (m) | wall / ideal, median | p90 | time per image the split reads, median | of the threads' own |")
    print("|---:|---:|---:|---:|---:|")
    for m in args.sizes:
        ratios = []
        per_image = []
        for _ in range(args.rounds):
            draw = [rng.choice(costs) for _ in range(m)]
            wall = makespan(draw, args.threads)
            ratios.append(wall / (sum(draw) / args.threads))
            per_image.append(wall / m)
        ratios.sort()
        med = statistics.median(per_image)
        print(
            f"| {m} | {statistics.median(ratios):.2f}x | {ratios[int(0.9 * len(ratios))]:.2f}x "
            f"| {med:.1f} us | {own / med:.0%} |"
        )


if __name__ == "__main__":
    main()
