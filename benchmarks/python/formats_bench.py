#!/usr/bin/env python3
"""stoke.DataLoader against torch's DataLoader on the same photographs held as JPEG, PNG and WebP.

  python3 formats_bench.py --photos DIR --images N --work DIR --out OUT [--repeats 3] [--workers 2]

Makes N images cut from the photographs under --photos (stoke make-dataset --photos: JPEG, ImageNet's
sizes), then writes the same pixels as PNG (PIL, its default compression) and as lossy WebP (PIL,
quality 80, what img2dataset writes on request). Each (folder, transform, loader) cell runs in a fresh
process (dataloader_bench.py --run: the loader's creation, JVM or worker processes, is timed), 3
epochs, no model, the loaders alternating, --repeats times. torch's DataLoader runs twice: with PIL
(`torch`) and with torchvision.io's decode and v2's uint8 transforms (`torch-tensor`, its fastest CPU
path; torchvision.io decodes PNG with libpng and WebP with libwebp). Reports the median images/s over all
epochs (cold: the process's first epoch included) and over epochs 2 and 3 (warm), and the ratios.
Writes OUT/runs.jsonl and OUT/summary.md.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent


def make_folders(args):
    from PIL import Image

    work = Path(args.work)
    jpeg = work / "jpeg"
    if not jpeg.is_dir():
        subprocess.run([str(CHECKOUT / "stoke"), "make-dataset", str(jpeg), "--images", str(args.images),
                        "--seed", "7", "--photos", args.photos], check=True)
    folders = {"jpeg": jpeg}
    for fmt, ext, options in (("png", ".png", {}), ("webp", ".webp", {"quality": 80})):
        out = work / fmt
        if not out.is_dir():
            for src in sorted(jpeg.rglob("*.jpg")):
                dst = out / src.parent.name / (src.stem + ext)
                dst.parent.mkdir(parents=True, exist_ok=True)
                Image.open(src).convert("RGB").save(dst, fmt.upper(), **options)
        folders[fmt] = out
    return folders


LOADERS = ("torch", "torch-tensor", "stoke")


def torch_versions(python):
    """torch's, torchvision's and Pillow's versions in the Python the runs use, as one line."""
    code = "import torch, torchvision, PIL; print(torch.__version__, torchvision.__version__, PIL.__version__)"
    torch, vision, pillow = subprocess.run([python, "-c", code], capture_output=True, text=True,
                                           check=True).stdout.split()
    return f"torch {torch}, torchvision {vision}, Pillow {pillow}"


def size_mb(folder):
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--photos", required=True)
    ap.add_argument("--images", type=int, default=800)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    folders = make_folders(args)
    cells = [("jpeg", "eval"), ("png", "eval"), ("webp", "eval"), ("png", "train"), ("webp", "train"),
             ("jpeg", "train")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    with open(out / "runs.jsonl", "w") as log:
        for repeat in range(args.repeats):
            for fmt, transform in cells:
                order = LOADERS if repeat % 2 == 0 else LOADERS[::-1]
                for loader in order:
                    cmd = [args.python, str(HERE / "dataloader_bench.py"), "--run", "--loader", loader,
                           "--data", str(folders[fmt]), "--workers", str(args.workers), "--epochs", str(args.epochs),
                           "--transform", transform, "--model", "none"]
                    proc = subprocess.run(cmd, capture_output=True, text=True)
                    if proc.returncode != 0:
                        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
                    result = json.loads(proc.stdout.strip().splitlines()[-1])
                    result.update(format=fmt, repeat=repeat)
                    runs.append(result)
                    log.write(json.dumps(result) + "\n")
                    log.flush()
                    print(fmt, transform, loader, f"{result['images_per_s']:.0f}", file=sys.stderr)
    lines = ["# The same photographs as JPEG, PNG and WebP: stoke.DataLoader and torch's DataLoader", "",
             f"{args.images} images cut from {args.photos} (median 500x375); batch 256, {args.workers} workers, "
             f"{args.epochs} epochs, no model; each cell the median of {args.repeats} fresh processes, "
             "the loaders alternating. Cold: all epochs, the loader's creation included; warm: epochs 2 on. "
             f"{torch_versions(args.python)}: `torch` reads with PIL, "
             "`tensor` with torchvision.io's decode and v2's uint8 transforms.", "",
             "| format | MB | transform | torch cold | tensor cold | Stoke cold | ratio | ratio to tensor "
             "| torch warm | tensor warm | Stoke warm | ratio | ratio to tensor |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for fmt, transform in cells:
        def med(loader, key):
            return statistics.median(r[key] for r in runs
                                     if r["format"] == fmt and r["transform"] == transform and r["loader"] == loader)
        tc, xc, sc = (med(loader, "images_per_s") for loader in LOADERS)
        tw, xw, sw = (med(loader, "warm_images_per_s") for loader in LOADERS)
        lines.append(f"| {fmt} | {size_mb(folders[fmt]):.0f} | {transform} | {tc:.0f} | {xc:.0f} | {sc:.0f} | "
                     f"{sc / tc:.2f}x | {sc / xc:.2f}x | {tw:.0f} | {xw:.0f} | {sw:.0f} | {sw / tw:.2f}x | "
                     f"{sw / xw:.2f}x |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
