#!/usr/bin/env python3
"""`stoke embed` against the PyTorch way, end to end, on the same files and cores.

    python3 embed_bench.py --data DIR --out OUT [--model mobilenet_v3_small] [--repeats 3]
    python3 embed_bench.py --data DIR --out OUT --open-clip ViT-B-32     # open_clip's image tower

Exports torchvision's MODEL (random weights, its classifier replaced by the identity: the
embedding is the pooled features) to OUT/MODEL.onnx, then runs, each as a fresh process, the
runs alternating, --repeats times:

  stoke:   ./stoke embed DATA --model OUT/MODEL.onnx --out OUT/stoke-rN (JVM start included)
  pytorch: this script with --pytorch: torch's DataLoader (ImageFolder + Resize(256) +
           CenterCrop(224) + ToTensor + Normalize, --workers worker processes, batch --batch-size),
           the same model in PyTorch under torch.no_grad() with torch.set_num_threads(--threads),
           the embeddings saved with numpy (interpreter and torch import included)
  pytorch-tensor: the same, each file decoded by torchvision.io and transformed as a tensor by v2
           (Resize(256, antialias=True), CenterCrop(224), ToDtype(float32, scale=True),
           Normalize): torch's fastest CPU path (the recipe's --backend tensor --use-v2); not with
           --open-clip, whose preprocess is PIL's

and reports wall time, images/s, and the CPU split: the decoding side (Stoke: its workers' time
per image; PyTorch: the worker processes' CPU time) and the rest (the model, mostly). It checks
that both runs' embeddings agree (they differ only by DCT scaling and rounding of the resize).
Writes OUT/runs.jsonl and OUT/summary.md.

With --open-clip NAME, the model is open_clip's NAME (random weights, pretrained=None) and its
image tower: exported by stoke.onnx_export (clients/python/stoke/onnx_export.py), run by
`stoke embed` with the flags the export gives (bicubic Resize, CenterCrop, CLIP's mean and std),
and in PyTorch as the usual loop: ImageFolder with open_clip's preprocess, model.encode_image.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from shards_bench import torch_versions

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent


def build_open_clip(name):
    """open_clip's model NAME with seeded random weights, and its evaluation preprocess."""
    import open_clip
    import torch
    torch.manual_seed(0)
    model, _, preprocess = open_clip.create_model_and_transforms(name, pretrained=None)
    return model.eval(), preprocess


def build_model(name):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)()
    if hasattr(model, "classifier"):
        model.classifier = torch.nn.Identity()
    else:
        model.fc = torch.nn.Identity()
    return model.eval()


def export(name, path, open_clip_name=None):
    import torch
    if open_clip_name:
        sys.path.insert(0, str(CHECKOUT / "clients" / "python"))
        from stoke.onnx_export import export_open_clip_image_tower
        model, preprocess = build_open_clip(open_clip_name)
        flags = export_open_clip_image_tower(model, preprocess, str(path), source=f"open_clip {open_clip_name}")
        Path(str(path) + ".flags.json").write_text(json.dumps(flags))
        torch.save(model.state_dict(), str(path) + ".pt")
        return
    model = build_model(name)
    torch.onnx.export(model, torch.zeros(2, 3, 224, 224), path, input_names=["images"], output_names=["embedding"],
                      opset_version=13, dynamic_axes={"images": {0: "batch"}, "embedding": {0: "batch"}})
    torch.save(model.state_dict(), str(path) + ".pt")


def pytorch_run(args):
    """The PyTorch way; prints one JSON object. Timed by the caller from the process's start."""
    import numpy as np
    import torch
    from torchvision import datasets, transforms
    torch.set_num_threads(args.threads)
    if args.open_clip:
        model, preprocess = build_open_clip(args.open_clip)
        model.load_state_dict(torch.load(args.weights))
        ds = datasets.ImageFolder(args.data, transform=preprocess)
        forward = model.encode_image
    else:
        model = build_model(args.model)
        model.load_state_dict(torch.load(args.weights))
        mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
        if args.backend == "tensor":
            from torchvision.transforms import v2
            from torch_loader import decode_file
            ds = datasets.ImageFolder(args.data, loader=decode_file, transform=v2.Compose([
                v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.ToDtype(torch.float32, scale=True),
                v2.Normalize(mean, std)]))
        else:
            ds = datasets.ImageFolder(args.data, transform=transforms.Compose([
                transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
                transforms.Normalize(mean, std)]))
        forward = model
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, num_workers=args.workers)
    rows = []
    model_s = 0.0
    with torch.no_grad():
        for images, _ in loader:
            t = time.perf_counter()
            rows.append(forward(images).numpy())
            model_s += time.perf_counter() - t
    del loader  # its workers exit: their CPU time is now this process's children's
    np.save(args.save, np.concatenate(rows))
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    n = len(ds)
    print(json.dumps({"images": n, "model_s": model_s, "main_cpu_ms_per_image": (me.ru_utime + me.ru_stime) * 1000 / n,
                      "workers_cpu_ms_per_image": (kids.ru_utime + kids.ru_stime) * 1000 / n}))


def timed(cmd, **kw):
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, wall, cpu


