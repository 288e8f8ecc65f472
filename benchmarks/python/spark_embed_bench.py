#!/usr/bin/env python3
"""`stoke spark-embed` on a Spark standalone cluster against `stoke embed` on one machine, on the
same shards and the same cores (issue: past one machine).

    python3 benchmarks/python/spark_embed_bench.py --out docs/benchmarks/results-spark \
        [--images 8000] [--repeats 2] [--work /tmp/spark-bench]

One run of this script:
  1. makes 10,000 ImageNet-like JPEGs (`stoke make-dataset`) and writes them as WebDataset shards
     with Python's tarfile, exactly N samples a shard: 8 shards of 1,000 (the first --images), and
     for the per-shard cost 40 of 250, 10 of 1,000 and 1 of 10,000 (all 10,000); `stoke catalog`
     writes each set's index.json;
  2. exports torchvision's mobilenet_v3_small (random weights, classifier removed: the pooled
     features are the embedding) to ONNX, as embed_bench.py does;
  3. starts a standalone cluster from spark/home/target/spark-home: a master and two workers of one
     core each (as the tests do: loopback addresses of their own), so the cluster has the machine's
     two cores, as `stoke embed --workers 2` has;
  4. --repeats rounds, alternating, each a fresh process timed from its start (JVM, Spark's driver
     and its executors included): `stoke embed --format parquet` and `stoke spark-embed` on the
     cluster (and `--master local[2]`, Spark on one machine without a cluster);
  5. the per-shard cost: spark-embed on the cluster over the 250, 1,000 and 10,000-sample sets;
     each task's own time (its marker's `seconds`) is fitted as fixed + per-sample x samples;
  6. the driver's planning over 10,000 one-sample shards, with their index.json and without
     (`spark-embed --dry-run`, which lists the shards and reads the output's markers).

Writes OUT/runs.jsonl and OUT/summary.md.
"""
import argparse
import io
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import embed_bench  # noqa: E402  (the model's export)

STOKE = str(CHECKOUT / "stoke")
SPARK_HOME = CHECKOUT / "spark" / "home" / "target" / "spark-home"


def run(cmd, log, env=None, timeout=3600):
    start = time.perf_counter()
    with open(log, "w") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=timeout)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed ({p.returncode}): see {log}")
    return wall


def images(folder):
    """(key, jpeg path, label) of an ImageFolder tree, in torchvision's order."""
    out = []
    classes = sorted(d.name for d in folder.iterdir() if d.is_dir())
    for label, c in enumerate(classes):
        for f in sorted((folder / c).iterdir()):
            out.append((f"{c}/{f.stem}", f, label))
    return out


def write_shards(samples, per_shard, folder, name="part"):
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(0, len(samples), per_shard):
        with tarfile.open(folder / f"{name}-{s // per_shard:05d}.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
            for key, path, label in samples[s:s + per_shard]:
                tar.add(path, arcname=key + ".jpg")
                cls = str(label).encode()
                info = tarfile.TarInfo(key + ".cls")
                info.size = len(cls)
                tar.addfile(info, io.BytesIO(cls))
    run([STOKE, "catalog", str(folder)], folder.parent / f"index-{folder.name}.log")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A master and workers of one core each, as cli's SparkCluster starts them."""

    def __init__(self, logs, workers=2):
        self.procs = []
        logs.mkdir(parents=True, exist_ok=True)
        port, ui = free_port(), free_port()
        self.master = f"spark://127.0.0.1:{port}"
        java = os.path.join(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"), "bin", "java")
        base = [java, f"@{CHECKOUT / 'spark' / 'jvm.options'}", "-Xmx512m", "-cp",
                f"{SPARK_HOME / 'conf'}:{SPARK_HOME / 'jars'}/*"]

        def start(name, host, args):
            env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_SCALA_VERSION="2.13", SPARK_LOCAL_IP=host,
                       SPARK_CONF_DIR=str(SPARK_HOME / "conf"))
            self.procs.append(subprocess.Popen(base + args, stdout=open(logs / f"{name}.log", "w"),
                                               stderr=subprocess.STDOUT, env=env))

        start("master", "127.0.0.1", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                      str(port), "--webui-port", str(ui)])
        for w in range(workers):
            host = f"127.0.0.{2 + w}"
            start(f"worker-{w}", host, ["org.apache.spark.deploy.worker.Worker", "--host", host, "--cores", "1",
                                        "--memory", "2g", "--webui-port", str(free_port()),
                                        "--work-dir", str(logs / f"work-{w}"), self.master])
        until = time.time() + 90
        while time.time() < until:
            try:
                status = json.load(urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5))
                if status.get("aliveworkers", 0) >= workers:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.close()
        sys.exit(f"the cluster did not start: see {logs}")

    def close(self):
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def busy(out):
    """Seconds each executor spent in its tasks (the markers' `seconds`, summed by executor)."""
    per = {}
    for m in markers(out):
        per[m["executor"]] = per.get(m["executor"], 0.0) + m["seconds"]
    return per


