#!/usr/bin/env python3
"""`stoke tune` against `stoke tune --exhaustive` on the same data, step and machine.

    python3 tune_bench.py --data DIR --out OUT [--model M.onnx] [--scenarios loader,model,...]
                          [--tune-args "..."]

For each scenario (a step: `loader` is --step-ms 0, `model` is --step-ms-per-image 4, the
harness's simulated model, `balanced` is --step-ms 300, `onnx` is --model M.onnx), runs, each
as a fresh process, `./stoke tune DATA <step> --out OUT/<scenario>/tune` and then the same with
--exhaustive into OUT/<scenario>/exhaustive, timing each process from its start to its end. Then
compares: tune's recommendation against the sweep's best images/s (as tune measured it, and as the
sweep measured the same point), and tune's time against the sweep's. Writes OUT/summary.md and
OUT/runs.jsonl; the tune.json and tune.png of every run stay beside them.

Take `flock /tmp/stoke-bench.lock` around it: other benchmarks on the same cores would move both
sides. Each run records the cores other processes kept busy (other_cores); the summary flags any
run disturbed by more than a quarter core.
"""
import argparse
import json
import os
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
STEPS = {
    "loader": ["--step-ms", "0"],
    "model": ["--step-ms-per-image", "4"],
    "balanced": ["--step-ms", "300"],
}
DISTURBED = 0.25


def run(cmd):
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall


def point(report, b, w):
    for m in report["measured"]:
        if m["batch_size"] == b and m["workers"] == w:
            return m
    return None


def disturbed(report):
    others = [d["other_cores"] for d in report["decode"]] + [m["other_cores"] for m in report["measured"]]
    return max(others)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--model", help="an ONNX model for the onnx scenario; a missing MODEL.onnx named after a "
                   "torchvision model is exported first (embed_bench.py's export: random weights)")
    p.add_argument("--scenarios", default="loader,model,balanced,onnx")
    p.add_argument("--tune-args", default="", help="more options for both tune and the sweep")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = dict(STEPS)
    if args.model:
        model = Path(args.model).resolve()
        if not model.exists():
            import embed_bench
            model.parent.mkdir(parents=True, exist_ok=True)
            embed_bench.export(model.stem, model)
        steps["onnx"] = ["--model", str(model)]
    rows = []
    with open(out / "runs.jsonl", "w") as log:
        for name in args.scenarios.split(","):
            if name not in steps:
                print(f"skipping {name}: no --model given" if name == "onnx" else f"unknown scenario {name}")
                continue
            walls = {}
            reports = {}
            for kind in ("tune", "exhaustive"):
                dest = out / name / kind
                cmd = [str(CHECKOUT / "stoke"), "tune", args.data, *steps[name], "--out", str(dest),
                       *args.tune_args.split()] + (["--exhaustive"] if kind == "exhaustive" else [])
                walls[kind] = run(cmd)
                reports[kind] = json.loads((dest / "tune.json").read_text())
                log.write(json.dumps({"scenario": name, "kind": kind, "wall_s": walls[kind],
                                      "command": " ".join(cmd)}) + "\n")
                log.flush()
            t, e = reports["tune"], reports["exhaustive"]
            rec = t["recommendation"]
            best = max(e["measured"], key=lambda m: m["images_per_second"])
            same = point(e, rec["batch_size"], rec["workers"])
            row = {
                "scenario": name,
                "step": t["consumer"]["step"],
                "tune": f"b{rec['batch_size']}, {rec['workers']}w",
                "tune_ips": rec["images_per_second"],
                "sweep": f"b{e['recommendation']['batch_size']}, {e['recommendation']['workers']}w",
                "sweep_best": f"b{best['batch_size']}, {best['workers']}w",
                "sweep_best_ips": best["images_per_second"],
                "sweep_at_tune": same["images_per_second"] if same else None,
                "tune_s": walls["tune"],
                "sweep_s": walls["exhaustive"],
                "tune_internal_s": t["seconds"]["total"],
                "sweep_internal_s": e["seconds"]["total"],
                "sweep_measuring_s": e["seconds"]["measuring"],
                "points": len(t["measured"]),
                "sweep_points": len(e["measured"]),
                "other_cores": max(disturbed(t), disturbed(e)),
            }
            rows.append(row)
            print(json.dumps(row))
    cores = len(os.sched_getaffinity(0))
    lines = [
        f"`stoke tune` against `stoke tune --exhaustive`: {args.data}, {cores} cores, "
        f"options `{args.tune_args or '(defaults)'}`. Each a fresh process, tune first; time is the process's wall "
        "time (JVM start, page-cache pass and probes included for both). 'sweep at tune's choice' is the images/s the "
        "sweep measured at tune's recommendation: the choice's quality without the two runs' noise.",
        "",
        "| step | tune recommends | its images/s | sweep's best | its images/s | tune / best | sweep at tune's choice / best "
        "| tune s | sweep s | time ratio | points run | others' cores |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        at = r["sweep_at_tune"]
        lines.append(
            f"| {r['step']} | {r['tune']} | {r['tune_ips']:.0f} | {r['sweep_best']} | {r['sweep_best_ips']:.0f} "
            f"| {r['tune_ips'] / r['sweep_best_ips']:.1%} | {(at / r['sweep_best_ips']) if at else float('nan'):.1%} "
            f"| {r['tune_s']:.1f} | {r['sweep_s']:.1f} | {r['tune_s'] / r['sweep_s']:.2f} "
            f"| {r['points']} of {r['sweep_points']} | {r['other_cores']:.2f}"
            + (" (disturbed)" if r["other_cores"] > DISTURBED else "") + " |")
    lines += ["", f"Regenerate: `flock /tmp/stoke-bench.lock python3 benchmarks/python/tune_bench.py --data {args.data} "
                  f"--out {args.out}" + (f" --model {args.model}" if args.model else "")
              + f" --scenarios {args.scenarios}" + (f" --tune-args '{args.tune_args}'" if args.tune_args else "") + "`."]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
