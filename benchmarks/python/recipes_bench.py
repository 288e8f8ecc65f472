#!/usr/bin/env python3
"""torchvision's recipe transforms, fed by torch's DataLoader and by stoke.DataLoader, side by side
(issue 47: the recipes users run).

The two transforms are the ones torchvision's references/classification/presets.py builds for the
ResNet50 v2 recipe (`--train-crop-size 176 --val-resize-size 232 --auto-augment ta_wide
--random-erase 0.1`), with its v2 classes:

  train  RandomResizedCrop(176) + RandomHorizontalFlip + TrivialAugmentWide + PILToTensor +
         ToDtype(float32, scale) + Normalize + RandomErasing(0.1)
  eval   Resize(232, bicubic) + CenterCrop(224) + PILToTensor + ToDtype(float32, scale) + Normalize

and, with --transforms vit-train, the README's ViT, Swin and MaxViT training flags (`--interpolation
bicubic --auto-augment ta_wide --random-erase 0.25`, crop 224):

  vit-train  RandomResizedCrop(224, bicubic) + RandomHorizontalFlip + TrivialAugmentWide(bicubic) +
             PILToTensor + ToDtype(float32, scale) + Normalize + RandomErasing(0.25)

and, with --transforms ra-train, aa-train or augmix-train, the README's other policies, each with
presets.py's defaults (bilinear, crop 224): RegNet's `--auto-augment ra` (RandAugment, magnitude 9),
MobileNetV3's `--auto-augment imagenet --random-erase 0.2` (AutoAugment's ImageNet policy,
RandomErasing(0.2)), and `--auto-augment augmix` (AugMix, severity 3):

  ra-train      RandomResizedCrop(224) + RandomHorizontalFlip + RandAugment + PILToTensor + ToDtype + Normalize
  aa-train      ... + AutoAugment(IMAGENET) + ... + Normalize + RandomErasing(0.2)
  augmix-train  ... + AugMix + ... + Normalize

and, with --transforms timm-train, timm's default training transform, `create_transform(224,
is_training=True, interpolation="bicubic")` (its RandomResizedCropAndInterpolation, the flip,
torchvision's ColorJitter(0.4, 0.4, 0.4), ToTensor, Normalize); torch-tensor runs v2's equivalent on
uint8 tensors (RandomResizedCrop(224, bicubic), flip, ColorJitter(0.4, 0.4, 0.4), ToDtype, Normalize):

  timm-train  RandomResizedCrop(224, bicubic) + RandomHorizontalFlip + ColorJitter(0.4, 0.4, 0.4) +
              ToTensor + Normalize

and, with --transforms simclr-train, SimCLR's colour steps (v2's classes, the hue on):

  simclr-train  RandomResizedCrop(224) + RandomHorizontalFlip + RandomApply([ColorJitter(0.4, 0.4,
                0.4, 0.1)], p=0.8) + RandomGrayscale(0.2) + ToTensor (PILToTensor + ToDtype) + Normalize

Each case runs in a fresh process over the same ImageFolder, with the same workers, batch size and
shuffle, persistent workers; a run is two epochs: the first (cold) counts from creating the loader,
the JVM's or the worker processes' start included (each case's loader module is imported before,
as torch's is); the second (warm) from a new iter().

  torch-pil     torchvision ImageFolder (PIL decode), torch.utils.data.DataLoader: the recipe's
                default `--backend pil`
  torch-tensor  ImageFolder whose loader is torchvision.io.decode_jpeg (libjpeg-turbo), the v2
                transforms on uint8 tensors (SIMD resize): torch's fastest CPU path (the recipe's
                `--backend tensor` runs the same transforms on tensors, but decodes with PIL)
  stoke         the torch-pil dataset and DataLoader call, renamed: stoke.DataLoader(dataset, ...);
                `import stoke` placed before `import torch`, as isort orders a script's imports, so
                the producer it starts (stoke/_prestart.py) starts while torch is imported
  stoke-noprestart  the same with STOKE_PRESTART=0: the producer starts at stoke.DataLoader()

Each run also records the script's own time to the cold epoch's end, its imports included.

The cases alternate within each of --repeats rounds. Writes OUT/runs.jsonl and OUT/summary.md.

  python benchmarks/python/recipes_bench.py --data ~/.cache/stoke/imagenet-sample-1000-v1 \
      --copies 3 --out docs/benchmarks/results-recipes
"""
import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

