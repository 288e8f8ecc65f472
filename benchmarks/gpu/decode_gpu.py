#!/usr/bin/env python3
"""torchvision's batched JPEG decode on the GPU: the baseline Stoke's GPU decode is measured against
(issue 50), on the same files, in one process.

  python3 decode_gpu.py --data DIR --out OUT.json [--images 4096] [--batch 256] [--device cuda]

Reads up to --images JPEG files (name order) into memory first, then times, over all of them in
batches of --batch:
  decode          torchvision.io.decode_jpeg(list of files, device=DEVICE), RGB;
  decode+resize   the same, then v2.Resize(256, antialias=True) + CenterCrop(224) of each image on the
                  device and a stack into one uint8 [n, 3, 224, 224] batch: the eval transform's work;
each after one untimed batch (nvJPEG's and the kernels' start), with the device synchronised at the
end of every batch. Also the pixels: the first 64 images decoded on DEVICE against torchvision's CPU
decode of the same files (the mean and the largest absolute difference of a channel value).
--device cpu runs the same code on the CPU (the check this script works, on a machine without a GPU).
"""
import argparse
import json
import platform
import time
from pathlib import Path

import torch
import torchvision
from torchvision.io import ImageReadMode, decode_jpeg, read_file
from torchvision.transforms import v2


def jpegs(root: Path, limit: int):
    """The first ``limit`` .jpg/.jpeg files under ``root``, in name order."""
    found = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in (".jpg", ".jpeg"))
    return found[:limit]


def timed(files, batch, device, work):
    """Images/s of ``work(list of decoded images)`` over ``files`` in batches, after one untimed batch."""
    def one(chunk):
        out = work(decode_jpeg(chunk, device=device, mode=ImageReadMode.RGB))
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return out
    one(files[:batch])
    start = time.perf_counter()
    for i in range(0, len(files), batch):
        one(files[i:i + batch])
    return len(files) / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--images", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    paths = jpegs(args.data, args.images)
    if not paths:
        raise SystemExit(f"decode_gpu.py: no .jpg or .jpeg file under {args.data}")
    files = [read_file(str(p)) for p in paths]
    resize = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224)])
    decode_rate = timed(files, args.batch, args.device, lambda images: images)
    eval_rate = timed(files, args.batch, args.device, lambda images: torch.stack([resize(x) for x in images]))
    sample = files[:64]
    on_device = decode_jpeg(sample, device=args.device, mode=ImageReadMode.RGB)
    on_cpu = decode_jpeg(sample, mode=ImageReadMode.RGB)
    total, count, largest = 0, 0, 0
    for a, b in zip(on_device, on_cpu):
        d = (a.cpu().int() - b.int()).abs()
        total += int(d.sum())
        count += d.numel()
        largest = max(largest, int(d.max()))
    result = {
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor() or "cpu",
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "files": len(files), "bytes": sum(int(f.numel()) for f in files), "batch": args.batch,
        "decode_images_per_s": round(decode_rate, 1), "decode_resize_images_per_s": round(eval_rate, 1),
        "pixels_vs_cpu_decode": {"images": len(sample), "mean_abs_diff": round(total / max(1, count), 4),
                                 "largest_abs_diff": largest},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
