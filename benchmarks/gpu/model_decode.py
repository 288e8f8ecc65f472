#!/usr/bin/env python3
"""stoke.DataLoader(decode="cpu"|"gpu"|"auto") feeding one model on one GPU, side by side with the
model's own rate: inference and training (issue 50's "feeding resnet50" figures).

  python3 model_decode.py --data DIR --out OUT.json [--model resnet50] [--batch 256] [--workers 16]
                          [--seconds 8] [--decodes cpu,gpu,auto] [--modes infer,train]

Inference: ``transform="eval"`` (Resize 256 + CenterCrop 224), the model in eval mode under
``torch.inference_mode()`` and bf16 autocast, channels_last. Training: ``transform="train"``
(RandomResizedCrop 224 + flip), one SGD step under bf16 autocast (loader_gpu.py's TrainStep). Every
loader: batch --batch, float32 normalised output, shuffle, drop_last, pin_memory; each batch goes to
the GPU with ``.cuda(non_blocking=True)`` (a no-op where the batch already is a CUDA tensor, viewing
the producer's device slot).

For each mode first the model's own rate: one batch made once on the device, fed over and over (no
loader can beat it). Then each decode in a fresh loader, timed for --seconds after its first batch.
Per cell: images/s, its share of the model's own rate, the GPU's idle share (CUDA events around
the model work), CPU milliseconds per image of the whole process tree (this process and the
producer), the time to the first batch, and whether batches arrived as CUDA tensors.
"""
import argparse
import json
import platform
import time
from pathlib import Path

import psutil
import torch
import torchvision

import stoke
from loader_gpu import TrainStep, tree_cpu_seconds


class InferStep:
    """One forward pass of --model in eval mode; events around it measure the GPU's busy time."""

    def __init__(self, name: str, classes: int) -> None:
        self.model = getattr(torchvision.models, name)(num_classes=classes).cuda().eval()
        self.model = self.model.to(memory_format=torch.channels_last)
        self.events = []
        self.sink = None

    def __call__(self, images: torch.Tensor, labels: torch.Tensor) -> None:
        x = images.cuda(non_blocking=True)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
            self.sink = self.model(x.contiguous(memory_format=torch.channels_last)).argmax(1)
        end.record()
        self.events.append((start, end))

    idle_share = TrainStep.idle_share


def own_rate(step, batch: int, crop: int, classes: int, seconds: float) -> dict:
    """The model alone, from one batch on the device."""
    images = torch.randn(batch, 3, crop, crop, device="cuda")
    labels = torch.randint(0, classes, (batch,), device="cuda")
    for _ in range(5):
        step(images, labels)
    torch.cuda.synchronize()
    step.events.clear()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < 4:
        step(images, labels)
        n += 1
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"decode": "none (one batch on the device)", "images_per_s": n * batch / dt,
            "gpu_idle_share": step.idle_share()}


def cell(step, mode: str, decode: str, a: argparse.Namespace) -> dict:
    """A fresh loader feeding ``step`` for --seconds after its first batch. ``decode`` is "cpu", "gpu"
    or "auto", or "gpu:N" / "auto:N" with each batch's nvJPEG call split over N threads."""
    where, _, threads = decode.partition(":")
    split = {"decode_gpu_threads": int(threads)} if threads else {}
    proc = psutil.Process()
    torch.cuda.synchronize()
    step.events.clear()
    cpu0, t0 = tree_cpu_seconds(proc), time.perf_counter()
    loader = stoke.DataLoader(a.data, batch_size=a.batch, shuffle=True, drop_last=True, num_workers=a.workers,
                              pin_memory=True, transform="eval" if mode == "infer" else "train",
                              output="float32", decode=where, seed=a.seed, timeout=a.batch_timeout, **split)
    batches, first, on_device, done = 0, None, None, False
    try:
        while not done:
            for images, labels in loader:
                now = time.perf_counter()
                if first is None:
                    first, on_device = now, bool(images.is_cuda)
                step(images, labels)
                del images, labels
                batches += 1
                if now - first >= a.seconds and batches >= 4:
                    done = True
                    break
        torch.cuda.synchronize()
        end = time.perf_counter()
        cpu1 = tree_cpu_seconds(proc)
        said = [line for line in loader._producer._stderr if "decod" in line]
    finally:
        loader.close()
    return {"mode": mode, "decode": decode, "batches": batches,
            "images_per_s": (batches - 1) * a.batch / (end - first), "first_batch_s": first - t0,
            "gpu_idle_share": step.idle_share(), "cpu_ms_per_image": 1e3 * (cpu1 - cpu0) / (batches * a.batch),
            "arrived_on_device": on_device, "said": said[:4]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--crop", type=int, default=224)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--decodes", default="cpu,gpu,auto", help="cells, e.g. cpu,gpu,auto,auto:2 (:N, decode_gpu_threads)")
    p.add_argument("--modes", default="infer,train")
    p.add_argument("--seed", type=int, default=0)
    # A batch that does not come within this fails its cell, and the next cell runs; the producer's
    # stall report (after 60 s) is printed first.
    p.add_argument("--batch-timeout", type=float, default=75.0)
    a = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("model_decode.py: torch sees no CUDA device here; it measures a model on a GPU")
    torch.backends.cudnn.benchmark = True
    classes = sum(1 for d in a.data.iterdir() if d.is_dir())
    rows = []
    for mode in a.modes.split(","):
        step = InferStep(a.model, classes) if mode == "infer" else TrainStep(a.model, a.batch, a.crop, classes)
        own = dict(own_rate(step, a.batch, a.crop, classes, a.seconds / 2), mode=mode)
        print(json.dumps(own), flush=True)
        rows.append(own)
        for decode in a.decodes.split(","):
            try:
                r = cell(step, mode, decode, a)
                r["share_of_model_rate"] = r["images_per_s"] / own["images_per_s"]
            except Exception as e:  # one failed cell is said, and the next one runs
                r = {"mode": mode, "decode": decode, "error": f"{type(e).__name__}: {e}"}
            print(json.dumps(r), flush=True)
            rows.append(r)
            write(a, rows)  # after every cell: a run stopped at its time limit keeps what it measured
        del step
        torch.cuda.empty_cache()


def write(a: argparse.Namespace, rows: list) -> None:
    a.out.write_text(json.dumps({"machine": platform.node(), "torch": torch.__version__,
                                 "gpu": torch.cuda.get_device_name(), "model": a.model, "batch": a.batch,
                                 "workers": a.workers, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
