#!/usr/bin/env python3
"""A batch's time under `--decode auto` with two ways of giving the CPU threads their part, from measured costs.

Each batch of N files is drawn at random from ``file_costs.c``'s per-file costs (scaled by
``--scale`` to the machine modelled). The GPU side decodes its files at ``--gpu-us`` an image; the
hardware engine leaves progressive files to the CPU. T CPU threads each take the next image of a
round when free; a batch takes as long as its slower side. Both sides start at 0, and the decode
thread's own time beside them is left out: the figures compare the two ways, not a machine.

- ``last-m`` (the stage before this change): the CPU's share is the batch's last m JPEGs, in batch
  order, as one round; the progressive files among the GPU's part follow as a second round.
- ``lpt``: the CPU's round holds every file the engine leaves plus the batch's last m baseline
  files, the costliest first by the file's bytes (times the progressive factor): longest first,
  which leaves short files for the round's end.

For each it prints the best m over the grid, its time per batch and rate, and the CPU threads'
busy share. Then each under its own rule, smoothed over batches as the stage smooths it: for
``last-m`` the stage's rule before (m = N g / (g + c), c the round's wall time over its images),
for ``lpt`` the rule since (a thread's busy time per unit of estimated cost; the round foreseen
as the longer of its units over the threads and its largest file; files join from the batch's
end while the batch would end sooner). A measurement, not part of Stoke.

    python3 benchmarks/gpu/split-rounds/split_policies.py /tmp/costs.txt /tmp/sizes.txt --scale 2.12 --gpu-us 91
"""

import argparse
import random
import statistics

from round_makespan import schedule  # beside this script


def run(costs: list[float], threads: int) -> tuple[float, list[float]]:
    """Takes ``costs`` in order, each by the first free thread; the last end and the threads' free times."""
    return schedule(costs, [0.0] * threads)


def continue_run(free: list[float], costs: list[float]) -> float:
    """A second round on threads free at ``free``: its last end."""
    return schedule(costs, free)[0]


def last_m(batch, m, g, threads):
    """(batch time, CPU round's wall, images in it, CPU busy) with the last m JPEGs to the CPU."""
    n = len(batch)
    share = batch[n - m:] if m else []
    rest = batch[: n - m]
    wall, free = run([c for c, _, _ in share], threads)
    early = [c for c, prog, _ in rest if prog]
    cpu_end = continue_run(free, early) if early else wall
    gpu = g * sum(1 for _, prog, _ in rest if not prog)
    busy = sum(c for c, _, _ in share) + sum(early)
    return max(gpu, cpu_end), wall, m, busy