SCRIPT_START = time.perf_counter()
HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def recipe(which, backend):
    """The references' v2 preset for `which` (train or eval) and `backend` (pil or tensor)."""
    import torch
    from torchvision.transforms import v2

    head = [v2.PILToTensor()] if backend == "pil" else []
    if which == "timm-train":
        if backend == "pil":
            from timm.data import create_transform

            return create_transform(224, is_training=True, interpolation="bicubic")
        return v2.Compose([v2.RandomResizedCrop(224, interpolation=v2.InterpolationMode.BICUBIC, antialias=True),
                           v2.RandomHorizontalFlip(0.5), v2.ColorJitter(0.4, 0.4, 0.4),
                           v2.ToDtype(torch.float, scale=True), v2.Normalize(MEAN, STD), v2.ToPureTensor()])
    if which == "simclr-train":
        steps = [v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(0.5),
                 v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), v2.RandomGrayscale(0.2)]
        return v2.Compose(steps + head + [v2.ToDtype(torch.float, scale=True), v2.Normalize(MEAN, STD),
                                          v2.ToPureTensor()])
    if which in POLICY_RECIPES:
        interpolation, crop, policy, erase = POLICY_RECIPES[which]
        mode = getattr(v2.InterpolationMode, interpolation.upper())
        # presets.py's ClassificationPresetTrain: its auto-augment policies, with their defaults
        # (--ra-magnitude 9, --augmix-severity 3).
        augment = {"ta_wide": lambda: v2.TrivialAugmentWide(interpolation=mode),
                   "ra": lambda: v2.RandAugment(interpolation=mode, magnitude=9),
                   "imagenet": lambda: v2.AutoAugment(v2.AutoAugmentPolicy.IMAGENET, interpolation=mode),
                   "augmix": lambda: v2.AugMix(interpolation=mode, severity=3)}[policy]()
        steps = [v2.RandomResizedCrop(crop, interpolation=mode, antialias=True),
                 v2.RandomHorizontalFlip(0.5), augment]
        # presets.py: PILToTensor after the augmentations on the PIL backend, first on the tensor one.
        steps = steps + head if backend == "pil" else steps
        tail = [v2.ToDtype(torch.float, scale=True), v2.Normalize(MEAN, STD)]
        tail += [v2.RandomErasing(erase)] if erase > 0 else []
        tail += [v2.ToPureTensor()]
    else:
        steps = [v2.Resize(232, interpolation=v2.InterpolationMode.BICUBIC, antialias=True), v2.CenterCrop(224)]
        steps = steps + head
        tail = [v2.ToDtype(torch.float, scale=True), v2.Normalize(MEAN, STD), v2.ToPureTensor()]
    return v2.Compose(steps + tail)


#: The training presets of torchvision's README commands, by the flags that differ: interpolation,
#: --train-crop-size, --auto-augment and --random-erase.
POLICY_RECIPES = {
    "train": ("bilinear", 176, "ta_wide", 0.1),         # ResNet50 v2, ResNeXt, RegNet (new recipe)
    "vit-train": ("bicubic", 224, "ta_wide", 0.25),     # ViT, Swin, MaxViT
    "ra-train": ("bilinear", 224, "ra", 0.0),           # RegNet: --auto-augment ra
    "aa-train": ("bilinear", 224, "imagenet", 0.2),     # MobileNetV3: --auto-augment imagenet --random-erase 0.2
    "augmix-train": ("bilinear", 224, "augmix", 0.0),   # --auto-augment augmix
}

#: Pairs that torchvision itself refuses: its tensor affine ops have no bicubic ("Interpolation mode
#: 'bicubic' is unsupported with Tensor input"), so the recipe's --backend tensor cannot run ViT's flags.
UNRUNNABLE = {("torch-tensor", "vit-train"): "torchvision's affine ops on tensors have no bicubic"}


#: The cases a run may be: stoke-noprestart is stoke with STOKE_PRESTART=0 (no producer started at import).
CASES = ["torch-pil", "torch-tensor", "stoke", "stoke-noprestart"]


def decode_jpeg_file(path):
    from torchvision.io import ImageReadMode, decode_jpeg, read_file

    return decode_jpeg(read_file(path), mode=ImageReadMode.RGB)


