#!/usr/bin/env python3
"""stoke.DataLoader(decode="cpu"|"gpu"|"auto") side by side on the same files, in one process: the
rate a PyTorch loop receives batches on the device (issue 50's DataLoader path).

  python3 dataloader_decode.py --data DIR --out OUT.json [--workers 16] [--batch 128] [--epochs 3]
                               [--decodes cpu,gpu,auto] [--compare-batches 16]

For each decode, a fresh loader (eval transform, uint8, pin_memory=True) runs --epochs epochs; each
batch goes to the GPU with .to("cuda", non_blocking=True) (a no-op where decode="gpu"|"auto" already
gives CUDA tensors, viewing the producer's device slots) and the device is synchronised at the end
of every epoch. "arrived_on_device" records whether the batches came as CUDA tensors. Reported per epoch: images/s and the seconds; the first epoch includes the
producer's start. Also what the producer said of the decode (its first line naming it). Without a
GPU, decode="gpu" says so and decodes on the CPU, and the batches stay on the host: the script still
runs end to end (the check that it works, before device time is spent).

"pixels" (--compare-batches K, 0 for none): the first K batches of decode="gpu" against
decode="cpu", unshuffled, the CPU at full scale (dct_scaling="none", as the GPU decodes), per image:
the largest and the mean absolute difference in levels after the resize and crop, and how many
images differ by more than 2 levels anywhere (the issue's target: within 2). Then decode="auto" on the
same batches: each of its images must be byte for byte the CPU's or the GPU's image of that place
(the whole batches and shares it gives the CPU threads come back in their places); "auto" counts
those that are neither, with the largest mean difference of such an image from the nearer of the two.
"""
import argparse
import json
import platform
import time
from pathlib import Path

import torch

import stoke


def run(data: Path, decode: str, workers: int, batch: int, epochs: int) -> dict:
    device = "cuda" if torch.cuda.is_available() else None
    loader = stoke.DataLoader(data, batch_size=batch, num_workers=workers, pin_memory=device is not None,
                              decode=decode)
    rows = []
    arrived_on_device = None
    try:
        for epoch in range(epochs):
            start = time.perf_counter()
            images = 0
            for x, _ in loader:
                if arrived_on_device is None:
                    arrived_on_device = bool(x.is_cuda)
                if device is not None:
                    x = x.to(device, non_blocking=True)
                images += x.shape[0]
            if device is not None:
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            rows.append({"epoch": epoch, "images": images, "seconds": seconds, "images_per_s": images / seconds})
            print(f"decode={decode} epoch {epoch}: {images} images in {seconds:.2f} s, {images / seconds:,.0f} images/s",
                  flush=True)
        said = [line for line in loader._producer._stderr if "decod" in line and "--decode" in line
                or "decoding on CUDA" in line]
    finally:
        loader.close()
    return {"decode": decode, "workers": workers, "batch": batch, "arrived_on_device": arrived_on_device,
            "epochs": rows, "said": said}


def compare(data: Path, workers: int, batch: int, batches: int) -> dict:
    """decode="gpu" against decode="cpu" on the first ``batches`` batches, per image, and decode="auto" against both."""
    got = {}
    for decode in ("cpu", "gpu", "auto"):
        loader = stoke.DataLoader(data, batch_size=batch, num_workers=workers, shuffle=False, dct_scaling="none",
                                  decode=decode)
        try:
            out = []
            for k, (x, _) in enumerate(loader):
                if k == batches:
                    break
                out.append(x.cpu().to(torch.int16))  # a copy: the slot goes back
            got[decode] = out
            if decode == "gpu":
                got["arrived_on_device"] = bool(x.is_cuda)
        finally:
            loader.close()
    worst, means, over = [], [], 0
    for c, g in zip(got["cpu"], got["gpu"]):
        d = (c - g).abs().flatten(1)
        worst += d.max(1).values.tolist()
        means += d.float().mean(1).tolist()
        over += int((d.max(1).values > 2).sum())
    as_cpu = as_gpu = neither = 0
    neither_worst_mean = 0.0
    for c, g, a in zip(got["cpu"], got["gpu"], got["auto"]):
        from_cpu = (a == c).flatten(1).all(1)
        from_gpu = (a == g).flatten(1).all(1)
        as_cpu += int(from_cpu.sum())
        as_gpu += int((from_gpu & ~from_cpu).sum())
        odd = ~(from_cpu | from_gpu)
        neither += int(odd.sum())
        if odd.any():
            nearer = torch.minimum((a - c).abs().flatten(1).float().mean(1), (a - g).abs().flatten(1).float().mean(1))
            neither_worst_mean = max(neither_worst_mean, float(nearer[odd].max()))
    return {"images": len(worst), "max_abs_diff": max(worst) if worst else None,
            "mean_abs_diff": sum(means) / len(means) if means else None,
            "images_over_2_levels": over, "gpu_arrived_on_device": got.get("arrived_on_device"),
            "auto": {"images": sum(len(a) for a in got["auto"]), "as_cpu": as_cpu, "as_gpu_not_cpu": as_gpu,
                     "neither": neither, "neither_largest_mean_diff": neither_worst_mean}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--decodes", default="cpu,gpu,auto")
    p.add_argument("--compare-batches", type=int, default=16)
    a = p.parse_args()
    results = [run(a.data, d, a.workers, a.batch, a.epochs) for d in a.decodes.split(",")]
    pixels = compare(a.data, a.workers, a.batch, a.compare_batches) if a.compare_batches > 0 else None
    if pixels is not None:
        print(f"pixels, decode=gpu against cpu: {pixels}", flush=True)
    a.out.write_text(json.dumps({
        "machine": platform.node(), "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "runs": results, "pixels": pixels}, indent=2) + "\n")


if __name__ == "__main__":
    main()