def markers(out):
    return [json.loads(p.read_text()) for p in sorted((out / "_committed").glob("*.json"))]


def manifest(out):
    return json.loads((out / "_manifest.json").read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path("/tmp/stoke-spark-bench"))
    ap.add_argument("--images", type=int, default=8000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--summarize", action="store_true",
                    help="only write OUT/summary.md again from OUT/runs.jsonl (and the runs' outputs in --work)")
    args = ap.parse_args()
    if args.summarize:
        records = [json.loads(line) for line in open(args.out / "runs.jsonl")]
        for r in records:
            out = args.work / f"out-{r['run']}-{r.get('repeat')}"
            if r["run"] in ("cluster", "local") and "busy" not in r and out.exists():
                r["busy"] = busy(out)
        with open(args.out / "runs.jsonl", "w") as f:
            for rec in records:
                f.write(json.dumps(rec) + "\n")
        summarize(records, args)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    logs = args.out / "logs"
    logs.mkdir(exist_ok=True)

    folder = work / "images"
    if not (folder / ".done").exists():
        shutil.rmtree(folder, ignore_errors=True)
        run([STOKE, "make-dataset", str(folder), "--images", "10000", "--seed", "11", "--classes", "10"],
            logs / "make-dataset.log")
        (folder / ".done").touch()
    samples = images(folder)
    sets = {"main": (samples[:args.images], 1000), "s250": (samples, 250), "s1000": (samples, 1000),
            "s10000": (samples, 10000)}
    for name, (subset, per) in sets.items():
        if not (work / name / "index.json").exists():
            shutil.rmtree(work / name, ignore_errors=True)
            write_shards(subset, per, work / name)
    tiny = work / "plan10000"
    if not (tiny / "index.json").exists():
        shutil.rmtree(tiny, ignore_errors=True)
        write_shards(samples[:1] * 10000, 1, tiny, name="one")
    model = work / "mobilenet_v3_small.onnx"
    if not model.exists():
        embed_bench.export("mobilenet_v3_small", model)

    records = []
    cluster = Cluster(work / "cluster")
    try:
        common = ["--model", str(model), "--batch-size", str(args.batch_size)]
        spark = ["--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.executor.memory=1g"]
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
        for r in range(args.repeats):
            for kind in ("single", "cluster", "local"):
                out = work / f"out-{kind}-{r}"
                shutil.rmtree(out, ignore_errors=True)
                data = str(work / "main")
                if kind == "single":
                    cmd = [STOKE, "embed", data, "--out", str(out), "--format", "parquet", "--workers", "2"] + common
                elif kind == "cluster":
                    cmd = [STOKE, "spark-embed", data, "--out", str(out), "--master", cluster.master] + common + spark
                else:
                    cmd = [STOKE, "spark-embed", data, "--out", str(out), "--master", "local[2]"] + common + spark
                wall = run(cmd, logs / f"{kind}-{r}.log", env=env)
                rec = {"run": kind, "repeat": r, "images": args.images, "wall_s": wall,
                       "images_per_s": args.images / wall}
                if kind != "single":
                    m = manifest(out)
                    rec.update(rows=m["rows"], shards=m["shards"], plan_s=m["planSeconds"], job_s=m["seconds"],
                               attempts=m["attempts"], busy=busy(out))
                records.append(rec)
                print(json.dumps(rec), flush=True)
        for name in ("s250", "s1000", "s10000"):
            out = work / f"out-{name}"
            shutil.rmtree(out, ignore_errors=True)
            wall = run([STOKE, "spark-embed", str(work / name), "--out", str(out), "--master", cluster.master]
                       + common + spark, logs / f"{name}.log", env=env)
            ms = markers(out)
            rec = {"run": "per-shard", "set": name, "shards": len(ms), "images": len(samples), "wall_s": wall,
                   "images_per_s": len(samples) / wall,
                   "tasks": [{"samples": m["rows"], "seconds": m["seconds"]} for m in ms]}
            records.append(rec)
            print(json.dumps({k: v for k, v in rec.items() if k != "tasks"}), flush=True)
    finally:
        cluster.close()

    for indexed in (True, False):
        out = work / "out-plan"
        shutil.rmtree(out, ignore_errors=True)
        index = tiny / "index.json"
        hidden = tiny.parent / "plan10000-index.json"
        if not indexed:
            index.rename(hidden)
        try:
            start = time.perf_counter()
            log = logs / f"plan-{'index' if indexed else 'headers'}.log"
            run([STOKE, "spark-embed", str(tiny), "--out", str(out), "--dry-run", "--model", str(model)], log)
            wall = time.perf_counter() - start
            planned = float(re.search(r"planned in ([0-9.]+) s", log.read_text()).group(1))
        finally:
            if not indexed:
                hidden.rename(index)
        rec = {"run": "plan", "shards": 10000, "index": indexed, "plan_s": planned, "wall_s": wall}
        records.append(rec)
        print(json.dumps(rec), flush=True)

    with open(args.out / "runs.jsonl", "w") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    summarize(records, args)


