#!/usr/bin/env python3
"""Packed shards against PyTorch's DataLoader, side by side on the same cores (issue: datasets that
outgrow a folder). One run of this script:

  1. takes an ImageFolder (--data DIR, or `stoke make-dataset` --images N),
  2. packs it with `stoke pack` twice: JPEG re-encoded with the shorter side 256 (timed: pack's own
     images/s) and raw uint8 224x224 (--format raw),
  3. extracts the re-encoded JPEGs into a folder again (Python's tarfile), the fair baseline: the
     same small files PyTorch would read if it had them,
  4. serves the packed shards from s3proxy (a real S3 server, Maven Central's jar, filesystem
     backend) on 127.0.0.1,
  5. then --repeats rounds, each case a fresh process, the cases alternating within a round:
       torch-original   torch DataLoader on the original folder
       torch-reencoded  torch DataLoader on the re-encoded folder
       torch-tensor-original, torch-tensor-reencoded
                        the same two with torchvision.io's decode and v2's uint8 transforms, torch's
                        fastest CPU path (the recipe's --backend tensor --use-v2), as
                        torch_loader.py's pytorch-tensor loader runs it
       stoke-reencoded  stoke bench on the re-encoded folder
       stoke-shards     stoke bench on the packed JPEG shards
       stoke-raw        stoke bench on the raw shards (decode and resize skipped)
       stoke-s3         stoke bench on the packed JPEG shards read from s3proxy
     every one the evaluation transform (Resize(256) + CenterCrop(224), uint8 HWC), --workers
     workers, --batch-size; cold (a fresh process's first epoch) and warm (Stoke after
     --warmup-images N untimed, torch's second epoch of persistent workers).

Writes OUT/runs.jsonl and OUT/summary.md (medians and ratios). Needs torch and torchvision for the
torch cases (skipped, and said, without them).

  python3 benchmarks/python/shards_bench.py --out docs/benchmarks/results-shards [--images 2000]
  python3 benchmarks/python/shards_bench.py --run-torch DIR --workers 2 --batch-size 256   (one torch run)
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
STOKE = str(CHECKOUT / "stoke")
S3PROXY = "org.gaul:s3proxy:4.1.0:jar:jar-with-dependencies"


def run_torch(data, workers, batch_size, warm, transform="eval", backend="pil"):
    """torch's DataLoader over an ImageFolder in this process: the first epoch (cold), or with
    --warm the second epoch of persistent workers; prints one JSON line. transform: eval
    (Resize(256) + CenterCrop(224)) or train (RandomResizedCrop(224) + RandomHorizontalFlip()).
    backend: pil (PIL images and transforms, the recipe's default) or tensor (torchvision.io's
    decode and v2's uint8 transforms, torch's fastest CPU path): torch_loader.py's two datasets."""
    from torch.utils.data import DataLoader
    from torch_loader import jpeg_dataset
    start = time.perf_counter()
    dataset = jpeg_dataset(data, "pytorch" if backend == "pil" else "pytorch-tensor", transform)
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, shuffle=False,
                        persistent_workers=workers > 0)
    for epoch in range(2 if warm else 1):
        if epoch == 1:
            start = time.perf_counter()
        images, first = 0, None
        for x, _ in loader:  # uint8 [n, 224, 224, 3], as Stoke delivers
            images += len(x)
            if first is None:
                first = time.perf_counter() - start
    elapsed = time.perf_counter() - start
    print(json.dumps({"images": images, "elapsed_s": elapsed, "images_per_s": images / elapsed,
                      "first_batch_s": first}))


