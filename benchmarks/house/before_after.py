#!/usr/bin/env python3
"""Two builds of Stoke side by side on this machine: `stoke demo` (cold, and warm with an untimed
warm-up), the Python benchmark's stoke.DataLoader run (benchmarks/python/dataloader_bench.py
--run --loader stoke --model none) and `stoke embed` (the sample through embed/models'
tiny CNN), each a fresh process, the two builds alternating.
  python3 benchmarks/house/before_after.py --before CHECKOUT --after CHECKOUT --out DIR [--repeats 4]
Writes DIR/runs.jsonl (one line a run) and DIR/summary.md (medians, and after/before ratios)."""
import argparse, json, os, re, statistics, subprocess, sys
from pathlib import Path

DATA = Path.home() / ".cache" / "stoke" / "imagenet-sample-1000-v1"


def demo(checkout, warm):
    cmd = [str(Path(checkout) / "stoke"), "demo"] + (["--warmup-images", "1000"] if warm else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    ips = float(re.search(r"throughput\s+([\d.]+) images/s", out).group(1))
    first = float(re.search(r"time to first batch\s+([\d.]+) ms", out).group(1))
    return {"images_per_s": ips, "first_batch_ms": first}


def embed(checkout, scratch):
    model = Path(__file__).resolve().parent.parent.parent / "embed" / "models" / "tiny_cnn_f32.onnx"
    out = Path(scratch) / ".embed-out"  # written and removed each run; not a result
    subprocess.run(["rm", "-rf", str(out)], check=True)
    text = subprocess.run([str(Path(checkout) / "stoke"), "embed", str(DATA), "--model", str(model), "--output-name", "embedding", "--out", str(out)],
                          capture_output=True, text=True, check=True).stdout
    subprocess.run(["rm", "-rf", str(out)], check=True)
    return {"images_per_s": float(re.search(r"throughput\s+([\d.]+) images/s", text).group(1)), "first_batch_ms": None}


def python_run(checkout):
    env = dict(os.environ, STOKE_HOME=str(checkout))
    # Each build's own benchmark script, so each runs its own Python client (the script puts its
    # checkout's clients/python first on sys.path).
    script = Path(checkout) / "benchmarks" / "python" / "dataloader_bench.py"
    out = subprocess.run(["/usr/bin/python3", str(script), "--run", "--loader", "stoke", "--model", "none",
                          "--data", str(DATA)], capture_output=True, text=True, check=True, env=env).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"images_per_s": r["images_per_s"], "first_batch_ms": r["first_batch_ms"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=4)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    builds = {"before": a.before, "after": a.after}
    for checkout in builds.values():  # builds the jar and records the AOT cache, untimed
        subprocess.run([str(Path(checkout) / "stoke"), "demo"], capture_output=True, check=True)
    cases = {"demo cold": lambda c: demo(c, False), "demo warm": lambda c: demo(c, True),
             "python stoke.DataLoader": python_run, "stoke embed (tiny CNN)": lambda c: embed(c, out)}
    runs = []
    with open(out / "runs.jsonl", "w") as f:
        for r in range(a.repeats):
            for case, fn in cases.items():
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                for build in order:
                    row = {"case": case, "build": build, "repeat": r, **fn(builds[build])}
                    runs.append(row)
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    print(json.dumps(row), file=sys.stderr)
    commit = {b: subprocess.run(["git", "-C", c, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() for b, c in builds.items()}
    lines = ["# Before and after, side by side", "",
             f"Before: {commit['before']}; after: {commit['after']} (with uncommitted changes, if any). "
             f"Machine: {os.cpu_count()} cores. {a.repeats} runs of each case and build, each a fresh "
             "process, the builds alternating. Medians; after/before ratios (above 1: after is faster, "
             "for first batch below 1 is faster).", "",
             "| case | before images/s | after images/s | after/before | before first batch ms | "
             "after first batch ms |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for case in cases:
        def median(build, key):
            values = [x[key] for x in runs if x["case"] == case and x["build"] == build and x[key] is not None]
            return statistics.median(values) if values else None
        ips = {b: median(b, "images_per_s") for b in builds}
        first = {b: median(b, "first_batch_ms") for b in builds}
        shown = {b: "-" if first[b] is None else f"{first[b]:.0f}" for b in builds}
        lines.append(f"| {case} | {ips['before']:.0f} | {ips['after']:.0f} | "
                     f"{ips['after'] / ips['before']:.3f} | {shown['before']} | {shown['after']} |")
    lines += ["", "Every run (images/s):", ""]
    for case in cases:
        for b in builds:
            lines.append(f"- {case}, {b}: " + ", ".join(f"{x['images_per_s']:.0f}" for x in runs
                                                         if x["case"] == case and x["build"] == b))
    lines += ["", "Regenerate: `python3 benchmarks/house/before_after.py --before OLD_CHECKOUT --after . --out DIR`."]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
