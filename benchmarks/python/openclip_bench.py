#!/usr/bin/env python3
"""open_clip's preprocess, fed by torch's DataLoader and by stoke.DataLoader, side by side, with no
model (issue 48: the libraries around PyTorch).

The transform is the one `open_clip.create_model_and_transforms(MODEL, pretrained=None)` returns
as its preprocess (for ViT-B-32: Resize(224, bicubic) + CenterCrop(224) + MaybeConvertMode +
MaybeToTensor + Normalize with CLIP's mean and std), the transform of an embedding job. The model
is made (random weights) before the clock starts and dropped: the loop only counts the batches, so
what is measured is the loader.

Each case runs in a fresh process over the same ImageFolder, with the same workers and batch size,
in order (an embedding job's shuffle=False), persistent workers; a run is two epochs: the first
(cold) counts from creating the loader, the JVM's or the worker processes' start included; the
second (warm) from a new iter().

  torch   torchvision ImageFolder(root, transform=preprocess) (PIL decode),
          torch.utils.data.DataLoader: what open_clip's own training and embedding code does
  stoke   the same dataset and DataLoader call, renamed: stoke.DataLoader(dataset, ...)

The cases alternate within each of --repeats rounds. Writes OUT/runs.jsonl and OUT/summary.md.

  python benchmarks/python/openclip_bench.py --data ~/.cache/stoke/imagenet-sample-1000-v1 \
      --copies 3 --out docs/benchmarks/results-openclip
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from recipes_bench import copies, two_epochs  # noqa: E402  (the same linked copies, the same clock)


def preprocess(model_name):
    """open_clip's preprocess for ``model_name``, as an embedding job makes it (random weights)."""
    import open_clip

    model, _, transform = open_clip.create_model_and_transforms(model_name, pretrained=None)
    del model
    return transform


def run(case, data, model_name, workers, batch_size):
    """One run in this process: two epochs; prints one JSON object."""
    import torch
    import torchvision

    dataset = torchvision.datasets.ImageFolder(data, transform=preprocess(model_name))
    start = time.perf_counter()
    if case == "stoke":
        sys.path.insert(0, str(CHECKOUT / "clients" / "python"))
        import stoke

        loader_class = stoke.DataLoader
    else:
        loader_class = torch.utils.data.DataLoader
    loader = loader_class(dataset, batch_size=batch_size, num_workers=workers, shuffle=False,
                          persistent_workers=True, drop_last=False)
    print(json.dumps(two_epochs(loader, start)))


def summarise(runs, out, args):
    lines = [f"# open_clip's preprocess ({args.model}): torch's DataLoader and stoke.DataLoader, no model\n",
             f"`{' '.join(sys.argv)}`\n",
             f"{platform.node()}: {os.cpu_count()} cores; torch {args.torch_version}, torchvision "
             f"{args.vision_version}, open_clip {args.open_clip_version}, Pillow {args.pil_version}; {args.images} "
             f"images, {args.workers} workers, batch {args.batch_size}, {args.repeats} rounds (medians; each run a "
             "fresh process).\n",
             "| epoch | torch img/s | stoke img/s | stoke / torch |", "|---|---|---|---|"]
    for epoch in ("cold", "warm"):
        rate = {}
        for case in ("torch", "stoke"):
            xs = [r[epoch]["images"] / r[epoch]["seconds"] for r in runs if r["case"] == case]
            rate[case] = statistics.median(xs) if xs else float("nan")
        lines.append(f"| {epoch} | {rate['torch']:.0f} | {rate['stoke']:.0f} | {rate['stoke'] / rate['torch']:.2f}x |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", choices=["torch", "stoke"], help="one run in this process")
    ap.add_argument("--data", required=True)
    ap.add_argument("--copies", type=int, default=1, help="link each image this many times (a longer epoch)")
    ap.add_argument("--model", default="ViT-B-32", help="the open_clip model whose preprocess is used")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.run:
        run(args.run, args.data, args.model, args.workers, args.batch_size)
        return
    import PIL
    import open_clip
    import torch
    import torchvision

    args.torch_version, args.vision_version, args.pil_version = torch.__version__, torchvision.__version__, PIL.__version__
    args.open_clip_version = open_clip.__version__
    data = copies(args.data, args.copies, Path(os.environ.get("TMPDIR", "/tmp")))
    args.images = sum(1 for _ in Path(data).rglob("*") if not _.is_dir())
    env = dict(os.environ, STOKE_HOME=str(CHECKOUT), HF_HUB_OFFLINE="1")
    args.out.mkdir(parents=True, exist_ok=True)
    runs = []
    with open(args.out / "runs.jsonl", "w") as log:
        for r in range(args.repeats):
            for case in ("torch", "stoke"):
                done = subprocess.run([sys.executable, __file__, "--run", case, "--data", str(data), "--model",
                                       args.model, "--workers", str(args.workers), "--batch-size",
                                       str(args.batch_size)], env=env, capture_output=True, text=True, check=True)
                result = dict(json.loads(done.stdout.strip().splitlines()[-1]), case=case, round=r)
                runs.append(result)
                log.write(json.dumps(result) + "\n")
                log.flush()
                print(f"round {r} {case}: cold {result['cold']['images'] / result['cold']['seconds']:.0f}"
                      f" warm {result['warm']['images'] / result['warm']['seconds']:.0f} images/s", file=sys.stderr)
    summarise(runs, args.out, args)


if __name__ == "__main__":
    main()
