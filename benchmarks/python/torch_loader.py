#!/usr/bin/env python3
"""One timed run of a PyTorch-side loader for Stoke's benchmark harness (./stoke harness).

The consumer loop is the same as Stoke's (io.stoke.bench.harness.StokeRunCommand): start the clock,
create the iterator (which starts the workers), then for each batch time the wait, sleep the
simulated model time, and drop the batch. Output per batch: uint8 [n, 224, 224, 3], the same
shape, type and layout as Stoke's.

Loaders (--loader):
  pytorch          torch.utils.data.DataLoader over torchvision's ImageFolder + PIL: Resize(256) +
                   CenterCrop(224) + PILToTensor, then a permute to HWC (a view; the collate's
                   stack makes it contiguous, as it copies anyway). The recipe's default backend.
  pytorch-tensor   the same DataLoader, each file decoded by torchvision.io.decode_image
                   (libjpeg-turbo) and transformed as a uint8 tensor by the v2 transforms
                   (antialiased, torch's SIMD resize): torchvision's fastest CPU path, the recipe's
                   `--backend tensor --use-v2`. The v1 transforms on tensors where torchvision has
                   no v2 (0.14, Debian 12's); --versions says which.
  torchdata-nodes  torchdata.nodes: the pytorch-tensor path mapped by a ParallelMapper of
                   --workers threads (the ops release the GIL), batched, collated and prefetched
                   in the calling process.
The training transform (--transform train) is RandomResizedCrop(224) + RandomHorizontalFlip() in
each path's API.

Datasets (--dataset):
  jpeg: the ImageFolder tree.
  raw:  headerless 224x224x3 uint8 files (<class>/<name>.raw), read with numpy.fromfile. The harness
        cuts them from the .npy members of the raw shards that Stoke's side reads through its Loader
        (stoke pack --format raw), so both sides get the same bytes per sample, in the same order.
        pytorch and torchdata-nodes only: with nothing to decode, pytorch-tensor is pytorch.

Cold run (--warmup-images 0): the timed epoch is the process's first. Warm run (--warmup-images N):
the same loader first delivers at least N images untimed, in whole epochs, and the timed epoch
starts from a new iter(): DataLoader's persistent workers are running and have imported everything.

Prints "@@harness begin" / "@@harness end" around the timed span and "@@harness first" when the
process receives its first batch (the harness times its start to that), and writes JSON. Installs
nothing: exits with code 3 and says what is missing when torch or torchvision (or, for its loader,
torchdata) cannot be imported.

--dump-first FILE writes the first batch's pixels (uint8 [n, 224, 224, 3], C order, no header) and
exits, nothing timed: the harness compares them with torchvision's PIL path. --peers prints, as
JSON, which other loaders this Python could run.
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


def decode_file(path):
    """torchvision.io's decode of a file, as RGB: pytorch-tensor's ImageFolder loader."""
    from torchvision.io import ImageReadMode, decode_image, read_file

    return decode_image(read_file(path), mode=ImageReadMode.RGB)


def tensor_transforms():
    """torchvision's transforms on uint8 tensors: v2 where it has them, else v1 ("v1" for 0.14)."""
    try:
        from torchvision.transforms import v2

        return v2, "v2"
    except ImportError:
        return transforms, "v1"


def jpeg_dataset(root, loader, transform):
    """ImageFolder of the loader's path: PIL images for pytorch, decoded uint8 tensors otherwise."""
    if loader == "pytorch":
        T, to_tensor = transforms, [transforms.PILToTensor()]
        kwargs = {}
    else:
        T, _ = tensor_transforms()
        to_tensor = []
        kwargs = {"loader": decode_file}
    if transform == "train":
        crop = [T.RandomResizedCrop(224, antialias=True), T.RandomHorizontalFlip()]
    else:
        crop = [T.Resize(256, antialias=True), T.CenterCrop(224)]
    return datasets.ImageFolder(root, transform=T.Compose(crop + to_tensor + [to_hwc]), **kwargs)


