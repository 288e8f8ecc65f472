#!/usr/bin/env python3
"""Restart markers in `stoke pack`'s shards, measured side by side (issue: decode only the crop).
One run of this script:

  1. takes an ImageFolder of real photographs (--data DIR), or cuts --images N ImageNet-like ones
     from the photographs under --photos DIR with `stoke make-dataset --photos`,
  2. packs it with `stoke pack --resize 256` with restart markers (the default) and with
     --no-restart-markers, and once per --intervals value for the size table; extracts the JPEGs
     of the first two into folders (the same bytes, as files, for PyTorch),
  3. measures the markers' cost: the bytes of each pack's JPEGs, and PIL's whole decode of every
     file with and without markers (one thread, from memory, --repeats rounds alternating),
  4. then --repeats rounds, each case a fresh process, the cases alternating within a round, for
     the training transform (RandomResizedCrop(224) + RandomHorizontalFlip) and the evaluation one
     (Resize(256) + CenterCrop(224)), uint8 HWC, --workers, --batch-size; cold (a fresh process's
     first epoch) and warm (Stoke after --warmup-images N untimed, torch's second epoch of
     persistent workers):
       torch          torch's DataLoader (ImageFolder + PIL) over the marked JPEGs as files
       torch-tensor   the same with torchvision.io's decode and v2's uint8 transforms, torch's
                      fastest CPU path (torch_loader.py's pytorch-tensor)
       stoke          stoke bench over the marked shards (the region decoder seeks)
       stoke-plain    stoke bench over the shards without markers (today's sequential region decode)

Writes OUT/runs.jsonl and OUT/summary.md.

  python3 benchmarks/python/restart_bench.py --photos /usr/share/backgrounds/mate --out docs/benchmarks/results-restart
"""
import argparse
import io
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from shards_bench import STOKE, extract, run_rounds, sh, stoke_bench, torch_run, torch_versions


def members(pack):
    """The pack's JPEG members, in order: (name, bytes)."""
    out = []
    for tar in sorted(pack.glob("*.tar")):
        with tarfile.open(tar) as t:
            out += [(m.name, t.extractfile(m).read()) for m in t.getmembers() if m.name.endswith(".jpg")]
    return out


def pil_decode_ms(blobs):
    from PIL import Image
    start = time.perf_counter()
    for b in blobs:
        Image.open(io.BytesIO(b)).convert("RGB").load()
    return (time.perf_counter() - start) * 1e3 / len(blobs)


