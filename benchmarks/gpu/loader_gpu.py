#!/usr/bin/env python3
"""stoke.DataLoader against torch.utils.data.DataLoader feeding one model on one GPU, side by side.

  python3 loader_gpu.py --data DIR --out OUT [--workers 1,2,4,8,16] [--seconds 6] ...

Both loaders get the same ImageFolder and the torchvision recipe's training transform
(RandomResizedCrop(224) + RandomHorizontalFlip + PILToTensor + ConvertImageDtype(float) +
Normalize), batch 256, shuffle, drop_last and pin_memory=True; each batch goes to the GPU with
``.cuda(non_blocking=True)`` and into the same training step (--model, bf16 autocast, channels_last,
SGD). stoke.DataLoader translates the transform and decodes in its Java producer; torch decodes with
PIL in worker processes.

What is written to OUT:
  copy.json    host-to-device copies of one batch's bytes (uint8 and float32): pageable .cuda(),
               torch's pin_memory() then a non_blocking copy, a copy from memory already pinned
               (the link's peak for that size), and a copy from a slot of stoke.DataLoader's pinned ring;
  cells.jsonl  one line per run: loader, workers, images/s while training, time from creating the
               loader to its first batch, the GPU's idle share, CPU-seconds per image of the whole
               process tree, and the auto workers' choices;
  summary.md   the tables.

Each cell creates a new loader in this process, after the model has been built and warmed up once:
the loader's start (torch's worker processes, Stoke's JVM) is cold every time, the model never is.
The cells alternate loaders at each worker count, so drift on the machine hits both alike.

The GPU's idle share: CUDA events around each step's model work (after its copy), so the share of
the span from the second step's start to the last step's end in which the GPU ran no model work.
"""
import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import psutil
import torch
import torchvision
from torchvision import datasets, transforms

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def train_transform(crop, output="float32"):
    """The recipe's ClassificationPresetTrain with its defaults (v1), which stoke.DataLoader translates;
    with ``output="uint8"`` it stops at PILToTensor and the step normalises on the GPU."""
    head = [transforms.RandomResizedCrop(crop, interpolation=transforms.InterpolationMode.BILINEAR),
            transforms.RandomHorizontalFlip(0.5), transforms.PILToTensor()]
    if output == "uint8":
        return transforms.Compose(head)
    return transforms.Compose(head + [transforms.ConvertImageDtype(torch.float), transforms.Normalize(MEAN, STD)])


def tree_cpu_seconds(proc):
    """User+system CPU of this process, its reaped children and its live descendants."""
    t = proc.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in proc.children(recursive=True):
        try:
            c = child.cpu_times()
            total += c.user + c.system
        except psutil.NoSuchProcess:
            pass
    return total


class TrainStep:
    """One training step of --model on the GPU; events around the model work measure its busy time."""

    def __init__(self, name, batch, crop, classes):
        import torch.nn as nn
        self.model = getattr(torchvision.models, name)(num_classes=classes).cuda().to(memory_format=torch.channels_last)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.loss = nn.CrossEntropyLoss()
        self.events = []
        self.mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1) * 255
        self.std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1) * 255

    def __call__(self, images, labels):
        x = images.cuda(non_blocking=True)
        y = labels.cuda(non_blocking=True)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        x = x.contiguous(memory_format=torch.channels_last)
        if x.dtype == torch.uint8:  # uint8 crossed the bus: a quarter of float32's bytes
            x = (x.float() - self.mean) / self.std
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = self.loss(self.model(x), y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        end.record()
        self.events.append((start, end))

    def idle_share(self):
        """Share of the span from the second step's start to the last's end with no model work queued."""
        torch.cuda.synchronize()
        steps = self.events[1:]
        if len(steps) < 2:
            return None
        span = steps[0][0].elapsed_time(steps[-1][1])
        busy = sum(s.elapsed_time(e) for s, e in steps)
        return max(0.0, 1.0 - busy / span) if span > 0 else None


def make_loader(kind, data, workers, batch, crop, seed, output):
    dataset = datasets.ImageFolder(data, transform=train_transform(crop, output))
    if kind == "torch":
        g = torch.Generator()
        g.manual_seed(seed)
        return torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers,
                                           pin_memory=True, drop_last=True, persistent_workers=True,
                                           generator=g)
    import stoke
    return stoke.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=0 if workers == "auto" else workers,
                            pin_memory=True, drop_last=True, seed=seed)


