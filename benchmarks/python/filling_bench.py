#!/usr/bin/env python3
"""The restart cache as a user starts it: ``stoke.DataLoader(..., restart_cache_dir=EMPTY)`` and
train, epoch by epoch, beside the same loader with no cache (issue 49: the cache pays from the first
epoch).

Each case is a fresh process running --epochs epochs of the training transform
(RandomResizedCrop(224) + RandomHorizontalFlip, uint8) over an ImageFolder of original JPEGs, with
--workers workers and --batch-size; per epoch it records images/s and, for the cache, the entries
on disk after it (files ``*.stc`` under the folder):

  none       no cache
  filling    restart_cache_dir= an empty folder at the start
  full       restart_cache_dir= a folder `stoke cache` filled beforehand (timed --repeats times,
             each beside a plain decode epoch of `stoke bench` on the same files)
  torch-pil     the same dataset and call with torch.utils.data.DataLoader: PIL decodes
  torch-tensor  torch's fastest CPU path: ImageFolder whose loader is torchvision.io.decode_jpeg
                (libjpeg-turbo), v2's RandomResizedCrop(224, antialias) + RandomHorizontalFlip on
                uint8 tensors (its SIMD resize), torch.utils.data.DataLoader

--step-ms S adds a model step of S milliseconds a batch (a sleep: the loader's CPU is left to it,
as a GPU's step leaves it), for the model-bound case; 0 (the default) is loader-bound.

Each batch's bytes are hashed in every case, and the Stoke cases' hashes are compared batch by batch
(same seed): a filling or full cache must give every batch byte-identical to no cache. (torch's
cases draw their crops from torch's generator, so their batches are other crops.) The hash runs in
the consumer, inside the timed loop, on the cores the loaders share: --hash xxh3 (XXH3-64, from the
xxhash package, the default where it is installed) takes about 5 us an image of 224x224x3, CRC-32
(zlib, the fallback, said so) about 36 us, which at 3,000-5,000 images/s took 5-9% of 2 cores from
the loaders and narrowed every ratio between them. --hash none reads nothing of the batches: the
loaders' own rates, as a consumer that hands each batch on unread would see them (a training step
reads every byte, if only to copy it to the device), and no check of the pixels, said so.

  clients/python/stacks/torch214.sh run -- python benchmarks/python/filling_bench.py \\
      --data ~/.cache/stoke/imagenet-sample-1000-v1 --copies 2 --out docs/benchmarks/results-filling
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from recipes_bench import copies  # noqa: E402


def entries(folder):
    return sum(1 for _ in Path(folder).rglob("*.stc")) if folder else 0


CASES = ["none", "filling", "full", "torch-pil", "torch-tensor"]


def run(case, data, cache, epochs, workers, batch_size, step_ms, seed, hash_name):
    """One case in this process: per epoch images/s, entries after it, and each batch's hash."""
    digest = hasher(hash_name)
    import torch
    import torchvision
    from torchvision import transforms as T

    sys.path.insert(0, str(CHECKOUT / "clients" / "python"))
    import stoke

    torch.manual_seed(seed)
    if case == "torch-tensor":
        from torchvision.transforms import v2
        dataset = torchvision.datasets.ImageFolder(
            data, v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip()]),
            loader=decode_jpeg_file)
    else:
        dataset = torchvision.datasets.ImageFolder(
            data, T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.PILToTensor()]))
    extra = {"restart_cache_dir": cache} if cache else {}
    start = time.perf_counter()
    make = torch.utils.data.DataLoader if case.startswith("torch") else stoke.DataLoader
    loader = make(dataset, batch_size=batch_size, num_workers=workers, shuffle=True,
                  persistent_workers=True, generator=torch.Generator().manual_seed(seed), **extra)
    out = []
    for e in range(epochs):
        if e:
            start = time.perf_counter()
        n, hashes = 0, []
        for images, labels in loader:
            # The batch's hash where it lies: enough to tell two batches apart, at the least CPU the
            # consumer's core could otherwise give the workers (2 cores).
            if digest is not None:
                hashes.append(batch_hash(images.numpy(), digest))
            n += len(labels)
            if step_ms:
                time.sleep(step_ms / 1000)
        seconds = time.perf_counter() - start
        out.append({"epoch": e, "images": n, "seconds": seconds, "images_per_s": n / seconds,
                    "entries": entries(cache), "hashes": hashes})
    if cache and hasattr(loader, "restart_cache_stats"):
        # Whose copies they were, per epoch, from the producer's log (written as each epoch's last
        # batch is published; the last line may lag the loop's end by a moment).
        deadline = time.monotonic() + 5
        while len(loader.restart_cache_stats()) < epochs and time.monotonic() < deadline:
            time.sleep(0.05)
        for e, said in zip(out, loader.restart_cache_stats()):
            e["copied"], e["copied_by_workers"] = said["copied"], said.get("copied_by_workers")
    if hasattr(loader, "close"):
        loader.close()
    return out


