#!/usr/bin/env python3
"""The seeds' DataLoader experiment from Python: one loop fed by torch's DataLoader or by
stoke.DataLoader, on the same files and cores.

  python3 dataloader_bench.py --run --loader torch|torch-tensor|stoke --data DIR [--model none|sleep|mobilenet] ...
      one run in this (fresh) process; prints one JSON object.
  python3 dataloader_bench.py --data DIR --out OUT [--repeats 3] ...
      the sweep: every (model, loader) pair --repeats times, each a fresh process, the loaders
      alternating; writes OUT/runs.jsonl and OUT/summary.md.

A run: the clock starts, the loader is created (torch: ImageFolder + Resize(256) + CenterCrop(224)
+ PILToTensor, num_workers workers, persistent; torch-tensor, torch's fastest CPU path: the same
DataLoader, ImageFolder's loader torchvision.io.decode_image (RGB) and v2's transforms on uint8
tensors, antialiased; stoke: stoke.DataLoader, whose creation starts its
Java producer, the JVM's start included), then --epochs epochs of the loop: wait for a batch, then
the model step. It reports images/s over all epochs including the loader's creation, time from
creating the loader to the first batch, p50/p99 of the per-batch wait, and the peak of the
process tree's proportional set size (PSS: shared memory, the ring included, counted once).

The model step is the same for both loaders:
  none:      nothing: the batch is dropped (the loaders' own rate);
  sleep:     a simulated model, --model-ms-per-image per image (the seeds' experiment);
  mobilenet: uint8 pixels to normalised float32 NCHW, then torchvision's mobilenet_v3_small
             forward pass on the CPU (random weights), with torch.set_num_threads(--model-threads).

The sweep also runs the loop with no loader (--loader memory: one batch made once and reused), the
ceiling that no loader can pass on these cores.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "clients" / "python"))


def tree_pss_kib(root_pid):
    """Sum of PSS over root_pid and its descendants, in KiB (0 for processes gone meanwhile)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


class PeakMemory:
    """Samples the process tree's PSS every 100 ms on a thread."""

    def __init__(self):
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = os.getpid()
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_pss_kib(me))
            self._stop.wait(0.1)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, tree_pss_kib(os.getpid()))


class MemoryLoader:
    """No loader at all: one uint8 NHWC batch made once, yielded as many times as the folder's images
    need. What the loop reaches with loading free: the ceiling for any loader on these cores."""

    def __init__(self, root, batch_size):
        import torch
        self.images = sum(1 for d in Path(root).iterdir() if d.is_dir() for f in d.iterdir() if f.is_file())
        self.batch_size = batch_size
        self.batch = torch.randint(0, 256, (batch_size, 224, 224, 3), dtype=torch.uint8)

    def __iter__(self):
        for start in range(0, self.images, self.batch_size):
            yield (self.batch[:min(self.batch_size, self.images - start)],)


def decode_file(path):
    """torchvision.io's decode of a file, as RGB: the torch-tensor loader's ImageFolder loader."""
    from torchvision.io import ImageReadMode, decode_image, read_file

    return decode_image(read_file(path), mode=ImageReadMode.RGB)


def make_loader(args):
    if args.loader == "memory":
        return MemoryLoader(args.data, args.batch_size), "nhwc"
    if args.loader == "stoke":
        import stoke
        return stoke.DataLoader(args.data, batch_size=args.batch_size, num_workers=args.workers,
                                shuffle=True, seed=1, transform=args.transform), "nhwc"
    import torch.utils.data
    from torchvision import datasets, transforms
    if args.loader == "torch-tensor":
        from torchvision.transforms import v2 as T
        tail, kwargs = [], {"loader": decode_file}
    else:
        T, tail, kwargs = transforms, [transforms.PILToTensor()], {}
    head = ([T.RandomResizedCrop(224, antialias=True), T.RandomHorizontalFlip()] if args.transform == "train"
            else [T.Resize(256, antialias=True), T.CenterCrop(224)])
    dataset = datasets.ImageFolder(args.data, transform=T.Compose(head + tail), **kwargs)
    return torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, num_workers=args.workers, shuffle=True,
                                       persistent_workers=args.workers > 0), "nchw"


def make_step(args):
    import torch

    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255
    model = None
    if args.model == "mobilenet":
        import torchvision
        torch.set_num_threads(args.model_threads)
        model = torchvision.models.mobilenet_v3_small().eval()

    def step(images, layout):
        if args.model == "sleep":
            time.sleep(args.model_ms_per_image * len(images) / 1000)
        elif model is not None:
            x = images.permute(0, 3, 1, 2) if layout == "nhwc" else images
            with torch.no_grad():
                model((x.float() - mean) / std)
    return step