def pack(original, out, workers, *flags):
    if out.exists():
        shutil.rmtree(out)
    sh([STOKE, "pack", str(original), "--out", str(out), "--resize", "256", "--workers", str(workers)] + list(flags),
       stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path)
    ap.add_argument("--photos", type=Path)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/stoke-restart-bench"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--intervals", default="1,2,8,64", help="extra restart intervals (MCUs) for the size table")
    a = ap.parse_args()
    if a.out is None:
        ap.error("--out is required")
    work = a.work
    work.mkdir(parents=True, exist_ok=True)
    original = a.data
    if original is None:
        if a.photos is None:
            ap.error("give --data DIR (real photographs) or --photos DIR to cut them from")
        original = work / f"photos-{a.images}"
        if not original.exists():
            sh([STOKE, "make-dataset", str(original), "--images", str(a.images), "--seed", "25", "--photos",
                str(a.photos)])
    marked, plain = work / "packed-rst", work / "packed-plain"
    pack(original, marked, a.workers)
    pack(original, plain, a.workers, "--no-restart-markers")
    files_marked, files_plain = work / "files-rst", work / "files-plain"
    extract(marked, files_marked)
    extract(plain, files_plain)
    n_images = sum(1 for _ in files_marked.rglob("*.jpg"))

    # The markers' cost in bytes, per interval, and PIL's whole decode with and without them.
    blobs = {"none": [b for _, b in members(plain)], "4 (default)": [b for _, b in members(marked)]}
    for interval in [int(x) for x in a.intervals.split(",") if x]:
        d = work / f"packed-rst{interval}"
        pack(original, d, a.workers, "--restart-interval", str(interval))
        blobs[str(interval)] = [b for _, b in members(d)]
        shutil.rmtree(d)
    plain_bytes = sum(len(b) for b in blobs["none"])
    resized = [i for i, b in enumerate(blobs["4 (default)"]) if b"\xff\xdd" in b]
    pil = {"none": [], "4 (default)": []}
    for _ in range(a.repeats):
        for k in pil:
            pil[k].append(pil_decode_ms(blobs[k]))

    try:
        import torch, torchvision  # noqa: F401
        have_torch = True
    except ImportError as e:
        print(f"restart_bench: SKIPPING the torch cases: {e}", file=sys.stderr)
        have_torch = False
    cases = {}
    for transform in ("train", "eval"):
        for start, warm in (("cold", 0), ("warm", n_images)):
            cases[f"stoke {transform} {start}"] = lambda t=transform, w=warm: stoke_bench(
                str(marked), a.workers, a.batch_size, w, transform=t)
            cases[f"stoke-plain {transform} {start}"] = lambda t=transform, w=warm: stoke_bench(
                str(plain), a.workers, a.batch_size, w, transform=t)
            if have_torch:
                cases[f"torch {transform} {start}"] = lambda t=transform, w=warm: torch_run(
                    files_marked, a.workers, a.batch_size, w, transform=t)
                cases[f"torch-tensor {transform} {start}"] = lambda t=transform, w=warm: torch_run(
                    files_marked, a.workers, a.batch_size, w, transform=t, backend="tensor")
    runs = run_rounds(cases, a.repeats, a.out)
    med = {name: statistics.median(x["images_per_s"] for x in runs if x["case"] == name) for name in cases}
    lo = {name: min(x["images_per_s"] for x in runs if x["case"] == name) for name in cases}
    hi = {name: max(x["images_per_s"] for x in runs if x["case"] == name) for name in cases}
    lines = [f"# Restart markers: {n_images} images from {a.photos or original}, packed with `--resize 256`",
             "",
             f"{a.workers} workers, batch {a.batch_size}; medians of {a.repeats} fresh processes per case "
             "[min-max], cases alternating. Cold: the process's first epoch; warm: Stoke after "
             "`--warmup-images N`, torch's second epoch of persistent workers. torch reads the marked JPEGs as "
             "files (the same bytes as the marked shards): `torch` with PIL, `torch-tensor` with torchvision.io's "
             "decode and v2's uint8 transforms, its fastest CPU path.",
             "",
             f"PyTorch: {torch_versions() if have_torch else 'not installed; its cases were skipped'}.",
             "",
             "| transform | start | torch | torch-tensor | Stoke, no markers | Stoke, markers | markers / no markers "
             "| Stoke / torch | Stoke / torch-tensor |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    def spread(c):
        return f"{med[c]:.0f} [{lo[c]:.0f}-{hi[c]:.0f}]" if c in med else "-"

    def ratio(c, to):
        return f"**{med[c] / med[to]:.2f}x**" if to in med else "-"

    for transform in ("train", "eval"):
        for start in ("cold", "warm"):
            s, p = f"stoke {transform} {start}", f"stoke-plain {transform} {start}"
            t, tt = f"torch {transform} {start}", f"torch-tensor {transform} {start}"
            lines.append(f"| {transform} | {start} | {spread(t)} | {spread(tt)} | {spread(p)} | {spread(s)} | "
                         f"{med[s] / med[p]:.2f}x | {ratio(s, t)} | {ratio(s, tt)} |")
    lines += ["", f"## The markers' cost ({len(resized)} of {n_images} images re-encoded; the rest were kept as "
                  "they were, at or below 256, with no markers)", "",
              "| restart interval (MCUs) | JPEG bytes | against none |", "|---|---:|---:|"]
    for k, v in blobs.items():
        total = sum(len(b) for b in v)
        lines.append(f"| {k} | {total / 1e6:.2f} MB | {100 * (total - plain_bytes) / plain_bytes:+.2f}% |")
    m0, m4 = statistics.median(pil["none"]), statistics.median(pil["4 (default)"])
    lines += ["", f"PIL's whole decode (`Image.open(...).convert('RGB')`, one thread, from memory, medians of "
                  f"{a.repeats} rounds): {m0:.3f} ms an image without markers, {m4:.3f} ms with them "
                  f"({100 * (m4 - m0) / m0:+.1f}%).", ""]
    (a.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
