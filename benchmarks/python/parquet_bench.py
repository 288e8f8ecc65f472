#!/usr/bin/env python3
"""Parquet against tar shards of the same JPEGs, side by side (issue: where users keep their images).

One run of this script:

  1. takes the demo's built-in sample (1,000 ImageNet-like JPEGs, 112 MB; `stoke demo` makes it)
     and writes the same files, byte for byte, as
       - tar shards: `stoke pack --max-side 100000` (each file's bytes kept), about 23 MB a shard;
       - Parquet by parquet-java: `stoke make-dataset --format parquet` with the demo's options
         (the generator gives the same files), one file of 10 row groups of 100 rows, uncompressed;
       - Parquet by DuckDB (benchmarks/parquet/FolderToParquet.java, its own writer), 10 files of
         100 rows, SNAPPY and uncompressed;
     checking that the parquet-java file's images are the sample's;
  2. times `stoke bench` (eval transform, uint8, batch 256, 2 workers) over each, every run a fresh
     process, the cases alternating, --repeats rounds: cold (the process's first pass) and warm
     (after --warmup-images 1000 in the same process);
  3. times `stoke embed` (embed/models/tiny_cnn_f32.onnx) over the tar shards and over the Parquet;
  4. serves 4 and 64 Parquet files (the 10 DuckDB SNAPPY files over again under new names) from
     s3proxy on 127.0.0.1, with and without parquet-index.json (`stoke catalog`), and times from
     creating stoke.DataLoader("s3://...*.parquet") to its first batch, each a fresh process, beside
     the same over the local files.

Writes OUT/runs.jsonl and OUT/summary.md (medians).
  python3 benchmarks/python/parquet_bench.py --out docs/benchmarks/results-parquet [--repeats 3]
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
CHECKOUT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import shards_bench  # noqa: E402  (s3proxy's start, the checkout's ./stoke)

STOKE = shards_bench.STOKE
SAMPLE = Path.home() / ".cache" / "stoke" / "imagenet-sample-1000-v1"
DEMO = ["--images", "1000", "--seed", "20261121", "--classes", "100"]  # DemoSample's options
JAVA = os.path.join(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"), "bin", "java")
DUCKDB = Path.home() / ".m2/repository/org/duckdb/duckdb_jdbc/1.4.4.0/duckdb_jdbc-1.4.4.0.jar"

FIRST_BATCH = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
start = time.perf_counter()
import stoke
loader = stoke.DataLoader(sys.argv[1], batch_size=64, num_workers=2, shard_cache_size="2G")
for batch in loader:
    first = time.perf_counter() - start
    break
loader.close()
print(json.dumps({"first_batch_s": first}))
"""