def run(case, data, which, workers, batch_size):
    """One run in this process: two epochs; prints one JSON object."""
    # Each case's loader is imported before the clock starts, as a training script imports it at its
    # top: torch's with torch; Stoke's before torch, where isort puts `import stoke` in a script's
    # block of imports. `import stoke` starts the producer (stoke/_prestart.py), which then starts
    # while torch is imported; the case stoke-noprestart runs with STOKE_PRESTART=0.
    if case.startswith("stoke"):
        sys.path.insert(0, str(CHECKOUT / "clients" / "python"))
        import stoke
    import torch
    import torchvision

    loader_class = stoke.DataLoader if case.startswith("stoke") else torch.utils.data.DataLoader
    start = time.perf_counter()
    if case == "torch-tensor":
        dataset = torchvision.datasets.ImageFolder(data, recipe(which, "tensor"), loader=decode_jpeg_file)
    else:
        dataset = torchvision.datasets.ImageFolder(data, recipe(which, "pil"))
    loader = loader_class(dataset, batch_size=batch_size, num_workers=workers, shuffle=True,
                          persistent_workers=True, drop_last=False)
    result = two_epochs(loader, start)
    # The whole script to the cold epoch's end, its imports included (the interpreter's own start left
    # out): what a prestarted producer's CPU during the imports costs shows here, not in the epoch.
    result["script_to_cold_end_s"] = start - SCRIPT_START + result["cold"]["seconds"]
    print(json.dumps(result))


def two_epochs(loader, start):
    """The cold epoch, timed from ``start`` (taken before the dataset and the loader were made), and
    the warm one, from a new ``iter()``: images, seconds and the first batch's wait of each, and the
    batches' image shape and dtype."""
    epochs = []
    for e in range(2):
        if e:
            start = time.perf_counter()
        n, first = 0, None
        for images, labels in loader:
            if first is None:
                first = time.perf_counter() - start
                shape, dtype = list(images.shape[1:]), str(images.dtype)
            n += len(labels)
        epochs.append({"images": n, "seconds": time.perf_counter() - start, "first_batch_s": first})
    return {"cold": epochs[0], "warm": epochs[1], "shape": shape, "dtype": dtype}


def ratio(rate, peer, case="stoke"):
    """``case``'s rate over ``peer``'s, or a dash where one of the two cases was not run."""
    nan = float("nan")
    x = rate.get(case, nan) / rate.get(peer, nan)
    return "-" if x != x else f"{x:.2f}x"


