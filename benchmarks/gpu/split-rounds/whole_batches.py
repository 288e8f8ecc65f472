#!/usr/bin/env python3
"""`--decode auto` with whole batches to the CPU threads, scheduled as the stage schedules them, from measured costs.

The same files and costs as ``split_policies.py`` (``file_costs.c``'s per-file costs scaled by
``--scale``; the hardware engine leaves progressive files to the CPU). The stage as modelled:

- The decode thread takes the GPU's batches one at a time. Each takes ``--gpu-us`` an image nvJPEG
  decodes. The batch's CPU round (its progressive files) runs beside; the decode thread goes on to
  the next batch and hands this one out once its round has ended too (``--wait-rounds``: it waits
  for the round first, as the stage did before).
- T CPU threads take the next queued task when free (the GPU's batches' progressive files, oldest
  first); with none queued, the next image of the oldest whole batch. A task waits for the image a
  thread is decoding, not for the whole batch.
- Before the decode thread starts a GPU batch it gives the batches after it whole to the CPU while
  ``DecodeSplit.whole`` says so: a device buffer is free, fewer than ``--cpu-batches`` whole batches
  run, and the CPU's backlog plus the batch, at the whole batches' measured rate (smoothed; before
  the first, the mean file's cost over the threads), end no later than the GPU's batch plus one per
  free buffer.
- When no whole batch runs, the stage gives the GPU's batches a share of their JPEGs as well
  (``split_policies.py`` models that); here they keep only their progressive files, so the rows
  with no whole batch are a floor, not the stage.
- Batches are handed out in order; the consumer takes each at once and gives the one before back.
  The pool holds ``--in-flight`` buffers plus ``--cpu-batches``; a GPU batch waits for a free one,
  and where none is free and the oldest batch not handed out is a whole one, waits for that.

Reads, the decode thread's other host work and the copies are left out, as in ``split_policies.py``:
the figures compare ways of splitting, not machines. A measurement, not part of Stoke.

    python3 benchmarks/gpu/split-rounds/whole_batches.py /tmp/costs.txt --scale 2.12 --gpu-us 91 [--wait-rounds]
"""

import argparse
import random
import statistics


class Threads:
    """T threads: queued tasks first, then whole batches' images, each taken by the first free thread."""

    def __init__(self, t: int):
        self.free = [0.0] * t
        self.busy = 0.0
        self.tasks = []  # [release, cost, round]: the GPU's batches' progressive files, in order
        self.wholes = []  # whole batches: {"start", "costs", "next", "left", "end"}
        self.round_left = {}  # round id -> files not yet done
        self.round_end = {}

    def _next_work(self, tf: float):
        """The work a thread free at ``tf`` takes, and when it can start: a task, else a whole batch's image."""
        task = self.tasks[0] if self.tasks else None
        whole = next((w for w in self.wholes if w["next"] < len(w["costs"])), None)
        if task and task[0] <= tf:
            return "task", tf
        if whole and whole["start"] <= tf:
            return "whole", tf
        options = []
        if task:
            options.append((task[0], 0, "task"))
        if whole:
            options.append((whole["start"], 1, "whole"))
        if not options:
            return None, None
        start, _, kind = min(options)
        return kind, start

    def step(self) -> bool:
        """Gives the first free thread its next work; False when there is none."""
        i = min(range(len(self.free)), key=self.free.__getitem__)
        kind, start = self._next_work(self.free[i])
        if kind is None:
            return False
        if kind == "task":
            _, cost, rid = self.tasks.pop(0)
            end = start + cost
            self.round_left[rid] -= 1
            self.round_end[rid] = max(self.round_end.get(rid, 0.0), end)
        else:
            w = next(w for w in self.wholes if w["next"] < len(w["costs"]))
            cost = w["costs"][w["next"]]
            w["next"] += 1
            end = start + cost
            w["last"] = max(w.get("last", 0.0), end)
            w["left"] -= 1  # claimed; it ends at w["end"] once all are
            if w["left"] == 0:
                w["end"] = w["last"]
        self.busy += cost
        self.free[i] = end
        return True

    def run_until(self, t: float) -> None:
        """Starts every piece of work that can start before ``t``."""
        while True:
            i = min(range(len(self.free)), key=self.free.__getitem__)
            kind, start = self._next_work(self.free[i])
            if kind is None or start >= t:
                return
            self.step()

    def finish_round(self, rid: int) -> float:
        while self.round_left.get(rid, 0) > 0:
            if not self.step():
                raise RuntimeError("a round with no work")
        return self.round_end.get(rid, 0.0)

    def finish_whole(self, w) -> float:
        while w["left"] > 0:
            if not self.step():
                raise RuntimeError("a whole batch with no work")
        return w["end"]

    def left_at(self, t: float) -> int:
        """Images of whole batches not yet ended at ``t`` (those started before it count as left)."""
        self.run_until(t)
        return sum(w["left"] for w in self.wholes if w["left"] > 0)