HASHES = ["xxh3", "crc32", "none"]


def default_hash():
    """XXH3-64 where the xxhash package is installed, else CRC-32, said once."""
    try:
        import xxhash  # noqa: F401
        return "xxh3"
    except ImportError:
        print("filling_bench: the xxhash package is not installed; each batch is hashed with zlib's CRC-32, "
              "about 7x the CPU, which the loaders' cores give up", file=sys.stderr)
        return "crc32"


def hasher(name):
    """The function of a buffer's bytes to its hash, as hex; None for none."""
    if name == "none":
        return None
    if name == "xxh3":
        import xxhash
        return xxhash.xxh3_64_hexdigest
    return lambda data: f"{zlib.crc32(data):08x}"


def batch_hash(batch, digest):
    """The hash of a batch's bytes where they lie, without a copy: Stoke's NCHW batch is a view of its
    ring's NHWC slot, read in that order (the same for every Stoke case); another layout is copied."""
    for view in (batch, batch.transpose(0, 2, 3, 1)):
        if view.flags.c_contiguous:
            return digest(memoryview(view).cast("B"))
    return digest(batch.tobytes())


def decode_jpeg_file(path):
    """torchvision.io's decode of a file, as RGB: the loader of the torch-tensor case."""
    from torchvision.io import ImageReadMode, decode_jpeg, read_file

    return decode_jpeg(read_file(path), mode=ImageReadMode.RGB)


def file_system(path):
    """The file system the cache folders are made on, in words: its type and device from
    /proc/mounts (the longest mount point above `path`), and for ext4 whether it has a journal
    (/proc/fs/jbd2): without one, ext4 steps over recently freed inodes at each new file."""
    best = ("", "?", "?")
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                device, point, kind = line.split()[:3]
                point = point.replace("\\040", " ")
                if (str(path) + "/").startswith(point.rstrip("/") + "/") and len(point) > len(best[0]):
                    best = (point, device, kind)
    except OSError:
        return "unknown"
    point, device, kind = best
    words = f"{kind} on {device} at {point}"
    if kind == "ext4":
        name = Path(device).name
        journaled = any(p.name.startswith(name + "-") for p in Path("/proc/fs/jbd2").glob("*"))
        words += ", journaled" if journaled else ", no journal"
    return words