def duckdb(folder, out, codec, first=None, count=None):
    if not DUCKDB.exists():
        shards_bench.sh(["mvn", "-B", "-q", "--no-transfer-progress", "dependency:get",
                         "-Dartifact=org.duckdb:duckdb_jdbc:1.4.4.0"], cwd=CHECKOUT)
    args = [JAVA, "--enable-native-access=ALL-UNNAMED", "-cp", str(DUCKDB),
            str(CHECKOUT / "benchmarks/parquet/FolderToParquet.java"), str(folder), str(out), codec, "100"]
    if first is not None:
        args += [str(first), str(count)]
    shards_bench.sh(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_data(work):
    if not SAMPLE.exists():
        shards_bench.sh([STOKE, "demo"], stdout=subprocess.DEVNULL)
    data = {}
    pack = work / "tar"
    if not (pack / "index.json").exists():
        shards_bench.sh([STOKE, "pack", str(SAMPLE), "--out", str(pack), "--max-side", "100000",
                         "--shard-size", "23M"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    data["tar shards"] = str(pack)
    pj = work / "parquet-java"
    if not pj.exists():
        shards_bench.sh([STOKE, "make-dataset", str(pj)] + DEMO + ["--format", "parquet", "--rows-per-file", "1000",
                        "--rows-per-group", "100"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    data["Parquet, parquet-java, uncompressed"] = str(pj)
    for codec in ("snappy", "uncompressed"):
        d = work / f"duckdb-{codec}"
        if not d.exists():
            d.mkdir()
            for f in range(10):
                duckdb(SAMPLE, d / f"train-{f:05d}-of-00010.parquet", codec, f * 100, 100)
        data[f"Parquet, DuckDB, {codec}"] = str(d)
    return data


def check_same_images(work):
    """The parquet-java file holds the sample's bytes (the generator is deterministic)."""
    folder = sorted(p for p in SAMPLE.rglob("*.jpg"))
    total = sum(p.stat().st_size for p in folder)
    pj = sum(p.stat().st_size for p in (work / "parquet-java").glob("*.parquet"))
    # The Parquet file holds the images' bytes uncompressed, plus paths, labels and metadata.
    if not 0 <= pj - total < 200_000:
        raise SystemExit(f"the parquet-java file ({pj} bytes) does not hold the sample's {total} bytes of JPEG")


def bench(dataset, warm):
    return shards_bench.stoke_bench(dataset, 2, 256, 1000 if warm else 0)


def embed(dataset, work):
    out = work / "embed-out"
    shutil.rmtree(out, ignore_errors=True)
    model = CHECKOUT / "embed" / "models" / "tiny_cnn_f32.onnx"
    start = time.perf_counter()
    p = shards_bench.sh([STOKE, "embed", dataset, "--model", str(model), "--output-name", "embedding", "--out",
                         str(out), "--batch-size", "64"], capture_output=True)
    wall = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    # embed's own figure: images/s from its first batch to its last, the model included
    loop = next(float(line.split()[1]) for line in (p.stdout + p.stderr).splitlines()
                if line.strip().startswith("throughput"))
    return {"process_s": wall, "images_per_s": 1000 / wall, "loop_images_per_s": loop}


def first_batch(spec, env):
    p = subprocess.run([sys.executable, "-c", FIRST_BATCH, spec, str(CHECKOUT / "clients" / "python")],
                       capture_output=True, text=True, env=env, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def median(rows, key):
    return statistics.median(r[key] for r in rows)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--work", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "stoke-parquet-bench"))
    a = p.parse_args()
    out, work = Path(a.out), Path(a.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    data = make_data(work)
    check_same_images(work)
    commit = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    runs = []
    with open(out / "runs.jsonl", "w") as log:
        def record(r):
            runs.append(r)
            log.write(json.dumps(r) + "\n")
            log.flush()
            print(json.dumps(r), file=sys.stderr)

        for rep in range(a.repeats):
            for warm in (False, True):
                for name, spec in data.items():
                    record(dict(bench(spec, warm), case=name, mode="warm" if warm else "cold", round=rep, kind="bench"))
            for name in ("tar shards", "Parquet, DuckDB, snappy"):
                record(dict(embed(data[name], work), case=name, round=rep, kind="embed"))

        # Remote: 4 and 64 files from s3proxy, with and without the index, beside the local files.
        empty = work / "empty"
        empty.mkdir(exist_ok=True)
        shutil.rmtree(work / "s3proxy-data", ignore_errors=True)
        proc, endpoint = shards_bench.start_s3proxy(work, empty)
        try:
            bucket = work / "s3proxy-data" / "bench"
            src = sorted(Path(data["Parquet, DuckDB, snappy"]).glob("*.parquet"))
            env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench",
                       AWS_SECRET_ACCESS_KEY="bench-secret", AWS_REGION="us-east-1")
            cases = {}
            for n in (4, 64):
                for indexed in (True, False):
                    prefix = f"p{n}-{'index' if indexed else 'noindex'}"
                    (bucket / prefix).mkdir(parents=True, exist_ok=True)
                    for i in range(n):
                        os.link(src[i % len(src)], bucket / prefix / f"train-{i:05d}.parquet")
                    spec = f"s3://bench/{prefix}/*.parquet"
                    if indexed:
                        shards_bench.sh([STOKE, "catalog", spec], env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
                    cases[f"{n} files, {'index' if indexed else 'no index'}"] = spec
            cases["local, 10 files"] = data["Parquet, DuckDB, snappy"] + "/*.parquet"
            for rep in range(a.repeats):
                for name, spec in cases.items():
                    record(dict(first_batch(spec, env), case=name, round=rep, kind="first_batch"))
        finally:
            proc.kill()
            proc.wait()

    lines = [f"# Parquet against tar shards of the same JPEGs\n",
             f"Commit {commit}; 2 cores. The demo's 1,000 JPEGs (112 MB), the same bytes in each form; "
             f"`stoke bench` eval transform, batch 256, 2 workers, each run a fresh process, cases alternating, "
             f"{a.repeats} rounds; medians. Regenerate: `python3 benchmarks/python/parquet_bench.py --out DIR`.\n",
             "| images/s | cold | warm | cold / tar | warm / tar |", "| --- | ---: | ---: | ---: | ---: |"]
    bench_rows = [r for r in runs if r["kind"] == "bench"]
    base = {m: median([r for r in bench_rows if r["case"] == "tar shards" and r["mode"] == m], "images_per_s")
            for m in ("cold", "warm")}
    for name in data:
        c = median([r for r in bench_rows if r["case"] == name and r["mode"] == "cold"], "images_per_s")
        w = median([r for r in bench_rows if r["case"] == name and r["mode"] == "warm"], "images_per_s")
        lines.append(f"| {name} | {c:,.0f} | {w:,.0f} | {c / base['cold']:.2f} | {w / base['warm']:.2f} |")
    lines += ["", "Whole process (s, JVM start and exit included), cold:", "", "| case | process (s) |",
              "| --- | ---: |"]
    for name in data:
        lines.append(f"| {name} | "
                     f"{median([r for r in bench_rows if r['case'] == name and r['mode'] == 'cold'], 'process_s'):.2f} |")
    lines += ["", "`stoke embed` (tiny CNN): its own throughput (first batch to last) and the whole process:", "",
              "| case | images/s, embed's | process (s) | images/s, whole process |", "| --- | ---: | ---: | ---: |"]
    for name in ("tar shards", "Parquet, DuckDB, snappy"):
        rows = [r for r in runs if r["kind"] == "embed" and r["case"] == name]
        lines.append(f"| {name} | {median(rows, 'loop_images_per_s'):,.0f} | {median(rows, 'process_s'):.2f} | "
                     f"{median(rows, 'images_per_s'):,.0f} |")
    lines += ["", "Time from creating `stoke.DataLoader` to its first batch (s3proxy on 127.0.0.1; each file "
              "11 MB, one row group of 100 rows, SNAPPY):", "", "| case | first batch (s) | runs (s) |",
              "| --- | ---: | --- |"]
    for name in cases:
        rows = [r for r in runs if r["kind"] == "first_batch" and r["case"] == name]
        lines.append(f"| {name} | {median(rows, 'first_batch_s'):.2f} | "
                     + ", ".join(f"{r['first_batch_s']:.2f}" for r in rows) + " |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