def simulate(batches, g, threads, pool_k, cpu_batches, factor_files_mean, wait_rounds=True):
    cpu = Threads(threads)
    n = len(batches[0])
    pool = pool_k + cpu_batches
    free = pool
    pending = []  # in order: ("gpu", ready_time) or ("whole", w)
    held = False  # the consumer holds one batch, given back when it takes the next
    td = 0.0  # the decode thread's clock
    c = None  # the whole batches' wall per image, smoothed
    last_end = 0.0
    handed = []
    whole_count = 0
    k = 0

    def hand_ready(now: float, wait_head: bool) -> float:
        """Hands out what is done at the head, in order; returns the decode thread's clock after."""
        nonlocal free, held, c, last_end, whole_count
        while pending:
            kind, x = pending[0]
            if kind == "whole":
                if not wait_head:
                    cpu.run_until(now)
                    if x["left"] > 0 or x["end"] > now:
                        return now  # not ended yet: the decode thread goes on, and hands it later
                end = cpu.finish_whole(x)
                wall = x["end"] - max(x["start"], last_end)
                last_end = x["end"]
                c = wall / n if c is None else 0.7 * c + 0.3 * wall / n
                whole_count += 1
                t = max(now, end)
            else:
                if x is None:
                    return now  # the GPU's batch being decoded
                if isinstance(x, tuple):  # its round may not have ended
                    _, rid, gpu_end = x
                    if not wait_head:
                        cpu.run_until(now)
                        if cpu.round_left.get(rid, 0) > 0 or cpu.round_end.get(rid, 0.0) > now:
                            return now
                    x = max(gpu_end, cpu.finish_round(rid) if cpu.round_left.get(rid, 0) >= 0 else 0.0)
                t = max(now, x)
            pending.pop(0)
            handed.append(t)
            now = t
            if held:
                free += 1  # the consumer gives the batch before back
            held = True
            wait_head = False
        return now

    while k < len(batches):
        # A buffer for the GPU's batch: where none is free and the head is a whole batch, wait for it.
        while free == 0:
            if pending:
                td = hand_ready(td, True)
            else:
                raise RuntimeError("no buffer and nothing to wait for")
        free -= 1
        gpu_batch = batches[k]
        k += 1
        slot = ["gpu", None]  # ahead of the whole batches given now, in the sampler's order
        pending.append(slot)
        # The batches after it, whole to the CPU while the rule says so.
        while k < len(batches) and free > 0 and sum(1 for p in pending if p[0] == "whole") < cpu_batches:
            backlog = cpu.left_at(td)
            rate = c if c is not None else factor_files_mean / threads
            if (backlog + n) * rate > g * n * (free + 1):
                break
            free -= 1
            w = {"start": td, "costs": [cost for cost, _, _ in batches[k]], "next": 0, "left": n, "end": float("inf")}
            cpu.wholes.append(w)
            pending.append(("whole", w))
            k += 1
        # The GPU's batch: its progressive files to the CPU as tasks, the rest on the GPU.
        rid = k
        prog = [cost for cost, p, _ in gpu_batch if p]
        cpu.round_left[rid] = len(prog)
        for cost in prog:
            cpu.tasks.append([td, cost, rid])
        on_gpu = n - len(prog)
        gpu_end = td + g * on_gpu
        cpu.run_until(gpu_end)
        if wait_rounds:
            round_end = cpu.finish_round(rid) if prog else td
            slot[1] = max(gpu_end, round_end)
            td = hand_ready(slot[1], False)
        else:
            # The decode thread goes on at gpu_end; the batch is handed once its round has ended too.
            slot[1] = ("round", rid, gpu_end)
            td = hand_ready(gpu_end, False)
    td = hand_ready(td, True)
    while pending:
        td = hand_ready(td, True)
    total = handed[-1]
    return total, whole_count, cpu.busy / (threads * total)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("costs", help="file_costs.c's output: 'us progressive path' per line")
    p.add_argument("--scale", type=float, default=1.0, help="each cost times this")
    p.add_argument("--gpu-us", type=float, action="append", help="the GPU side's time per image (repeatable)")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--batches", type=int, default=400)
    p.add_argument("--in-flight", type=int, default=3)
    p.add_argument("--cpu-batches", type=int, action="append", help="whole batches at once (repeatable; 0: none)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--wait-rounds", action="store_true",
                   help="the decode thread waits for a GPU batch's CPU round before the next (the stage before)")
    args = p.parse_args()
    files = []
    for line in open(args.costs):
        c, prog, path = line.split(maxsplit=2)
        files.append((float(c) * args.scale, int(prog) == 1, path.strip()))
    rng = random.Random(args.seed)
    batches = [[rng.choice(files) for _ in range(args.batch)] for _ in range(args.batches)]
    mean = statistics.fmean(c for c, _, _ in files)
    t = args.threads
    cpu_alone = 1e6 / (mean / t)
    print(f"{len(files)} files, {sum(f[1] for f in files)} progressive; {t} CPU threads' own rate "
          f"{cpu_alone:,.0f} images/s; {args.batches} batches of {args.batch}; K = {args.in_flight}")
    print()
    print("| GPU side per image | whole batches at once | images/s | of the CPU's own rate | batches whole | CPU threads busy |")
    print("|---:|---:|---:|---:|---:|---:|")
    for g in args.gpu_us or [91.0]:
        for cb in args.cpu_batches or [0, 1, 2, 3]:
            total, wholes, busy = simulate(batches, g, t, args.in_flight, cb, mean, args.wait_rounds)
            rate = args.batch * len(batches) * 1e6 / total
            print(f"| {g:.0f} us | {cb} | {rate:,.0f} | {rate / cpu_alone:.2f}x | {wholes / len(batches):.0%} | {busy:.0%} |")


if __name__ == "__main__":
    main()