def run_cell(kind, workers, args, step, model, output="float32"):
    """Creates a loader, feeds ``step`` for --seconds after its first batch, and returns the figures."""
    proc = psutil.Process()
    seconds = args.auto_seconds if workers == "auto" else args.seconds
    torch.cuda.synchronize()
    step.events.clear()
    cpu0 = tree_cpu_seconds(proc)
    t0 = time.perf_counter()
    loader = make_loader(kind, args.data, workers, args.batch_size, args.crop, args.seed, output)
    batches, first, waits = 0, None, []
    done = False
    try:
        while not done:
            it = iter(loader)
            while True:
                w0 = time.perf_counter()
                try:
                    images, labels = next(it)[:2]
                except StopIteration:
                    break
                now = time.perf_counter()
                if first is None:
                    first = now
                else:
                    waits.append(now - w0)
                if model:
                    step(images, labels)
                else:
                    images.cuda(non_blocking=True)
                del images, labels
                batches += 1
                if now - first >= seconds and batches >= args.min_batches:
                    done = True
                    break
        torch.cuda.synchronize()
        end = time.perf_counter()
        cpu1 = tree_cpu_seconds(proc)
        tuning = loader.auto_workers_log() if kind == "stoke" and workers == "auto" else []
        active = loader.active_workers if kind == "stoke" else workers
    finally:
        if kind == "stoke":
            loader.close()
        del loader
    images = batches * args.batch_size
    waits.sort()
    return {
        "loader": kind, "workers": workers, "active_workers": active, "model": args.model if model else "none",
        "output": output,
        "batch_size": args.batch_size, "batches": batches,
        "images_per_s": (batches - 1) * args.batch_size / (end - first),
        "first_batch_s": first - t0,
        "gpu_idle_share": step.idle_share() if model else None,
        "cpu_s_per_image": (cpu1 - cpu0) / images,
        "wait_p50_ms": 1e3 * waits[len(waits) // 2] if waits else None,
        "wait_p99_ms": 1e3 * waits[min(len(waits) - 1, int(0.99 * len(waits)))] if waits else None,
        "tuning": tuning,
    }


def ceiling(step, args, classes):
    """The model alone: one batch made once, pinned, fed over and over (no loader can beat this)."""
    images = torch.randn(args.batch_size, 3, args.crop, args.crop).pin_memory()
    labels = torch.randint(0, classes, (args.batch_size,)).pin_memory()
    for _ in range(3):
        step(images, labels)
    torch.cuda.synchronize()
    step.events.clear()
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < args.seconds / 2 or n < 4:
        step(images, labels)
        n += 1
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"loader": "memory", "workers": 0, "model": args.model, "output": "float32", "batches": n,
            "images_per_s": n * args.batch_size / dt, "gpu_idle_share": step.idle_share()}


