#!/usr/bin/env python3
"""A Hugging Face datasets.Dataset, side by side in one run (issue 48): torch's DataLoader over the
dataset with the torchvision transform in ``ds.with_transform`` (the dataset's own ``__getitem__``:
datasets decodes each image with PIL), ``stoke.DataLoader(ds, transform=...)`` over its Arrow files, and
``stoke.DataLoader`` over the same images packed as tar shards; the same transform (Resize 256,
CenterCrop 224, PILToTensor: uint8), batch size and workers.

One run:

  1. makes an ImageFolder of --images JPEGs (``stoke make-dataset``; or --folder DIR), loads it with
     ``load_dataset("imagefolder")`` and writes it with ``save_to_disk``, so that the Arrow files hold
     each image's bytes (``load_from_disk``), and packs the same folder into tar shards, each file's
     bytes kept (``stoke pack --max-side 100000``);
  2. runs each case in a fresh process, the cases alternating, --repeats rounds: the first epoch
     (cold: the process's first pass) and the second (warm), images/s of each;
  3. writes OUT/runs.jsonl and OUT/summary.md (medians), and prints the summary: the issue asks
     Stoke over the Arrow files >= 2x torch's DataLoader, and >= 0.95x Stoke over tar shards.

  python3 benchmarks/python/hf_datasets_bench.py --out /tmp/hf-bench [--images 3000 --workers 2 --repeats 3]

Needs torch, torchvision, datasets and pyarrow (the torch 2.14.1 stack: clients/python/stacks/torch214.sh).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
STOKE = str(CHECKOUT / "stoke")
CASES = ("torch DataLoader, ds.with_transform", "stoke.DataLoader(ds), Arrow files", "stoke.DataLoader, tar shards")

RUN_CASE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
case, data, batch_size, workers = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
import torch, torchvision.transforms as T
transform = T.Compose([T.Resize(256), T.CenterCrop(224), T.PILToTensor()])
if case.startswith("torch") or "Arrow" in case:
    import datasets
    ds = datasets.load_from_disk(data)
if case.startswith("torch"):
    def apply(batch):
        return {"image": [transform(im.convert("RGB")) for im in batch["image"]], "label": batch["label"]}
    loader = torch.utils.data.DataLoader(ds.with_transform(apply), batch_size=batch_size, shuffle=True,
                                         num_workers=workers, persistent_workers=workers > 0)
    images_of = lambda batch: batch["image"]
else:
    import stoke
    if "Arrow" in case:
        loader = stoke.DataLoader(ds, transform=transform, batch_size=batch_size, shuffle=True, num_workers=workers)
    else:  # the same Resize, CenterCrop and uint8 output, as options (a path has no transform object)
        loader = stoke.DataLoader(data, batch_size=batch_size, shuffle=True, num_workers=workers, resize=256,
                                  crop=224, dct_scaling="none")
    images_of = lambda batch: batch[0]
out = {}
for epoch, name in ((0, "cold"), (1, "warm")):
    if hasattr(loader, "set_epoch"):
        loader.set_epoch(epoch)
    start, n = time.perf_counter(), 0
    for batch in loader:
        n += len(images_of(batch))
    out[name + "_images_per_s"] = n / (time.perf_counter() - start)
    out["images"] = n
if hasattr(loader, "close"):
    loader.close()
print(json.dumps(out))
"""


def sh(args, **kwargs):
    return subprocess.run(args, check=True, **kwargs)


def make_data(work, images, folder):
    if folder is None:
        folder = work / "folder"
        if not folder.exists():
            sh([STOKE, "make-dataset", str(folder), "--images", str(images), "--seed", "48", "--classes", "10"],
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = work / "saved"
    if not (saved / "state.json").exists():
        import datasets
        ds = datasets.load_dataset("imagefolder", data_dir=str(folder), cache_dir=str(work / "cache"), split="train")
        ds.save_to_disk(str(saved))  # embeds each image's bytes
    tar = work / "tar"
    if not (tar / "index.json").exists():
        sh([STOKE, "pack", str(folder), "--out", str(tar), "--max-side", "100000"],
           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return {CASES[0]: str(saved), CASES[1]: str(saved), CASES[2]: str(tar)}


def run_case(case, data, batch_size, workers):
    p = subprocess.run([sys.executable, "-c", RUN_CASE, str(CHECKOUT / "clients" / "python"), case, data,
                        str(batch_size), str(workers)], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{case} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--images", type=int, default=3000)
    p.add_argument("--folder", help="an ImageFolder to use instead of a generated one")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--work", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "stoke-hf-bench"))
    a = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work, out = Path(a.work), Path(a.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    data = make_data(work, a.images, Path(a.folder) if a.folder else None)
    rows = []
    with open(out / "runs.jsonl", "w") as runs:
        for repeat in range(a.repeats):
            for case in CASES:
                r = dict(run_case(case, data[case], a.batch_size, a.workers), case=case, repeat=repeat,
                         workers=a.workers, batch_size=a.batch_size)
                runs.write(json.dumps(r) + "\n")
                runs.flush()
                rows.append(r)
                print(json.dumps(r), flush=True)

    def med(case, key):
        return statistics.median(r[key] for r in rows if r["case"] == case)

    lines = [f"# A datasets.Dataset: {rows[0]['images']} images, batch {a.batch_size}, {a.workers} workers, "
             f"medians of {a.repeats}", "", "| case | cold images/s | warm images/s |", "|---|---|---|"]
    for case in CASES:
        lines.append(f"| {case} | {med(case, 'cold_images_per_s'):.0f} | {med(case, 'warm_images_per_s'):.0f} |")
    for key in ("cold", "warm"):
        k = key + "_images_per_s"
        lines.append("")
        lines.append(f"{key}: Arrow files / torch's DataLoader {med(CASES[1], k) / med(CASES[0], k):.2f}x (the issue "
                     f"asks >= 2x); Arrow files / tar shards {med(CASES[1], k) / med(CASES[2], k):.2f}x (>= 0.95x)")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