def summarise(runs, out, args):
    lines = [f"# torchvision's recipe transforms: torch's DataLoader and stoke.DataLoader\n",
             f"`{' '.join(sys.argv)}`\n",
             f"{platform.node()}: {os.cpu_count()} cores; torch {args.torch_version}, torchvision "
             f"{args.vision_version}, Pillow {args.pil_version}; {args.images} images, {args.workers} workers, "
             f"batch {args.batch_size}, {args.repeats} rounds (medians; each run a fresh process).\n",
             "| transform | epoch | torch-pil img/s | torch-tensor img/s | stoke img/s | stoke / torch-pil | "
             "stoke / torch-tensor | stoke, STOKE_PRESTART=0, img/s | that / torch-pil |",
             "|---|---|---|---|---|---|---|---|---|"]
    for which in args.transforms:
        for epoch in ("cold", "warm"):
            rate = {}
            for case in args.cases:
                xs = [r[epoch]["images"] / r[epoch]["seconds"] for r in runs
                      if r["case"] == case and r["transform"] == which]
                rate[case] = statistics.median(xs) if xs else float("nan")
            cells = [rate.get(case, float("nan")) for case in ("torch-pil", "torch-tensor", "stoke")]
            off = rate.get("stoke-noprestart", float("nan"))
            lines.append(f"| {which} | {epoch} | " + " | ".join("-" if x != x else f"{x:.0f}" for x in cells)
                         + f" | {ratio(rate, 'torch-pil')} | {ratio(rate, 'torch-tensor')} | "
                         + ("-" if off != off else f"{off:.0f}") + f" | {ratio(rate, 'torch-pil', 'stoke-noprestart')} |")
        script = {}
        for case in args.cases:
            xs = [r["script_to_cold_end_s"] for r in runs if r["case"] == case and r["transform"] == which
                  and "script_to_cold_end_s" in r]
            if xs:
                script[case] = statistics.median(xs)
        if script:
            lines.append(f"| {which} | script to the cold epoch's end, s | "
                         + " | ".join(f"{script[c]:.2f}" if c in script else "-"
                                      for c in ("torch-pil", "torch-tensor", "stoke")) + " | | | "
                         + (f"{script['stoke-noprestart']:.2f}" if "stoke-noprestart" in script else "-") + " | |")
    for (case, which), why in UNRUNNABLE.items():
        if case in args.cases and which in args.transforms:
            lines.append(f"\n{case} does not run {which}: {why}.")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def copies(data, n, work):
    """The folder's images n times over (symbolic links, class by class), so an epoch is long
    enough that a process's start is a part of it, not all of it. The folder is named by n and by
    the data's own path, and made under a temporary name first: another dataset, or a run cut
    short while linking, is never taken for this one."""
    if n == 1:
        return data
    source = Path(data).resolve()
    tag = hashlib.sha256(str(source).encode()).hexdigest()[:12]
    folder = work / f"recipes-bench-{n}x-{tag}"
    if not folder.exists():
        partial = work / f".{folder.name}.{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        for cls in sorted(p for p in source.iterdir() if p.is_dir()):
            (partial / cls.name).mkdir(parents=True)
            for f in sorted(cls.iterdir()):
                for c in range(n):
                    (partial / cls.name / f"{c}-{f.name}").symlink_to(f.resolve())
        try:
            partial.rename(folder)
        except OSError:  # made meanwhile by another run: use that one
            shutil.rmtree(partial, ignore_errors=True)
    return folder


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", choices=CASES, help="one run in this process")
    ap.add_argument("--data", required=True)
    ap.add_argument("--copies", type=int, default=1, help="link each image this many times (a longer epoch)")
    transforms = ["train", "eval", "vit-train", "ra-train", "aa-train", "augmix-train", "timm-train", "simclr-train"]
    ap.add_argument("--transform", default="train", choices=transforms)
    ap.add_argument("--transforms", nargs="+", default=["train", "eval"], choices=transforms)
    ap.add_argument("--cases", nargs="+", default=["torch-pil", "torch-tensor", "stoke"], choices=CASES)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.run:
        run(args.run, args.data, args.transform, args.workers, args.batch_size)
        return
    import PIL
    import torch
    import torchvision

    args.torch_version, args.vision_version, args.pil_version = torch.__version__, torchvision.__version__, PIL.__version__
    data = copies(args.data, args.copies, Path(os.environ.get("TMPDIR", "/tmp")))
    args.images = sum(1 for _ in Path(data).rglob("*") if not _.is_dir())
    env = dict(os.environ, STOKE_HOME=str(CHECKOUT))
    args.out.mkdir(parents=True, exist_ok=True)
    if any(c.startswith("stoke") for c in args.cases):
        # A checkout builds itself, and records the JVM's AOT cache, at its first run after a change:
        # seconds that are no start a user sees twice, so they are spent here, before any run is timed.
        subprocess.run([str(CHECKOUT / "stoke"), "--version"], env=env, check=True, capture_output=True)
    runs = []
    with open(args.out / "runs.jsonl", "w") as log:
        for r in range(args.repeats):
            for which in args.transforms:
                for case in args.cases:
                    if (case, which) in UNRUNNABLE:
                        continue
                    case_env = dict(env, STOKE_PRESTART="0") if case == "stoke-noprestart" else env
                    done = subprocess.run([sys.executable, __file__, "--run", case, "--data", str(data), "--transform",
                                           which, "--workers", str(args.workers), "--batch-size", str(args.batch_size)],
                                          env=case_env, capture_output=True, text=True, check=True)
                    result = dict(json.loads(done.stdout.strip().splitlines()[-1]), case=case, transform=which, round=r)
                    runs.append(result)
                    log.write(json.dumps(result) + "\n")
                    log.flush()
                    print(f"round {r} {which} {case}: cold {result['cold']['images'] / result['cold']['seconds']:.0f}"
                          f" warm {result['warm']['images'] / result['warm']['seconds']:.0f} images/s", file=sys.stderr)
    summarise(runs, args.out, args)


if __name__ == "__main__":
    main()