def copy_rates(args):
    """GB/s of one batch's bytes to the GPU, by four routes, timed with CUDA events."""
    import stoke

    def timed(fn, n=10):
        fn()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        s.record()
        for _ in range(n):
            fn()
        e.record()
        torch.cuda.synchronize()
        return n, s.elapsed_time(e) / 1e3, time.perf_counter() - t0

    out = {}
    # A batch from stoke.DataLoader's pinned ring: uint8 [n, 3, C, C] (PILToTensor) and float32.
    eval_uint8 = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(args.crop), transforms.PILToTensor()])
    eval_float = transforms.Compose([eval_uint8, transforms.ConvertImageDtype(torch.float), transforms.Normalize(MEAN, STD)])
    for name, tf in (("uint8", eval_uint8), ("float32", eval_float)):
        with stoke.DataLoader(datasets.ImageFolder(args.data, transform=tf), batch_size=args.batch_size,
                              num_workers=args.copy_workers, pin_memory=True) as loader:
            images = next(iter(loader))[0]
            nbytes = images.numel() * images.element_size()
            # What .cuda() makes: a device tensor with the source's strides (Stoke's uint8 batch is an
            # NHWC slot seen as [n, 3, H, W]), so the copy is one DMA; a contiguous NCHW destination
            # would make torch transpose on the host first.
            dst = torch.empty_like(images, device="cuda")
            row = {"bytes": nbytes, "ring_slot_is_pinned": bool(images.is_pinned())}
            n, gpu_s, _ = timed(lambda: dst.copy_(images, non_blocking=True))
            row["stoke_ring_slot_GBps"] = nbytes * n / gpu_s / 1e9
            row["copy_equals_slot"] = bool(torch.equal(dst.cpu(), images))
            del images
        pageable = torch.empty(nbytes, dtype=torch.uint8)
        pageable.fill_(1)
        flat = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        n, _, wall = timed(lambda: flat.copy_(pageable))
        row["pageable_GBps"] = nbytes * n / wall / 1e9
        # What DataLoader(pin_memory=True) does per batch: copy into pinned memory, then a non_blocking copy.
        n, _, wall = timed(lambda: flat.copy_(pageable.pin_memory(), non_blocking=True))
        row["pin_memory_then_copy_GBps"] = nbytes * n / wall / 1e9
        pinned = pageable.pin_memory()
        n, gpu_s, _ = timed(lambda: flat.copy_(pinned, non_blocking=True))
        row["pinned_GBps"] = nbytes * n / gpu_s / 1e9
        big = torch.empty(1 << 30, dtype=torch.uint8).pin_memory()
        big_dst = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        n, gpu_s, _ = timed(lambda: big_dst.copy_(big, non_blocking=True), n=5)
        row["peak_1GiB_pinned_GBps"] = (1 << 30) * n / gpu_s / 1e9
        del big, big_dst, pinned, pageable, flat, dst
        out[name] = row
    return out


def table(rows, header, keys, fmt):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(fmt.get(k, str)(r.get(k)) for k in keys) + " |")
    return "\n".join(lines)