def stoke_cache_rate(data, work, rounds):
    """`stoke cache` into an empty folder, and a plain `stoke bench` decode epoch on the same files,
    each a fresh process, alternating for `rounds` rounds: each one's own rate (its JVM's start left
    out of both) and the cache's whole process time, medians. The folder of the first round, full."""
    runs = []
    for r in range(rounds):
        folder = work / f"cache-full-{r}"
        t = time.perf_counter()
        done = subprocess.run([str(CHECKOUT / "stoke"), "cache", str(data), "--restart-cache-dir", str(folder)],
                              capture_output=True, text=True, check=True)
        process_s = time.perf_counter() - t
        said = done.stdout.strip().splitlines()[-1]
        rate = re.search(r"\(([0-9]+) files/s\)", said)
        if rate is None:
            sys.exit(f"stoke cache said no rate: {said}")
        js = work / f"bench-{r}.json"
        # --dct-scaling none: the decode a user's epoch makes (stoke.DataLoader translates torchvision's
        # transforms exactly), not `stoke bench`'s default of decoding large images at a smaller scale.
        subprocess.run([str(CHECKOUT / "stoke"), "bench", str(data), "--transform", "train", "--workers", "2",
                        "--batch-size", "100", "--dct-scaling", "none", "--json", str(js)],
                       capture_output=True, text=True, check=True)
        runs.append({"process_s": process_s, "files_per_s": float(rate.group(1)), "entries": entries(folder),
                     "says": said, "decode_epoch": json.loads(js.read_text())["images_per_s"]})
    return work / "cache-full-0", {
        "rounds": rounds, "entries": runs[0]["entries"], "stoke_cache_says": runs[0]["says"],
        "stoke_cache_process_s": statistics.median(x["process_s"] for x in runs),
        "stoke_cache_files_per_s": statistics.median(x["files_per_s"] for x in runs),
        "decode_epoch_images_per_s": statistics.median(x["decode_epoch"] for x in runs),
        "ratio": statistics.median(x["files_per_s"] / x["decode_epoch"] for x in runs)}