def fit(points):
    """Least squares of seconds = fixed + per_sample * samples."""
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    b = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx
    return my - b * mx, b


def summarize(records, args):
    def med(kind, key):
        return statistics.median(r[key] for r in records if r["run"] == kind)

    single, cluster, local = (med(k, "images_per_s") for k in ("single", "cluster", "local"))
    # Steady state: the images over the time each executor spent in its tasks (the slowest one).
    steady = statistics.median(r["images"] / max(r["busy"].values()) for r in records if r["run"] == "cluster")
    start = statistics.median(r["wall_s"] - max(r["busy"].values()) for r in records if r["run"] == "cluster")
    lines = [
        f"{args.images} ImageNet-like JPEGs (`stoke make-dataset --seed 11`, 8 shards of 1,000 written by tarfile, "
        f"with index.json); mobilenet_v3_small (ONNX, random weights); batch {args.batch_size}; 2 cores. Each run a "
        f"fresh process timed from its start (JVM, Spark's driver and executors included); median of "
        f"{args.repeats}, runs alternating.",
        "",
        "| run | images/s | vs stoke embed | wall s |",
        "|---|---:|---:|---:|",
        f"| `stoke embed --format parquet --workers 2` | {single:.0f} | 1.00x | {med('single', 'wall_s'):.1f} |",
        f"| `stoke spark-embed`, standalone cluster, 2 workers of 1 core | {cluster:.0f} | {cluster / single:.2f}x "
        f"| {med('cluster', 'wall_s'):.1f} |",
        f"| the cluster's executors while in their tasks | {steady:.0f} | {steady / single:.2f}x | |",
        f"| `stoke spark-embed --master local[2]` | {local:.0f} | {local / single:.2f}x | {med('local', 'wall_s'):.1f} |",
        "",
        f"On the cluster each executor is in its tasks for all but about {start:.0f} s of the run: the driver's JVM "
        "and Spark context, the executors' JVMs starting and registering, Stoke's jar and the model shipped to them, "
        "each executor's ONNX Runtime session. That start is paid once per job, whatever its size.",
        "",
        "Per-shard cost, on the cluster, 10,000 images as shards of 250, 1,000 and 10,000 samples (one task per "
        "shard; each task's time is its marker's `seconds`: open, decode, model, table written):",
        "",
        "| shards | samples a shard | images/s end to end | task seconds, median |",
        "|---:|---:|---:|---:|",
    ]
    points = []
    for r in records:
        if r["run"] == "per-shard":
            secs = [t["seconds"] for t in r["tasks"]]
            if r["shards"] > 1:  # two tasks at a time, as in every run but the one-shard one
                points += [(t["samples"], t["seconds"]) for t in r["tasks"]]
            lines.append(f"| {r['shards']} | {r['tasks'][0]['samples']:,} | {r['images_per_s']:.0f} "
                         f"| {statistics.median(secs):.2f} |")
    fixed, per = fit(points)
    plan_idx = next(r for r in records if r["run"] == "plan" and r["index"])
    plan_hdr = next(r for r in records if r["run"] == "plan" and not r["index"])
    lines += [
        "",
        f"Fitted over the tasks of 250 and 1,000 samples (two tasks at a time, one per executor): **{fixed * 1000:.0f} "
        f"ms fixed per shard** (the task's loader started, its shard opened, its table created and committed; the "
        f"model is loaded once per executor) + {per * 1000:.2f} ms per sample. The one 10,000-sample task runs alone (its "
        f"loader's worker and ONNX Runtime's thread have both cores to themselves), hence its shorter time a sample.",
        "",
        f"Driver planning over 10,000 shards (`spark-embed --dry-run`: list, read OUT's markers, hash the model): "
        f"**{plan_idx['plan_s']:.2f} s with index.json**, {plan_hdr['plan_s']:.2f} s reading every shard's headers "
        f"(local files; remote shards without an index would each be fetched).",
        "",
        "Regenerate: `python3 benchmarks/python/spark_embed_bench.py --out docs/benchmarks/results-spark`.",
    ]
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