def summary(meta, copies, ceiling_row, cells):
    f1 = lambda v: "" if v is None else f"{v:.0f}"
    pct = lambda v: "" if v is None else f"{100 * v:.0f}%"
    ms = lambda v: "" if v is None else f"{1e3 * v:.0f}"
    cpu = lambda v: "" if v is None else f"{1e3 * v:.2f}"
    gb = lambda v: "" if v is None else f"{v:.1f}"
    out = ["# stoke.DataLoader and torch's DataLoader feeding one GPU", "",
           "```", json.dumps(meta, indent=1), "```", ""]
    out += ["## Host to device, one batch's bytes (GB/s)", ""]
    rows = [dict(kind=k, **v) for k, v in copies.items()]
    out.append(table(rows, ["batch", "bytes", "pageable .cuda()", "pin_memory() + copy", "from pinned",
                            "from Stoke's pinned ring slot", "one pinned 1 GiB buffer"],
                     ["kind", "bytes", "pageable_GBps", "pin_memory_then_copy_GBps", "pinned_GBps",
                      "stoke_ring_slot_GBps", "peak_1GiB_pinned_GBps"],
                     {k: gb for k in ("pageable_GBps", "pin_memory_then_copy_GBps", "pinned_GBps",
                                      "stoke_ring_slot_GBps", "peak_1GiB_pinned_GBps")}))
    out += ["", f"## Training {meta['model']} (batch {meta['batch_size']}), the model alone: "
            f"{ceiling_row['images_per_s']:.0f} images/s, GPU idle {pct(ceiling_row['gpu_idle_share'])}", ""]
    groups = sorted({(c["model"], c.get("output", "float32")) for c in cells}, key=lambda g: (g[0] == "none", g[1]))
    for model, output in groups:
        mine = [c for c in cells if (c["model"], c.get("output", "float32")) == (model, output)]
        out.append(f"### model: {model}, batches of {output}" + (" (normalised on the GPU in the step)"
                                                                  if output == "uint8" else " (normalised by the loader)"))
        out.append("")
        by = {}
        for c in mine:
            by.setdefault(str(c["workers"]), {})[c["loader"]] = c
        rows = []
        for w, pair in by.items():
            t, s = pair.get("torch", {}), pair.get("stoke", {})
            rows.append({"workers": w if w != "auto" else f"auto ({s.get('active_workers')} at the end)",
                         "t_ips": t.get("images_per_s"), "s_ips": s.get("images_per_s"),
                         "ratio": (f"{s['images_per_s'] / t['images_per_s']:.2f}x" if t and s else ""),
                         "t_idle": t.get("gpu_idle_share"), "s_idle": s.get("gpu_idle_share"),
                         "t_cpu": t.get("cpu_s_per_image"), "s_cpu": s.get("cpu_s_per_image"),
                         "t_first": t.get("first_batch_s"), "s_first": s.get("first_batch_s")})
        out.append(table(rows, ["workers", "torch images/s", "Stoke images/s", "Stoke/torch", "torch GPU idle",
                                "Stoke GPU idle", "torch CPU ms/image", "Stoke CPU ms/image",
                                "torch first batch ms", "Stoke first batch ms"],
                         ["workers", "t_ips", "s_ips", "ratio", "t_idle", "s_idle", "t_cpu", "s_cpu", "t_first",
                          "s_first"],
                         {"t_ips": f1, "s_ips": f1, "t_idle": pct, "s_idle": pct, "t_cpu": cpu, "s_cpu": cpu,
                          "t_first": ms, "s_first": ms}))
        out.append("")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--workers", default="1,2,4,8,16")
    ap.add_argument("--no-model-workers", default="16", help="worker counts also run with no model (the loaders' "
                    "own rate into the GPU); empty for none")
    ap.add_argument("--uint8-workers", default="16", help="worker counts also run with uint8 batches, normalised "
                    "on the GPU in the step (a quarter of the bytes on the bus); empty for none")
    ap.add_argument("--auto", action=argparse.BooleanOptionalAction, default=True,
                    help="also run stoke.DataLoader with num_workers='auto'")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--crop", type=int, default=224)
    ap.add_argument("--seconds", type=float, default=6.0, help="timed span per cell after its first batch")
    ap.add_argument("--auto-seconds", type=float, default=15.0)
    ap.add_argument("--min-batches", type=int, default=4)
    ap.add_argument("--copy-workers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-copy", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("loader_gpu.py: torch sees no CUDA device; this benchmark needs one", file=sys.stderr)
        sys.exit(3)
    args.out.mkdir(parents=True, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    classes = len(datasets.ImageFolder(args.data).classes)
    meta = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
            "torchvision": torchvision.__version__, "python": platform.python_version(),
            "cpus": len(os.sched_getaffinity(0)), "model": args.model, "batch_size": args.batch_size,
            "crop": args.crop, "seconds": args.seconds, "data": args.data, "classes": classes,
            "images": len(datasets.ImageFolder(args.data).samples), "argv": sys.argv}
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1))
    copies = {} if args.skip_copy else copy_rates(args)
    (args.out / "copy.json").write_text(json.dumps(copies, indent=1))
    print(json.dumps(copies), flush=True)
    step = TrainStep(args.model, args.batch_size, args.crop, classes)
    top = ceiling(step, args, classes)
    print(json.dumps(top), flush=True)
    cells = []
    plan = [(w, True, "float32") for w in (int(x) for x in args.workers.split(",") if x)]
    plan += [(int(w), True, "uint8") for w in args.uint8_workers.split(",") if w]
    plan += [(int(w), False, "float32") for w in args.no_model_workers.split(",") if w]
    with open(args.out / "cells.jsonl", "w") as log:
        log.write(json.dumps(top) + "\n")
        for workers, model, output in plan:
            for kind in ("torch", "stoke"):
                cell = run_cell(kind, workers, args, step, model, output)
                cells.append(cell)
                log.write(json.dumps(cell) + "\n")
                log.flush()
                print(json.dumps(cell), flush=True)
        if args.auto:
            cell = run_cell("stoke", "auto", args, step, True)
            cells.append(cell)
            log.write(json.dumps(cell) + "\n")
            print(json.dumps(cell), flush=True)
    (args.out / "summary.md").write_text(summary(meta, copies, top, cells))
    print((args.out / "summary.md").read_text())


if __name__ == "__main__":
    main()