def epoch_words(e):
    """An epoch in a round's line: images/s, then the entries after it and, where the producer's log
    said, the workers' share of its copies."""
    mine = e.get("copied_by_workers")
    copies = "" if mine is None else f", {mine} of {e['copied']} copies the workers'"
    return f"{e['images_per_s']:.0f}({e['entries']}{copies})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", choices=CASES)
    ap.add_argument("--cache")
    ap.add_argument("--data", required=True)
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--step-ms", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cases", nargs="+", choices=CASES, default=["none", "filling", "full"])
    ap.add_argument("--hash", choices=HASHES, help="each batch's hash: xxh3 where the xxhash package is "
                    "installed (the default then), else crc32; none reads no batch and checks no pixels")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.hash is None:
        args.hash = default_hash()
    if args.run:
        print(json.dumps(run(args.run, args.data, args.cache, args.epochs, args.workers, args.batch_size,
                             args.step_ms, args.seed, args.hash)))
        return
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "filling-bench"
    # Each cache folder the run fills is a new one, and all of them go only at its end, after every
    # timing: on a file system without a journal, ext4 skips over the inodes freed in the last minute
    # or so at each new file, one lookup each (find_inode_bit, recently_deleted), so deleting a
    # filled cache just before a case made its entries cost far more CPU (2 cores, 92 ms step: 497
    # entries after the first epoch right after a delete at the same path, 786-950 in a new folder;
    # `stoke cache` 1,425 files/s after one, 2,062-2,142 into a journaled ext4). A user's empty cache
    # is a new folder, not one emptied a moment ago. A run cut short leaves its folder: the next
    # run removes it at its own end.
    base = work
    stale = list(base.iterdir()) if base.is_dir() else []
    work = base / f"run-{os.getpid()}"
    work.mkdir(parents=True)
    data = copies(args.data, args.copies, Path(os.environ.get("TMPDIR", "/tmp")))
    images = sum(1 for p in Path(data).rglob("*") if not p.is_dir())
    full, cost = stoke_cache_rate(data, work, args.repeats) if "full" in args.cases else (None, {})
    runs = []
    args.out.mkdir(parents=True, exist_ok=True)
    for r in range(args.repeats):
        for case in args.cases:
            cache = None
            if case == "filling":
                cache = work / f"cache-filling-{r}"
                cache.mkdir()
            elif case == "full":
                cache = full
            done = subprocess.run([sys.executable, __file__, "--run", case, "--data", str(data), "--epochs",
                                   str(args.epochs), "--workers", str(args.workers), "--batch-size",
                                   str(args.batch_size), "--step-ms", str(args.step_ms), "--seed", str(args.seed),
                                   "--hash", args.hash]
                                  + (["--cache", str(cache)] if cache else []),
                                  env=dict(os.environ, STOKE_HOME=str(CHECKOUT)), capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"{case} failed:\n{done.stderr[-3000:]}")
            epochs = json.loads(done.stdout.strip().splitlines()[-1])
            runs.append({"case": case, "round": r, "epochs": epochs})
            print(f"round {r} {case}: " + " ".join(epoch_words(e) for e in epochs), file=sys.stderr)
    for folder in [work] + stale:
        shutil.rmtree(folder, ignore_errors=True)
    with open(args.out / "runs.jsonl", "w") as log:
        for x in runs:
            log.write(json.dumps(x) + "\n")
    # Byte-identical batches: every case's hashes against no cache's, epoch by epoch, same seed.
    reference = next((x["epochs"] for x in runs if x["case"] == "none"), None)
    identical = all(e["hashes"] == ref["hashes"] for x in runs if not x["case"].startswith("torch")
                    for e, ref in zip(x["epochs"], reference or []))
    torch_cases = [c for c in args.cases if c.startswith("torch")]
    lines = [f"# The restart cache as a user starts it: epoch by epoch\n",
             f"`{' '.join(sys.argv)}`\n",
             f"{platform.node()}: {os.cpu_count()} cores; {images} images, {args.workers} workers, batch "
             f"{args.batch_size}, model step {args.step_ms:g} ms a batch, {args.repeats} round(s) (medians); "
             f"cache folders on {file_system(work)}; "
             + ("no batch read (--hash none).\n" if args.hash == "none"
                else f"each batch hashed with {args.hash} in the timed loop.\n"),
             "| epoch | " + " | ".join(f"{c} images/s" for c in args.cases) + " | filling / none | entries after "
             "(filling) | full / none | full / torch's best |", "|---" * (len(args.cases) + 5) + "|"]
    for e in range(args.epochs):
        rate = {c: statistics.median(x["epochs"][e]["images_per_s"] for x in runs if x["case"] == c)
                for c in args.cases}
        filled = statistics.median(x["epochs"][e]["entries"] for x in runs if x["case"] == "filling") \
            if "filling" in args.cases else 0
        ratio = f"{rate['filling'] / rate['none']:.2f}x" if "filling" in rate and "none" in rate else "-"
        full_none = f"{rate['full'] / rate['none']:.2f}x" if "full" in rate and "none" in rate else "-"
        best = max((rate[c] for c in torch_cases), default=0)
        full_torch = f"{rate['full'] / best:.2f}x" if "full" in rate and best else "-"
        lines.append(f"| {e + 1} | " + " | ".join(f"{rate[c]:.0f}" for c in args.cases) + f" | {ratio} | "
                     f"{filled:.0f} | {full_none} | {full_torch} |")
    lines.append("")
    if args.hash == "none":
        lines.append("The batches were not read (--hash none): their pixels were not checked.")
    else:
        lines.append(f"Every batch byte-identical to no cache's (same seed): {'yes' if identical else 'NO'}.")
    if cost:
        lines.append(f"\n`stoke cache` into an empty folder against a plain decode epoch of `stoke bench` on the same "
                     f"files, each a fresh process, alternating, {cost['rounds']} round(s), medians: "
                     f"{cost['stoke_cache_files_per_s']:.0f} files/s against {cost['decode_epoch_images_per_s']:.0f} "
                     f"images/s (**{cost['ratio']:.2f}x**; both rates leave the JVM's start out; the whole "
                     f"`stoke cache` process took {cost['stoke_cache_process_s']:.1f} s for {cost['entries']} "
                     f"entries).")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