def run(args):
    step = make_step(args)
    waits = []
    images = 0
    with PeakMemory() as memory:
        start = time.perf_counter()
        loader, layout = make_loader(args)
        first = None
        after_first_epoch = None  # (time, images) when the first epoch ended: the rest is the warm rate
        for epoch in range(args.epochs):
            if hasattr(loader, "set_epoch"):
                loader.set_epoch(epoch)
            it = iter(loader)
            while True:
                t = time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    break
                now = time.perf_counter()
                waits.append(now - t)
                if first is None:
                    first = now - start
                step(batch[0], layout)
                images += len(batch[0])
                del batch
            if after_first_epoch is None:
                after_first_epoch = (time.perf_counter(), images)
        elapsed = time.perf_counter() - start
        if hasattr(loader, "close"):
            loader.close()
    waits_ms = sorted(w * 1000 for w in waits)
    warm = None
    if args.epochs > 1 and after_first_epoch is not None:
        warm = (images - after_first_epoch[1]) / (start + elapsed - after_first_epoch[0])
    return {"loader": args.loader, "model": args.model, "workers": args.workers, "batch_size": args.batch_size,
            "transform": args.transform, "data": args.data, "warm_images_per_s": warm,
            "epochs": args.epochs, "images": images, "elapsed_s": elapsed, "images_per_s": images / elapsed,
            "first_batch_ms": first * 1000, "wait_p50_ms": statistics.median(waits_ms),
            "wait_p99_ms": waits_ms[min(len(waits_ms) - 1, int(0.99 * len(waits_ms)))],
            "peak_pss_mb": memory.peak / 1024}


LOADERS = ("torch", "torch-tensor", "stoke", "memory")


def sweep(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    base = [sys.executable, __file__, "--run", "--data", args.data, "--workers", str(args.workers),
            "--batch-size", str(args.batch_size), "--epochs", str(args.epochs),
            "--model-ms-per-image", str(args.model_ms_per_image), "--model-threads", str(args.model_threads)]
    with open(out / "runs.jsonl", "w") as log:
        for model in args.models.split(","):
            for repeat in range(args.repeats):
                for loader in LOADERS if repeat % 2 == 0 else ("stoke", "torch-tensor", "torch", "memory"):
                    done = subprocess.run(base + ["--loader", loader, "--model", model], capture_output=True, text=True)
                    if done.returncode != 0:
                        raise SystemExit(f"{loader}/{model} failed:\n{done.stderr[-3000:]}")
                    result = json.loads(done.stdout.strip().splitlines()[-1])
                    result["repeat"] = repeat + 1
                    runs.append(result)
                    log.write(json.dumps(result) + "\n")
                    log.flush()
                    print(json.dumps(result), file=sys.stderr)
    import torch
    import torchvision
    import PIL
    lines = ["| model | loader | images/s (median) | vs torch | vs torch-tensor | of the ceiling | first batch ms | "
             "wait p50 ms | wait p99 ms | peak PSS MB |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for model in args.models.split(","):
        med = {}
        for loader in LOADERS:
            mine = [r for r in runs if r["model"] == model and r["loader"] == loader]
            med[loader] = {k: statistics.median(r[k] for r in mine)
                           for k in ("images_per_s", "first_batch_ms", "wait_p50_ms", "wait_p99_ms", "peak_pss_mb")}
        for loader in LOADERS:
            m = med[loader]
            name = "none (ceiling)" if loader == "memory" else loader
            lines.append(f"| {model} | {name} | {m['images_per_s']:.0f} | "
                         f"{m['images_per_s'] / med['torch']['images_per_s']:.2f}x | "
                         f"{m['images_per_s'] / med['torch-tensor']['images_per_s']:.2f}x | "
                         f"{m['images_per_s'] / med['memory']['images_per_s']:.0%} | {m['first_batch_ms']:.0f} | "
                         f"{m['wait_p50_ms']:.1f} | {m['wait_p99_ms']:.1f} | {m['peak_pss_mb']:.0f} |")
    header = (f"{args.repeats} fresh processes per cell, loaders alternating; {args.workers} workers, batch "
              f"{args.batch_size}, {args.epochs} epochs of {args.data} including the loader's creation; "
              f"sleep = {args.model_ms_per_image} ms per image; mobilenet = mobilenet_v3_small on "
              f"{args.model_threads} threads; {os.cpu_count()} cores; torch {torch.__version__}, torchvision "
              f"{torchvision.__version__}, Pillow {PIL.__version__}.\n\n")
    (out / "summary.md").write_text(header + "\n".join(lines) + "\n")
    print(header + "\n".join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--run", action="store_true", help="one run in this process (else the sweep)")
    p.add_argument("--loader", choices=LOADERS,
                   help="memory: no loading at all (one batch reused), the loop's ceiling")
    p.add_argument("--model", choices=("none", "sleep", "mobilenet"), default="none")
    p.add_argument("--models", default="none,sleep,mobilenet", help="the sweep's models")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--transform", choices=("eval", "train"), default="eval",
                   help="eval: Resize(256) + CenterCrop(224); train: RandomResizedCrop(224) + RandomHorizontalFlip()")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--model-ms-per-image", type=float, default=1.0)
    p.add_argument("--model-threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out")
    args = p.parse_args()
    if args.run:
        print(json.dumps(run(args)))
    else:
        if not args.out:
            p.error("the sweep needs --out")
        sweep(args)


if __name__ == "__main__":
    main()