class NodesLoader:
    """torchdata.nodes over a map-style dataset, in order: a ParallelMapper of `workers` threads.

    Iterating it yields (images, labels) batches, as DataLoader does. iter() starts an epoch
    (torchdata.nodes' Loader resets the graph, which restarts the mapper's threads).
    """

    def __init__(self, dataset, batch_size, workers):
        import torchdata.nodes as tn
        from torch.utils.data import SequentialSampler, default_collate

        self.dataset = dataset
        sampled = tn.SamplerWrapper(SequentialSampler(dataset))
        self.mapper = tn.ParallelMapper(sampled, map_fn=dataset.__getitem__, num_workers=max(workers, 1),
                                        method="thread", in_order=True)
        batched = tn.Mapper(tn.Batcher(self.mapper, batch_size=batch_size, drop_last=False), map_fn=default_collate)
        self.prefetcher = tn.Prefetcher(batched, prefetch_factor=2)
        self.loader = tn.Loader(self.prefetcher)

    def __iter__(self):
        return iter(self.loader)

    def close(self) -> None:
        """Stops the mapper's and the prefetcher's threads.

        torchdata.nodes 0.11 stops them only when its iterators are collected; at interpreter exit
        that can be while one is inside a torch op, and the process aborts ("terminate called
        without an active exception", exit 134, in 2 of 6 warm runs). It has no public close, so
        this calls each iterator's own _shutdown, which its __del__ calls.
        """
        for node in (self.prefetcher, self.mapper):
            it = getattr(node, "_it", None)
            while it is not None:
                if hasattr(it, "_shutdown"):
                    it._shutdown()
                it = getattr(it, "_it", None)


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


LOADERS = ["pytorch", "pytorch-tensor", "torchdata-nodes"]


def close(loader) -> None:
    """Stops the loader's workers: DataLoader's when its last reference goes, torchdata.nodes' here."""
    if isinstance(loader, NodesLoader):
        loader.close()


def make_loader(ds, loader, batch_size, workers):
    """The loader named by --loader over ds, in order, the last partial batch kept."""
    if loader == "torchdata-nodes":
        return NodesLoader(ds, batch_size, workers)
    return DataLoader(ds, batch_size=batch_size, shuffle=False, num_workers=workers,
                      persistent_workers=workers > 0, pin_memory=False, drop_last=False)


def versions():
    """Python's and the libraries' versions; the tensor path's transforms API; torchdata where present."""
    v = {"python": sys.version.split()[0], "torch": torch.__version__, "torchvision": torchvision.__version__,
         "pillow": PIL.__version__, "numpy": np.__version__, "tensor transforms": tensor_transforms()[1]}
    try:
        import torchdata

        v["torchdata"] = torchdata.__version__
    except ImportError:
        pass
    return v


def peers():
    """{peer module: {"version": v} or {"missing": why}} for the loaders beside torch's DataLoader.

    torchdata.nodes is run by this script (--loader torchdata-nodes); spdl and nvidia.dali have no
    loader here yet, and are reported so (the harness says so in one line) even when importable.
    """
    import importlib

    out = {}
    for name in ["torchdata.nodes", "spdl", "nvidia.dali"]:
        try:
            module = importlib.import_module(name.split(".")[0])
            importlib.import_module(name)
            out[name] = {"version": str(getattr(module, "__version__", "unknown"))}
        except ImportError as e:
            out[name] = {"missing": f"cannot import {name} with {sys.executable} ({e})"}
    return out


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
    ap.add_argument("--loader", choices=LOADERS, default="pytorch")
    ap.add_argument("--json", required=True)
    ap.add_argument("--dump-first", metavar="FILE",
                    help="write the first batch's pixels (uint8 [n, 224, 224, 3], no header) to FILE and exit")
    ap.add_argument("--versions", action="store_true", help="print the library versions as JSON and exit")
    ap.add_argument("--peers", action="store_true",
                    help="print, as JSON, each peer loader's version or why it cannot run, and exit")
    a = ap.parse_args()
    if a.versions:
        print(json.dumps(versions()))
        return
    if a.peers:
        print(json.dumps(peers()))
        return
    if a.loader == "torchdata-nodes":
        try:
            import torchdata.nodes  # noqa: F401
        except ImportError as e:
            fail_missing(e)
    if a.dataset == "jpeg":
        ds = jpeg_dataset(a.root, a.loader, a.transform)
    elif a.loader == "pytorch-tensor":
        ap.error("--dataset raw has nothing to decode: pytorch-tensor would be pytorch")
    else:
        ds = RawTensors(a.root)
    if a.dump_first:
        # One whole epoch of the first batch's samples: every loader ends as it ends an epoch
        # (torchdata.nodes' threads would otherwise be mid-map at exit).
        first = torch.utils.data.Subset(ds, range(min(len(ds), a.batch_size)))
        loader = make_loader(first, a.loader, a.batch_size, a.workers)
        x, _ = next(iter(loader))
        x.contiguous().numpy().tofile(a.dump_first)
        close(loader)
        return
    loader = make_loader(ds, a.loader, a.batch_size, a.workers)
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
        json.dump({"loader": a.loader, "dataset": a.dataset, "batch_size": a.batch_size, "workers": a.workers,
                   "model_ms": a.model_ms, "warmup_images": a.warmup_images, "images": images, "batches": len(waits),
                   "elapsed_s": (end - start) / 1e9, "wait_ns": waits}, f)
        f.write("\n")
    del it
    close(loader)  # shuts the workers down before exit


if __name__ == "__main__":
    main()
