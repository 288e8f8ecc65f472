#!/usr/bin/env python3
"""Plots of loader_gpu.py's cells.jsonl: images/s and the GPU's idle share against workers, both loaders.

  python3 plot.py RESULTS_DIR [RESULTS_DIR ...] --out DIR

Each RESULTS_DIR is one run (loader_gpu.py's --out); the runs are drawn side by side, a line each,
so that the spread between runs shows. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"torch": "#ee4c2c", "stoke": "#1f5fa8"}
LABELS = {"torch": "torch.utils.data.DataLoader (PIL)", "stoke": "stoke.DataLoader"}


def load(run):
    return [json.loads(line) for line in (run / "cells.jsonl").read_text().splitlines() if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    meta = json.loads((args.runs[0] / "meta.json").read_text())
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 8), sharex=True)
    for i, run in enumerate(args.runs):
        cells = load(run)
        style = ["-", "--", ":"][i % 3]
        ceiling = next(c for c in cells if c["loader"] == "memory")
        top.axhline(ceiling["images_per_s"], color="grey", linestyle=style, linewidth=1,
                    label=f"{meta['model']} alone (run {i + 1})")
        for kind in ("torch", "stoke"):
            mine = sorted((c for c in cells if c["loader"] == kind and c["model"] != "none"
                           and c.get("output", "float32") == "float32" and isinstance(c["workers"], int)),
                          key=lambda c: c["workers"])
            xs = [c["workers"] for c in mine]
            top.plot(xs, [c["images_per_s"] for c in mine], style, marker="o", color=COLOURS[kind],
                     label=f"{LABELS[kind]} (run {i + 1})")
            bottom.plot(xs, [100 * c["gpu_idle_share"] for c in mine], style, marker="o", color=COLOURS[kind],
                        label=f"{LABELS[kind]} (run {i + 1})")
            auto = [c for c in cells if c["loader"] == kind and c["workers"] == "auto"]
            for c in auto:
                top.plot([c["active_workers"]], [c["images_per_s"]], marker="*", markersize=14, color=COLOURS[kind],
                         linestyle="none", label=f"num_workers='auto', ended at {c['active_workers']} (run {i + 1})")
    top.set_ylabel("images/s while training")
    top.set_title(f"Feeding {meta['model']} (batch {meta['batch_size']}, bf16) on one {meta['device']}, "
                  f"{meta['cpus']} cores\ntraining transform, float32 batches, pin_memory=True")
    top.legend(fontsize=7)
    top.grid(alpha=0.3)
    bottom.set_ylabel("GPU idle (% of the time)")
    bottom.set_xlabel("workers (torch: processes; Stoke: decoding threads)")
    bottom.set_xscale("log", base=2)
    bottom.set_xticks([1, 2, 4, 8, 16])
    bottom.set_xticklabels(["1", "2", "4", "8", "16"])
    bottom.set_ylim(0, 100)
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out / "scaling.svg")
    print(args.out / "scaling.svg")


if __name__ == "__main__":
    main()
