#!/usr/bin/env python3
"""A fresh stoke.DataLoader's start, build against build: how long its constructor takes (the
JVM's start, up to its ring), when its first batch comes, and its cold epoch's rate beside the
warm one's (recipes_bench.py's two epochs).

Each run is a fresh Python process over the same ImageFolder, with torchvision's ResNet50 v2
training transform (recipes_bench.py's), batch 64, 2 workers, shuffle; the builds alternate within
each round. A build is a Stoke checkout, run through its own ./stoke (``STOKE_HOME``); each one's
first run, which may build it or record its AOT cache, is not counted.

  python benchmarks/python/start_bench.py --data ~/.cache/stoke/imagenet-sample-1000-v1 \\
      --homes /tmp/before /path/to/stoke --rounds 5
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent


def run(data, copies, work):
    """One run in this process: recipes_bench's two epochs, and the constructor's time; prints one
    JSON object."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(CHECKOUT / "clients" / "python"))
    import recipes_bench
    import torchvision

    import stoke

    folder = recipes_bench.copies(data, copies, Path(work))
    start = time.perf_counter()
    dataset = torchvision.datasets.ImageFolder(folder, recipes_bench.recipe("train", "pil"))
    loader = stoke.DataLoader(dataset, batch_size=64, num_workers=2, shuffle=True, persistent_workers=True)
    constructed = time.perf_counter() - start
    print(json.dumps({"constructor_s": constructed, **recipes_bench.two_epochs(loader, start)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--homes", nargs="+", help="Stoke checkouts, each run through its ./stoke")
    ap.add_argument("--copies", type=int, default=3, help="link each image this many times (3: 3,000 images)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", default="/tmp")
    ap.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        return run(args.data, args.copies, args.work)
    if not args.homes:
        ap.error("--homes is required")
    command = [sys.executable, __file__, "--run", "--data", args.data, "--copies", str(args.copies), "--work",
               args.work]
    results = {home: [] for home in args.homes}
    for r in range(args.rounds + 1):  # round 0 builds each checkout and records its AOT cache
        for home in args.homes:
            out = subprocess.run(command, env={**os.environ, "STOKE_HOME": home}, check=True, text=True,
                                 stdout=subprocess.PIPE).stdout
            result = json.loads(out.strip().splitlines()[-1])
            if r:
                results[home].append(result)
                print(f"round {r} {home}: {result}", file=sys.stderr)
    print("| build | `DataLoader()` returns | first batch | cold epoch, images/s | warm epoch, images/s |")
    print("|---|---:|---:|---:|---:|")
    for home, rs in results.items():
        print(f"| {home} | {statistics.median(r['constructor_s'] for r in rs):.3f} s | "
              f"{statistics.median(r['cold']['first_batch_s'] for r in rs):.3f} s | "
              f"{statistics.median(r['cold']['images'] / r['cold']['seconds'] for r in rs):.0f} | "
              f"{statistics.median(r['warm']['images'] / r['warm']['seconds'] for r in rs):.0f} |")


if __name__ == "__main__":
    main()
