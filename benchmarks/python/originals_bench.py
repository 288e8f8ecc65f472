#!/usr/bin/env python3
"""Decoding only the crop on users' original JPEGs, measured side by side (issue: decode only the
crop on originals). One run of this script:

  1. takes an ImageFolder of original JPEGs (--data DIR), or cuts --images N ImageNet-like ones from
     the photographs under --photos DIR with `stoke make-dataset --photos` (ImageNet's sizes,
     qualities, and progressive and grayscale shares),
  2. fills a restart cache with `stoke cache` (timed; its bytes against the folder's) and packs the
     folder with `stoke pack --keep-pixels` (timed; its bytes),
  3. then --repeats rounds, each case a fresh process, the cases alternating within a round, for the
     training transform (RandomResizedCrop(224) + RandomHorizontalFlip) and the evaluation one
     (Resize(256) + CenterCrop(224)), uint8 HWC, --workers, --batch-size; cold (a fresh process's
     first epoch) and warm (Stoke after one epoch's images untimed, torch's second epoch of
     persistent workers):
       torch          torch's DataLoader (ImageFolder + PIL) over the original files
       stoke          stoke bench over the original files (today: the sequential region decode)
       stoke-cache    stoke bench --restart-cache-dir over the filled cache (the region decoder seeks)
       stoke-pack     stoke bench over the --keep-pixels shards
       stoke-filling  stoke bench --restart-cache-dir over an empty cache: the epoch that fills it (cold only)

With --tar-shards N, Stoke's cases other than stoke-pack read the same original files as N tar
shards (written here by Python's tarfile, in name order, with .cls labels), and `stoke cache` fills
the cache from them: the restart cache over shards. torch's cases read the folder.

Writes OUT/runs.jsonl and OUT/summary.md.

  python3 benchmarks/python/originals_bench.py --photos /usr/share/backgrounds/mate --out docs/benchmarks/results-originals
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from shards_bench import STOKE, run_rounds, sh, torch_run


def stoke_bench(dataset, workers, batch_size, warm, transform, extra=()):
    """`stoke bench` in a fresh process, with extra flags; its figures and the process's wall time."""
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"originals-bench-{os.getpid()}.json"
    start = time.perf_counter()
    sh([STOKE, "bench", str(dataset), "--transform", transform, "--workers", str(workers), "--batch-size",
        str(batch_size), "--json", str(out)] + (["--warmup-images", str(warm)] if warm else []) + list(extra),
       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    f = json.loads(out.read_text())
    out.unlink()
    return {"images": f["images"], "images_per_s": f["images_per_s"], "first_batch_s": f["time_to_first_batch_s"],
            "process_s": wall}


def filling(dataset, workers, batch_size, transform, work):
    """The epoch that fills an empty cache, cold."""
    cache = work / "cache-filling"
    shutil.rmtree(cache, ignore_errors=True)
    try:
        return stoke_bench(dataset, workers, batch_size, 0, transform, ["--restart-cache-dir", str(cache)])
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def tar_shards(folder, n, out):
    """The folder's files as n tar shards under out, written by tarfile: key NNNNNN, a .jpg member
    of the file's bytes as they are and a .cls of its class's index. Returns the brace pattern."""
    classes = sorted(d.name for d in folder.iterdir() if d.is_dir())
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    pattern = str(out / f"orig-{{0..{n - 1}}}.tar")
    if out.exists() and len(list(out.glob("orig-*.tar"))) == n:
        return pattern
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    per = -(-len(files) // n)
    for s in range(n):
        with tarfile.open(out / f"orig-{s}.tar", "w") as tar:
            for i in range(s * per, min(len(files), (s + 1) * per)):
                tar.add(files[i], arcname=f"{i:06d}.jpg")
                label = str(classes.index(files[i].relative_to(folder).parts[0])).encode()
                info = tarfile.TarInfo(f"{i:06d}.cls")
                info.size = len(label)
                tar.addfile(info, __import__("io").BytesIO(label))
    return pattern


def folder_bytes(folder):
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def timed(cmd):
    start = time.perf_counter()
    p = sh(cmd, capture_output=True)
    return time.perf_counter() - start, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path)
    ap.add_argument("--photos", type=Path)
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/stoke-originals-bench"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tar-shards", type=int, default=0, metavar="N",
                    help="Stoke reads the originals as N tar shards (the restart cache over shards)")
    a = ap.parse_args()
    work = a.work
    work.mkdir(parents=True, exist_ok=True)
    original = a.data
    if original is None:
        if a.photos is None:
            ap.error("give --data DIR (original JPEGs) or --photos DIR to cut them from")
        original = work / f"photos-{a.images}"
        if not original.exists():
            sh([STOKE, "make-dataset", str(original), "--images", str(a.images), "--seed", "38", "--photos",
                str(a.photos)], stdout=subprocess.DEVNULL)
    n_images = sum(1 for p in original.rglob("*") if p.is_file())
    # What Stoke's cases other than the pack read: the folder, or the same files as tar shards.
    source = tar_shards(original, a.tar_shards, work / f"tar-{a.tar_shards}") if a.tar_shards else original
    cache, pack = work / "cache", work / "pack"
    for d in (cache, pack):
        shutil.rmtree(d, ignore_errors=True)
    # The launcher's one-off work in a new environment (a stale check, the JVM's first start in a
    # fresh root) is paid here, not inside the fill's time.
    sh([STOKE, "--version"], stdout=subprocess.DEVNULL)
    fill_s, fill_out = timed([STOKE, "cache", str(source), "--restart-cache-dir", str(cache), "--workers", str(a.workers)])
    pack_s, pack_out = timed([STOKE, "pack", str(original), "--out", str(pack), "--keep-pixels", "--workers",
                              str(a.workers)])
    sizes = {"originals": folder_bytes(original), "cache": folder_bytes(cache), "pack": folder_bytes(pack)}

    try:
        import PIL
        import torch
        import torchvision
        have_torch = True
        stack = (f"Python {sys.version.split()[0]}, torch {torch.__version__}, torchvision {torchvision.__version__}, "
                 f"PIL {PIL.__version__}")
    except ImportError as e:
        print(f"originals_bench: SKIPPING the torch cases: {e}", file=sys.stderr)
        have_torch = False
        stack = "no torch"
    os_release = Path("/etc/os-release")
    if os_release.exists():
        names = dict(line.split("=", 1) for line in os_release.read_text().splitlines() if "=" in line)
        stack = f"{names.get('PRETTY_NAME', '').strip(chr(34))}: {stack}"
    cases = {}
    for transform in ("train", "eval"):
        for start, warm in (("cold", 0), ("warm", n_images)):
            if have_torch:
                cases[f"torch {transform} {start}"] = lambda t=transform, w=warm: torch_run(
                    original, a.workers, a.batch_size, w, transform=t)
            cases[f"stoke {transform} {start}"] = lambda t=transform, w=warm: stoke_bench(
                source, a.workers, a.batch_size, w, t)
            cases[f"stoke-cache {transform} {start}"] = lambda t=transform, w=warm: stoke_bench(
                source, a.workers, a.batch_size, w, t, ["--restart-cache-dir", str(cache)])
            cases[f"stoke-pack {transform} {start}"] = lambda t=transform, w=warm: stoke_bench(
                pack, a.workers, a.batch_size, w, t)
        cases[f"stoke-filling {transform} cold"] = lambda t=transform: filling(
            source, a.workers, a.batch_size, t, work)
    runs = run_rounds(cases, a.repeats, a.out)
    med = {name: statistics.median(x["images_per_s"] for x in runs if x["case"] == name) for name in cases}
    span = {name: (min(x["images_per_s"] for x in runs if x["case"] == name),
                   max(x["images_per_s"] for x in runs if x["case"] == name)) for name in cases}

    def cell(name):
        return f"{med[name]:.0f} [{span[name][0]:.0f}-{span[name][1]:.0f}]" if name in med else "-"

    def ratio(a_, b_):
        return f"{med[a_] / med[b_]:.2f}x" if a_ in med and b_ in med else "-"

    lines = [f"# Original JPEGs: {n_images} images from {a.photos or original}", "",
             f"{a.workers} workers, batch {a.batch_size}; images/s, medians of {a.repeats} fresh processes per case "
             "[min-max], cases alternating. Cold: the process's first epoch; warm: Stoke after one epoch's images "
             "untimed, torch's second epoch of persistent workers. Every case reads the same original files, or "
             "(stoke-pack) `stoke pack --keep-pixels` shards of them; the pixels are the same in all." +
             (f" Stoke's cases other than stoke-pack read them as {a.tar_shards} tar shards of the files as they are "
              "(written by Python's tarfile), and the cache was filled from the shards." if a.tar_shards else ""),
             "",
             f"The stack: {stack}.", "",
             "| transform | start | torch | Stoke | Stoke, cache | Stoke, --keep-pixels | cache / torch | "
             "cache / Stoke | pack / torch |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for transform in ("train", "eval"):
        for start in ("cold", "warm"):
            t, s, c, p = (f"{k} {transform} {start}" for k in ("torch", "stoke", "stoke-cache", "stoke-pack"))
            lines.append(f"| {transform} | {start} | {cell(t)} | {cell(s)} | {cell(c)} | {cell(p)} | "
                         f"**{ratio(c, t)}** | {ratio(c, s)} | {ratio(p, t)} |")
    lines += ["", "## The epoch that fills the cache", "",
              "| transform | Stoke, no cache, cold | Stoke, filling an empty cache, cold | filling / no cache |",
              "|---|---:|---:|---:|"]
    for transform in ("train", "eval"):
        s, f = f"stoke {transform} cold", f"stoke-filling {transform} cold"
        lines.append(f"| {transform} | {cell(s)} | {cell(f)} | {ratio(f, s)} |")
    lines += ["", "## Cost", "",
              f"- Originals: {sizes['originals'] / 1e6:.1f} MB. The cache: {sizes['cache'] / 1e6:.1f} MB "
              f"({sizes['cache'] / sizes['originals']:.3f}x), filled by `stoke cache` on {a.workers} cores in "
              f"{fill_s:.1f} s, the whole process ({n_images / fill_s:.0f} files/s). The `--keep-pixels` pack: "
              f"{sizes['pack'] / 1e6:.1f} MB ({sizes['pack'] / sizes['originals']:.3f}x), in {pack_s:.1f} s.",
              "", "```", fill_out.strip(), "", pack_out.strip(), "```"]
    (a.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