def torch_versions():
    """One line naming the torch side's libraries, for a summary: torch, torchvision, Pillow."""
    from torch_loader import versions
    v = versions()
    return (f"torch {v['torch']}, torchvision {v['torchvision']} ({v['tensor transforms']} tensor transforms), "
            f"Pillow {v['pillow']}, Python {v['python']}")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_s3proxy(work, shards):
    """s3proxy on loopback with the shards in bucket 'bench'; returns (process, endpoint)."""
    jar_dir = work / "s3proxy-jar"
    jars = list(jar_dir.glob("*.jar")) if jar_dir.exists() else []
    if not jars:
        sh(["mvn", "-B", "-q", "--no-transfer-progress", "dependency:copy", f"-Dartifact={S3PROXY}",
            f"-DoutputDirectory={jar_dir}"], cwd=CHECKOUT)
        jars = list(jar_dir.glob("*.jar"))
    base = work / "s3proxy-data"
    bucket = base / "bench"
    if bucket.exists():
        shutil.rmtree(bucket)
    bucket.mkdir(parents=True)
    for tar in sorted(shards.glob("*.tar")):
        os.link(tar, bucket / tar.name) if tar.stat().st_dev == bucket.stat().st_dev else shutil.copy(tar, bucket)
    port = free_port()
    conf = work / "s3proxy.conf"
    conf.write_text(f"s3proxy.endpoint=http://127.0.0.1:{port}\ns3proxy.authorization=aws-v2-or-v4\n"
                    "s3proxy.identity=bench\ns3proxy.credential=bench-secret\njclouds.provider=filesystem\n"
                    f"jclouds.filesystem.basedir={base}\n")
    java = os.path.join(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"), "bin", "java")
    proc = subprocess.Popen([java, "-jar", str(jars[0]), "--properties", str(conf)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("s3proxy did not start within 60 s")


def stoke_bench(dataset, workers, batch_size, warm, env=None, transform="eval"):
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"shards-bench-{os.getpid()}.json"
    start = time.perf_counter()
    sh([STOKE, "bench", dataset, "--transform", transform, "--workers", str(workers), "--batch-size",
        str(batch_size), "--json", str(out)] + (["--warmup-images", str(warm)] if warm else []),
       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    f = json.loads(out.read_text())
    out.unlink()
    return {"images": f["images"], "images_per_s": f["images_per_s"], "first_batch_s": f["time_to_first_batch_s"],
            "process_s": wall}


def torch_run(data, workers, batch_size, warm, transform="eval", backend="pil"):
    """run_torch in a fresh process (this file's --run-torch)."""
    start = time.perf_counter()
    p = sh([sys.executable, __file__, "--run-torch", str(data), "--transform", transform, "--backend", backend,
            "--workers", str(workers), "--batch-size", str(batch_size)] + (["--warm"] if warm else []),
           capture_output=True)
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["process_s"] = time.perf_counter() - start
    return r


def run_rounds(cases, repeats, out):
    """Every case (name -> function returning a run's figures) once per round, in turn, for
    repeats rounds; each run logged to out/runs.jsonl as it ends. Returns the runs."""
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    with open(out / "runs.jsonl", "w") as log:
        for r in range(repeats):
            for name, case in cases.items():
                result = dict(case(), case=name, round=r)
                runs.append(result)
                log.write(json.dumps(result) + "\n")
                log.flush()
                print(f"round {r} {name}: {result['images_per_s']:.0f} images/s", file=sys.stderr)
    return runs


def extract(shards, folder):
    """The packed JPEGs back into an ImageFolder tree (keys are <class>/<name>)."""
    if folder.exists():
        shutil.rmtree(folder)
    for tar in sorted(shards.glob("*.tar")):
        with tarfile.open(tar) as t:
            for m in t.getmembers():
                if m.name.endswith(".jpg"):
                    dst = folder / m.name
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    dst.write_bytes(t.extractfile(m).read())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-torch", metavar="DIR")
    ap.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--transform", default="eval", help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="pil", help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/stoke-shards-bench"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    if a.run_torch:
        run_torch(a.run_torch, a.workers, a.batch_size, a.warm, a.transform, a.backend)
        return
    if a.out is None:
        ap.error("--out is required")
    work = a.work
    work.mkdir(parents=True, exist_ok=True)
    original = a.data
    if original is None:
        original = work / f"original-{a.images}"
        if not original.exists():
            sh([STOKE, "make-dataset", str(original), "--images", str(a.images), "--seed", "1"])
    packed, raw, reencoded = work / "packed-256", work / "raw-224", work / "reencoded-256"
    for d in (packed, raw):
        if d.exists():
            shutil.rmtree(d)
    t = time.perf_counter()
    sh([STOKE, "pack", str(original), "--out", str(packed), "--resize", "256", "--workers", str(a.workers)])
    pack_s = time.perf_counter() - t
    t = time.perf_counter()
    sh([STOKE, "pack", str(original), "--out", str(raw), "--format", "raw", "--resize", "256", "--crop", "224",
        "--workers", str(a.workers)])
    raw_pack_s = time.perf_counter() - t
    extract(packed, reencoded)
    n_images = sum(1 for _ in reencoded.rglob("*.jpg"))
    sizes = [p.stat().st_size for p in reencoded.rglob("*.jpg")]
    s3, endpoint = start_s3proxy(work, packed)
    s3_env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench-secret",
                  AWS_REGION="us-east-1")
    try:
        import torch, torchvision  # noqa: F401
        have_torch = True
    except ImportError as e:
        print(f"shards_bench: SKIPPING the torch cases: {e}", file=sys.stderr)
        have_torch = False
    shard_names = sorted(p.name for p in packed.glob("*.tar"))
    s3_spec = "s3://bench/" if len(shard_names) > 1 else f"s3://bench/{shard_names[0]}"
    cases = {}
    for start, warm in (("cold", 0), ("warm", n_images)):
        cases[f"stoke-shards {start}"] = lambda w=warm: stoke_bench(str(packed), a.workers, a.batch_size, w)
        cases[f"stoke-raw {start}"] = lambda w=warm: stoke_bench(str(raw), a.workers, a.batch_size, w)
        cases[f"stoke-s3 {start}"] = lambda w=warm: stoke_bench(s3_spec, a.workers, a.batch_size, w, env=s3_env)
        cases[f"stoke-reencoded {start}"] = lambda w=warm: stoke_bench(str(reencoded), a.workers, a.batch_size, w)
        if have_torch:
            cases[f"torch-original {start}"] = lambda w=warm: torch_run(original, a.workers, a.batch_size, w)
            cases[f"torch-reencoded {start}"] = lambda w=warm: torch_run(reencoded, a.workers, a.batch_size, w)
            cases[f"torch-tensor-original {start}"] = lambda w=warm: torch_run(
                original, a.workers, a.batch_size, w, backend="tensor")
            cases[f"torch-tensor-reencoded {start}"] = lambda w=warm: torch_run(
                reencoded, a.workers, a.batch_size, w, backend="tensor")
    try:
        runs = run_rounds(cases, a.repeats, a.out)
    finally:
        s3.kill()
    med = {name: statistics.median(x["images_per_s"] for x in runs if x["case"] == name) for name in cases}
    first = {name: statistics.median(x["first_batch_s"] for x in runs if x["case"] == name) for name in cases}
    proc = {name: statistics.median(x["process_s"] for x in runs if x["case"] == name) for name in cases}
    lines = [f"# Packed shards against PyTorch's DataLoader ({n_images} images, {a.workers} workers, batch {a.batch_size})",
             "",
             f"Re-encoded JPEGs (shorter side 256): mean {statistics.mean(sizes) / 1024:.1f} KiB. "
             f"`stoke pack` JPEG: {n_images / pack_s:.0f} images/s ({pack_s:.1f} s, the JVM's start included); "
             f"raw: {n_images / raw_pack_s:.0f} images/s.",
             "",
             f"Medians of {a.repeats} fresh processes per case, cases alternating. Cold: the process's first epoch, "
             "images/s from the loader's creation to its last batch (Stoke: `stoke bench`, after its page-cache pass; "
             "torch: DataLoader creation to the last batch). Warm: Stoke after `--warmup-images N` (one epoch's worth "
             "untimed in the same process), torch's second epoch of persistent workers. Whole process: wall time of "
             "the child process (cold and warm runs differ in what they do untimed).",
             "",
             f"PyTorch: {torch_versions() if have_torch else 'not installed; its cases were skipped'}.",
             "",
             "| case | images/s | first batch (s) | whole process (s) |", "|---|---:|---:|---:|"]
    for name in cases:
        lines.append(f"| {name} | {med[name]:.0f} | {first[name]:.3f} | {proc[name]:.2f} |")
    lines.append("")
    for start in ("cold", "warm"):
        lines.append(f"{start.capitalize()}:")
        m = {name.split()[0]: v for name, v in med.items() if name.endswith(start)}
        if have_torch:
            lines.append(f"- stoke-shards / torch-original: **{m['stoke-shards'] / m['torch-original']:.2f}x** (goal 3x)")
            lines.append(f"- stoke-shards / torch-reencoded: **{m['stoke-shards'] / m['torch-reencoded']:.2f}x** (goal 2x)")
            lines.append(f"- stoke-reencoded / torch-reencoded: {m['stoke-reencoded'] / m['torch-reencoded']:.2f}x")
            lines.append(f"- stoke-shards / torch-tensor-original: "
                         f"**{m['stoke-shards'] / m['torch-tensor-original']:.2f}x**")
            lines.append(f"- stoke-shards / torch-tensor-reencoded: "
                         f"**{m['stoke-shards'] / m['torch-tensor-reencoded']:.2f}x**")
            lines.append(f"- stoke-reencoded / torch-tensor-reencoded: "
                         f"{m['stoke-reencoded'] / m['torch-tensor-reencoded']:.2f}x")
        lines.append(f"- stoke-s3 / stoke-shards: **{m['stoke-s3'] / m['stoke-shards']:.2f}** (goal 0.9)")
        lines.append(f"- stoke-raw: **{m['stoke-raw']:.0f}** images/s of 224x224 uint8 (goal 10,000)")
        lines.append("")
    (a.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