def lpt(batch, m, g, threads, factor):
    """The same with every progressive file and the last m baseline ones in one round, costliest first."""
    baseline = [f for f in batch if not f[1]]
    prog = [f for f in batch if f[1]]
    m = min(m, len(baseline))
    cpu = prog + (baseline[len(baseline) - m:] if m else [])
    cpu.sort(key=lambda f: -f[2] * (factor if f[1] else 1.0))
    cpu_end, _ = run([c for c, _, _ in cpu], threads)
    gpu = g * (len(baseline) - m)
    return max(gpu, cpu_end), cpu_end, len(cpu), sum(c for c, _, _ in cpu)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("costs", help="file_costs.c's output: 'us progressive path' per line")
    p.add_argument("sizes", help="'bytes path' per line (stat -c '%%s %%n')")
    p.add_argument("--scale", type=float, default=1.0, help="each cost times this")
    p.add_argument("--gpu-us", type=float, default=91.0, help="the GPU side's time per image")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--batches", type=int, default=400)
    p.add_argument("--progressive-factor", type=float, default=3.1, help="a progressive byte's cost in baseline bytes")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    size = {}
    for line in open(args.sizes):
        b, path = line.split(maxsplit=1)
        size[path.strip()] = int(b)
    files = []
    for line in open(args.costs):
        c, prog, path = line.split(maxsplit=2)
        files.append((float(c) * args.scale, int(prog) == 1, size[path.strip()]))
    rng = random.Random(args.seed)
    batches = [[rng.choice(files) for _ in range(args.batch)] for _ in range(args.batches)]
    n, g, t = args.batch, args.gpu_us, args.threads
    own = statistics.fmean(c for c, _, _ in files) / t
    cpu_only = statistics.fmean(run([c for c, _, _ in b], t)[0] for b in batches)
    print(f"{len(files)} files, {sum(f[1] for f in files)} progressive; CPU threads' own rate {1e6 / own:,.0f} images/s "
          f"({own:.1f} us an image); GPU side {1e6 / g:,.0f} images/s ({g:.0f} us an image)")
    print(f"CPU alone, a batch as one round: {cpu_only / 1000:.2f} ms a batch, {n * 1e6 / cpu_only:,.0f} images/s")
    print()
    print("| policy | best m | ms a batch | images/s | CPU threads busy | of CPU alone |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, fn in (("last-m", last_m), ("lpt", lambda b, m, g, t: lpt(b, m, g, t, args.progressive_factor))):
        best = None
        for m in range(0, n + 1, 4):
            outs = [fn(b, m, g, t) for b in batches]
            time = statistics.fmean(o[0] for o in outs)
            busy = statistics.fmean(o[3] for o in outs) / (t * time)
            if best is None or time < best[1]:
                best = (m, time, busy)
        m, time, busy = best
        print(f"| {name} | {m} | {time / 1000:.2f} | {n * 1e6 / time:,.0f} | {busy:.0%} | {cpu_only / time:.2f}x |")
    # The split's rule on last-m: c = the round's wall over its images, smoothed; m = n g / (g + c).
    c, m = None, n // 8
    for b in batches:
        _, wall, k, _ = last_m(b, m, g, t)
        if k:
            c = wall / k if c is None else 0.7 * c + 0.3 * wall / k
        m = max(1, min(n, round(n * g / (g + c))))
    outs = [last_m(b, m, g, t) for b in batches]
    time = statistics.fmean(o[0] for o in outs)
    print()
    print(f"last-m under the split's rule settles at m = {m} ({m / n:.0%}; the CPU side read at {c:.0f} us an image, "
          f"{own / c:.0%} of its own rate): {time / 1000:.2f} ms a batch, {n * 1e6 / time:,.0f} images/s")
    # lpt under the stage's rule since: a thread's time per unit of estimated cost (bytes, progressive
    # ones times the factor), from the threads' busy time in the round (each thread's own start to
    # end, so not the round's tail), smoothed; the round's time foreseen as the longer of its units
    # over the threads and its largest file; the share grows from the batch's end while that ends
    # the batch sooner.
    f = args.progressive_factor
    per_unit, times, shares = None, [], []
    for b in batches:
        baseline = [x for x in b if not x[1]]
        progressive = [x for x in b if x[1]]
        units = sum(x[2] * f for x in progressive)
        largest = max((x[2] * f for x in progressive), default=0.0)
        m = n // 8 if per_unit is None else 0
        if per_unit is not None:
            for x in reversed(baseline):
                before = max(per_unit * max(units / t, largest), g * (len(baseline) - m))
                after = max(per_unit * max((units + x[2]) / t, largest, x[2]), g * (len(baseline) - m - 1))
                if m >= 1 and after >= before:
                    break
                units += x[2]
                largest = max(largest, x[2])
                m += 1
        batch_time, _, _, busy = lpt(b, m, g, t, f)
        round_units = sum(x[2] * f for x in progressive) + sum(x[2] for x in baseline[len(baseline) - m :])
        per_unit = busy / round_units if per_unit is None else 0.7 * per_unit + 0.3 * busy / round_units
        times.append(batch_time)
        shares.append(m)
    settled = statistics.fmean(times[len(times) // 4 :])
    print(f"lpt under the stage's rule settles at a share of {statistics.median(shares[len(shares) // 4:]):.0f} "
          f"besides the progressive files: {settled / 1000:.2f} ms a batch, {n * 1e6 / settled:,.0f} images/s")

if __name__ == "__main__":
    main()