def stoke_figure(text, name):
    m = re.search(rf"{name}\s+([0-9.]+)", text)
    return float(m.group(1)) if m else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--out")
    p.add_argument("--model", default="mobilenet_v3_small")
    p.add_argument("--open-clip", metavar="NAME", help="open_clip's model NAME's image tower instead of --model")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--pytorch", action="store_true", help="(internal) one PyTorch run")
    p.add_argument("--backend", choices=["pil", "tensor"], default="pil", help="(internal) that run's path")
    p.add_argument("--weights")
    p.add_argument("--save")
    p.add_argument("--stoke-args", default="", help="extra arguments for stoke embed")
    args = p.parse_args()
    if args.pytorch:
        pytorch_run(args)
        return
    import numpy as np
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.open_clip:
        args.model = args.open_clip
    onnx = out / f"{args.model}.onnx"
    if not onnx.exists():
        export(args.model, onnx, args.open_clip)
    flags = json.loads(Path(str(onnx) + ".flags.json").read_text()) if args.open_clip else []
    cores = len(os.sched_getaffinity(0))
    kinds = ("pytorch", "stoke") if args.open_clip else ("pytorch", "pytorch-tensor", "stoke")
    runs = []
    with open(out / "runs.jsonl", "w") as log:
        for r in range(args.repeats):
            for kind in kinds if r % 2 == 0 else kinds[::-1]:
                if kind == "stoke":
                    dest = out / f"stoke-r{r + 1}"
                    cmd = [str(CHECKOUT / "stoke"), "embed", args.data, "--model", str(onnx), "--out", str(dest),
                           "--overwrite", "--batch-size", str(args.batch_size)] + flags + args.stoke_args.split()
                    done, wall, cpu = timed(cmd)
                    images = int(stoke_figure(done.stdout, "images"))
                    decode = stoke_figure(done.stdout, "of which decoding")
                    result = {"kind": kind, "images": images, "wall_s": wall, "images_per_s": images / wall,
                              "cpu_ms_per_image": cpu * 1000 / images, "decode_cpu_ms_per_image": decode,
                              "model_ms_per_batch": stoke_figure(done.stdout, "model time per batch"),
                              "wait_ms_per_batch": stoke_figure(done.stdout, "loader wait per batch"),
                              "embeddings": str(dest / "embeddings.npy")}
                else:
                    save = out / f"{kind}-r{r + 1}.npy"
                    cmd = [sys.executable, __file__, "--pytorch", "--data", args.data, "--model", args.model,
                           "--backend", "tensor" if kind == "pytorch-tensor" else "pil",
                           *(["--open-clip", args.open_clip] if args.open_clip else []),
                           "--weights", str(onnx) + ".pt", "--save", str(save), "--workers", str(args.workers),
                           "--threads", str(args.threads), "--batch-size", str(args.batch_size)]
                    done, wall, cpu = timed(cmd)
                    inner = json.loads(done.stdout.strip().splitlines()[-1])
                    images = inner["images"]
                    result = {"kind": kind, "images": images, "wall_s": wall, "images_per_s": images / wall,
                              "cpu_ms_per_image": cpu * 1000 / images,
                              "decode_cpu_ms_per_image": inner["workers_cpu_ms_per_image"],
                              "model_ms_per_batch": inner["model_s"] * 1000 / -(-images // args.batch_size),
                              "embeddings": str(save)}
                result["repeat"] = r + 1
                runs.append(result)
                log.write(json.dumps(result) + "\n")
                log.flush()
                print(json.dumps(result), file=sys.stderr)
    a = np.load(next(r for r in runs if r["kind"] == "pytorch")["embeddings"])
    b = np.load(next(r for r in runs if r["kind"] == "stoke")["embeddings"])
    a, b = a.astype(np.float64), b.astype(np.float64)  # random weights give tiny activations: no epsilon here
    cosine = float(np.median(np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))))
    med = {k: {f: statistics.median(r[f] for r in runs if r["kind"] == k)
               for f in ("wall_s", "images_per_s", "cpu_ms_per_image", "decode_cpu_ms_per_image", "model_ms_per_batch")}
           for k in kinds}
    model_name = f"open_clip {args.model}'s encode_image" if args.open_clip else args.model
    lines = [f"{args.repeats} fresh processes each, alternating; {a.shape[0]} images of {args.data}; {model_name} "
             f"(ONNX for Stoke, PyTorch for PyTorch, the same weights); batch {args.batch_size}; {cores} cores; "
             f"PyTorch: {args.workers} workers, torch.set_num_threads({args.threads}); Stoke: its defaults"
             f"{' + ' + args.stoke_args if args.stoke_args else ''}. Median cosine similarity of Stoke's "
             f"embeddings and PyTorch's (PIL): {cosine:.5f}; largest difference of a value: {float(np.abs(a - b).max()):.3g}. "
             f"{torch_versions()}: `pytorch` reads with PIL"
             f"{'' if args.open_clip else ', `pytorch-tensor` with torchvision.io and v2 (its fastest CPU path)'}.",
             "",
             "| | wall s | images/s | vs PyTorch | vs PyTorch tensor | CPU ms/image | of which decoding | "
             "model ms/batch |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for k in kinds:
        m = med[k]
        tensor = (f"{m['images_per_s'] / med['pytorch-tensor']['images_per_s']:.2f}x" if "pytorch-tensor" in med
                  else "-")
        lines.append(f"| {k} | {m['wall_s']:.2f} | {m['images_per_s']:.0f} | "
                     f"{m['images_per_s'] / med['pytorch']['images_per_s']:.2f}x | {tensor} | "
                     f"{m['cpu_ms_per_image']:.2f} | {m['decode_cpu_ms_per_image']:.2f} | "
                     f"{m['model_ms_per_batch']:.1f} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
