#!/usr/bin/env python3
"""Time to first batch over remote shards, with and without their index.json (issue: past one
machine). One run of this script:

  1. packs the demo's built-in sample (1,000 JPEGs as they are: --max-side 100000 keeps every file's
     bytes) into shards of about 23 MB with `stoke pack`,
  2. serves them from s3proxy on 127.0.0.1 (filesystem back end) under four prefixes: 4 shards and
     64 shards (the packed ones over again under new names, 1.5 GB), each with an index.json and
     without one,
  3. then --repeats rounds, the four cases alternating, each a fresh Python process: the clock starts,
     stoke.DataLoader("s3://bench/<prefix>/") is created (its Java producer starts, opens the
     dataset and decodes), and stops at the first batch.

Writes OUT/runs.jsonl and OUT/summary.md (medians).
  python3 benchmarks/python/index_open_bench.py --out docs/benchmarks/results-index [--repeats 3]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import shards_bench  # noqa: E402  (s3proxy's start, the checkout's ./stoke)

SAMPLE = Path.home() / ".cache" / "stoke" / "imagenet-sample-1000-v1"

DRIVER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
start = time.perf_counter()
import stoke
loader = stoke.DataLoader(sys.argv[1], batch_size=64, num_workers=2, shard_cache_size="2G")
for batch in loader:
    first = time.perf_counter() - start
    break
loader.close() if hasattr(loader, "close") else None
print(json.dumps({"first_batch_s": first}))
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--work", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "stoke-index-bench"))
    a = p.parse_args()
    out, work = Path(a.out), Path(a.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    if not SAMPLE.exists():
        shards_bench.sh([shards_bench.STOKE, "demo"], stdout=subprocess.DEVNULL)
    total = sum(f.stat().st_size for f in SAMPLE.rglob("*.jpg"))
    shutil.rmtree(work / "s3proxy-data", ignore_errors=True)
    pack = work / "pack"
    if not (pack / "index.json").exists():
        shards_bench.sh([shards_bench.STOKE, "pack", str(SAMPLE), "--out", str(pack), "--max-side", "100000",
                         "--shard-size", "23M"], stdout=subprocess.DEVNULL)
    packed = json.loads((pack / "index.json").read_text())["shardlist"]
    empty = work / "empty"
    empty.mkdir(exist_ok=True)
    proc, endpoint = shards_bench.start_s3proxy(work, empty)
    try:
        bucket = work / "s3proxy-data" / "bench"
        cases = {}
        for n in (4, 64):
            for indexed in (True, False):
                prefix = f"s{n}-{'index' if indexed else 'noindex'}"
                (bucket / prefix).mkdir(parents=True, exist_ok=True)
                entries = []
                for i in range(n):
                    src = packed[i % len(packed)]
                    name = f"train-{i:06d}.tar"
                    os.link(pack / src["url"], bucket / prefix / name)
                    entries.append({"url": name, "nsamples": src["nsamples"], "filesize": src["filesize"]})
                if indexed:
                    (bucket / prefix / "index.json").write_text(json.dumps(
                        {"__kind__": "wids-shard-index-v1", "wids_version": 1, "shardlist": entries,
                         "stoke": {"labelled": True}}))
                size = sum(e["filesize"] for e in entries)
                cases[f"{n} shards ({size / 1e9:.2f} GB), {'index' if indexed else 'no index'}"] = \
                    f"s3://bench/{prefix}/"
        env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench",
                   AWS_SECRET_ACCESS_KEY="bench-secret", AWS_REGION="us-east-1",
                   STOKE_HOME=str(shards_bench.CHECKOUT))
        client = str(shards_bench.CHECKOUT / "clients" / "python")
        subprocess.run(["/usr/bin/python3", "-c", DRIVER, next(iter(cases.values())), client], env=env,
                       capture_output=True, check=True)  # builds and records the AOT cache, untimed
        runs = []
        with open(out / "runs.jsonl", "w") as f:
            for r in range(a.repeats):
                for case, url in cases.items():
                    done = subprocess.run(["/usr/bin/python3", "-c", DRIVER, url, client], env=env,
                                          capture_output=True, text=True, check=True)
                    row = {"case": case, "repeat": r, **json.loads(done.stdout.strip().splitlines()[-1]),
                           "said_fetched_all": "fetched all" in done.stderr}
                    runs.append(row)
                    f.write(json.dumps(row) + "\n")
                    print(json.dumps(row), file=sys.stderr)
    finally:
        proc.kill()
    lines = ["# Time to first batch over remote shards, with and without index.json", "",
             f"The demo's 1,000 JPEGs ({total / 1e6:.0f} MB, stored as they are) packed into shards of about 23 MB, "
             "4 of them and 64 (the packed shards again under new names), served by s3proxy on 127.0.0.1. Each run a fresh process: from creating "
             "`stoke.DataLoader(\"s3://bench/PREFIX/\", batch_size=64, num_workers=2)` (its Java producer's "
             f"start included) to the first batch. {a.repeats} runs a case, the cases alternating; medians.", "",
             "| case | first batch (s) | runs (s) |", "| --- | ---: | --- |"]
    for case in cases:
        xs = [x["first_batch_s"] for x in runs if x["case"] == case]
        lines.append(f"| {case} | {statistics.median(xs):.2f} | {', '.join(f'{x:.2f}' for x in xs)} |")
    lines += ["", "Regenerate: `python3 benchmarks/python/index_open_bench.py --out DIR`."]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
