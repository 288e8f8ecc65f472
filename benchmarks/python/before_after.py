#!/usr/bin/env python3
"""stoke.DataLoader of two checkouts side by side in one run: "nothing slower" for a change.

  python3 before_after.py --before DIR --after DIR --data DATA --out OUT [--repeats 5]

Each checkout's own package and producer (STOKE_HOME) run the same loops, in fresh processes, the
two alternating (and torch's DataLoader beside them for scale):
  cold: benchmarks/python/dataloader_bench.py --run of each checkout: a fresh process, the loader's
        creation (the JVM's start) included, 3 epochs, with no model and with 1 ms per image;
  warm: one process creates the loader and decodes an epoch untimed, then 3 epochs are timed,
        uint8 and float32 output (the float32 ring is 4x the bytes).
Writes OUT/runs.jsonl and OUT/summary.md (medians, after/before).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

WARM = """
import json, sys, time
sys.path.insert(0, sys.argv[1] + "/clients/python")
import stoke
loader = stoke.DataLoader(sys.argv[2], batch_size=256, num_workers=2, shuffle=True, seed=1, output=sys.argv[3])
for images, labels in loader:
    pass
start, n = time.perf_counter(), 0
for epoch in range(1, 4):
    loader.set_epoch(epoch)
    for images, labels in loader:
        n += len(images)
print(json.dumps({"images_per_s": n / (time.perf_counter() - start)}))
loader.close()
"""


def run(cmd, home):
    done = subprocess.run(cmd, env=dict(os.environ, STOKE_HOME=str(home)), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, type=Path)
    ap.add_argument("--after", required=True, type=Path)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    homes = {"before": args.before.resolve(), "after": args.after.resolve()}
    cells = [("cold", model, "uint8") for model in ("none", "sleep")] + [("warm", "none", o) for o in ("uint8", "float32")]
    runs = []
    with open(args.out / "runs.jsonl", "w") as log:
        for kind, model, output in cells:
            for repeat in range(args.repeats):
                sides = ["before", "after"] + (["torch"] if kind == "cold" else [])
                for side in sides if repeat % 2 == 0 else sides[::-1]:
                    home = homes.get(side, homes["after"])
                    if kind == "cold":
                        result = run([sys.executable, home / "benchmarks/python/dataloader_bench.py", "--run", "--loader",
                                      "torch" if side == "torch" else "stoke", "--data", args.data, "--model", model,
                                      "--workers", "2", "--batch-size", "256", "--epochs", "3"], home)
                    else:
                        result = run([sys.executable, "-c", WARM, str(home), args.data, output], home)
                    with open("/proc/loadavg") as f:
                        load = float(f.read().split()[0])
                    row = {"kind": kind, "model": model, "output": output, "side": side, "repeat": repeat + 1,
                           "load1": load, "images_per_s": result["images_per_s"],
                           "first_batch_ms": result.get("first_batch_ms"), "peak_pss_mb": result.get("peak_pss_mb")}
                    runs.append(row)
                    log.write(json.dumps(row) + "\n")
                    log.flush()
                    print(json.dumps(row), file=sys.stderr)
    lines = ["| run | model | output | before images/s | after images/s | after/before | torch images/s | "
             "first batch ms (before, after) | peak PSS MB (before, after) |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for kind, model, output in cells:
        def med(side, key):
            values = [r[key] for r in runs if (r["kind"], r["model"], r["output"], r["side"]) == (kind, model, output, side)
                      and r[key] is not None]
            return statistics.median(values) if values else None
        b, a, t = med("before", "images_per_s"), med("after", "images_per_s"), med("torch", "images_per_s")
        first = (f"{med('before', 'first_batch_ms'):.0f}, {med('after', 'first_batch_ms'):.0f}"
                 if kind == "cold" else "")
        pss = f"{med('before', 'peak_pss_mb'):.0f}, {med('after', 'peak_pss_mb'):.0f}" if kind == "cold" else ""
        lines.append(f"| {kind} | {model} | {output} | {b:.0f} | {a:.0f} | {a / b:.3f}x | "
                     f"{'' if t is None else f'{t:.0f}'} | {first} | {pss} |")
    header = (f"{args.repeats} fresh processes per cell, the sides alternating; batch 256, 2 workers, {args.data}; "
              f"{os.cpu_count()} cores. before: {args.before}, after: {args.after}. Medians.\n\n")
    (args.out / "summary.md").write_text(header + "\n".join(lines) + "\n")
    print(header + "\n".join(lines))


if __name__ == "__main__":
    main()
