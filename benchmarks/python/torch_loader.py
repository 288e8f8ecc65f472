#!/usr/bin/env python3
"""One timed PyTorch DataLoader run for Stoke's benchmark harness (./stoke harness).

The consumer loop is the same as Stoke's (io.stoke.bench.harness.StokeRunCommand): start the clock,
create the iterator (which starts the worker processes), then for each batch time the wait, sleep
the simulated model time, and drop the batch. Output per batch: uint8 [n, 224, 224, 3], the same
shape, type and layout as Stoke's.

  jpeg: torchvision ImageFolder + PIL, Resize(256) + CenterCrop(224) + PILToTensor, then a
        permute to HWC (a view; the collate's stack makes it contiguous, as it copies anyway).
  raw:  headerless 224x224x3 uint8 files (<class>/<name>.raw), read with numpy.fromfile. The harness
        cuts them from the .npy members of the raw shards that Stoke's side reads through its Loader
        (stoke pack --format raw), so both sides get the same bytes per sample, in the same order.

Cold run (--warmup-images 0): the timed epoch is the process's first. Warm run (--warmup-images N):
the same DataLoader first delivers at least N images untimed, in whole epochs, and the timed epoch
starts from a new iter(): its persistent workers are running and have imported everything.

Prints "@@harness begin" / "@@harness end" around the timed span and "@@harness first" when the
process receives its first batch (the harness times its start to that), and writes JSON. Installs
nothing: exits with code 3 and says what is missing when torch or torchvision cannot be imported.
"""
import argparse
import json
import os
import sys
import time


def fail_missing(exc):
    name = getattr(exc, "name", None) or str(exc)
    print(f"torch_loader.py: cannot import {name} with {sys.executable} ({exc}).\n"
          "  On Debian/Ubuntu: apt-get install python3-torch python3-torchvision python3-pil python3-numpy\n"
          "  or with pip:      python3 -m pip install torch torchvision pillow numpy\n"
          "  then pass that interpreter to the harness with --python PATH.", file=sys.stderr)
    sys.exit(3)


try:
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset
    import torchvision
    from torchvision import datasets, transforms
    import PIL
except ImportError as e:  # the harness reports this and goes on without PyTorch
    fail_missing(e)


class RawTensors(Dataset):
    """<root>/<class>/<name>.raw in ImageFolder order, each 224*224*3 uint8 bytes (HWC)."""

    def __init__(self, root):
        classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.samples = []
        for label, c in enumerate(classes):
            for f in sorted(os.listdir(os.path.join(root, c))):
                if f.endswith(".raw"):
                    self.samples.append((os.path.join(root, c, f), label))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        return torch.from_numpy(np.fromfile(path, dtype=np.uint8).reshape(224, 224, 3)), label


def to_hwc(t):
    return t.permute(1, 2, 0)


_said_first = False


def first_batch():
    """Says, once, that the process has its first batch."""
    global _said_first
    if not _said_first:
        _said_first = True
        print("@@harness first", flush=True)


def warm_up(loader, n):
    """Takes at least n images untimed from the loader, in whole epochs.

    Whole epochs: stopping mid-epoch would leave batches in flight in the persistent workers, and
    the timed iter() would first wait for them and throw them away.
    """
    seen = 0
    while seen < n and len(loader.dataset) > 0:
        for x, y in loader:
            first_batch()
            seen += x.shape[0]
            int(x[0, 0, 0, 0])
            del x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--dataset", choices=["jpeg", "raw"], required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--model-ms", type=float, default=0.0)
    ap.add_argument("--warmup-images", type=int, default=0,
                    help="images to take untimed first, in whole epochs of the same DataLoader (0: a cold run)")
    ap.add_argument("--transform", choices=["eval", "train"], default="eval",
                    help="eval: Resize(256) + CenterCrop(224); train: RandomResizedCrop(224) + RandomHorizontalFlip()")
    ap.add_argument("--json", required=True)
    ap.add_argument("--versions", action="store_true", help="print the library versions as JSON and exit")
    a = ap.parse_args()
    if a.versions:
        print(json.dumps({"python": sys.version.split()[0], "torch": torch.__version__,
                          "torchvision": torchvision.__version__, "pillow": PIL.__version__,
                          "numpy": np.__version__}))
        return
    if a.dataset == "jpeg":
        if a.transform == "train":
            crop = [transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip()]
        else:
            crop = [transforms.Resize(256), transforms.CenterCrop(224)]
        tf = transforms.Compose(crop + [transforms.PILToTensor(), to_hwc])
        ds = datasets.ImageFolder(a.root, transform=tf)
    else:
        ds = RawTensors(a.root)
    loader = DataLoader(ds, batch_size=a.batch_size, shuffle=False, num_workers=a.workers,
                        persistent_workers=a.workers > 0, pin_memory=False, drop_last=False)
    warm_up(loader, a.warmup_images)
    waits = []
    images = 0
    sleep_s = a.model_ms / 1000.0
    print("@@harness begin", flush=True)
    start = time.perf_counter_ns()
    it = iter(loader)  # starts the worker processes: part of the time to first batch, as in training
    w0 = start
    while True:
        try:
            x, y = next(it)
        except StopIteration:
            break
        waits.append(time.perf_counter_ns() - w0)
        first_batch()
        images += x.shape[0]
        int(x[0, 0, 0, 0])  # the consumer touches the batch
        if sleep_s > 0:
            deadline = time.perf_counter() + sleep_s
            while (left := deadline - time.perf_counter()) > 0:
                time.sleep(left)
        del x, y
        w0 = time.perf_counter_ns()
    end = time.perf_counter_ns()
    print("@@harness end", flush=True)
    with open(a.json, "w") as f:
        json.dump({"loader": "pytorch", "dataset": a.dataset, "batch_size": a.batch_size, "workers": a.workers,
                   "model_ms": a.model_ms, "warmup_images": a.warmup_images, "images": images, "batches": len(waits),
                   "elapsed_s": (end - start) / 1e9, "wait_ns": waits}, f)
        f.write("\n")
    del it, loader  # shuts the persistent workers down before exit


if __name__ == "__main__":
    main()
