#!/usr/bin/env python3
"""PyTorch DataLoader baseline for the shared-memory hand-off benchmark (ShmHandoff).

A Dataset that returns already-preprocessed float32 (3, 224, 224) tensors from memory (no decoding
at all), batched by torch.utils.data.DataLoader: what remains is DataLoader's own cost of
collating a batch in a worker and handing it to the training process (shared-memory tensor +
pickled handle through a pipe), i.e. what `stoke serve` + stoke replace with a slot hand-off.

    /usr/bin/python3 benchmarks/pytorch_dataloader.py [--batch-sizes 32,128,512,1024] [--workers 2] [--batches 30]

For each batch size it prints the time the training loop waits in next() per batch (median and
p99 over the measured batches, after warm-up) and the batches per second.
"""
import argparse
import statistics
import time

import torch
from torch.utils.data import DataLoader, Dataset


class InMemory(Dataset):
    """length samples cycling over `unique` preprocessed tensors held in RAM."""

    def __init__(self, length, unique=64):
        g = torch.Generator().manual_seed(0)
        self.data = torch.randn(unique, 3, 224, 224, generator=g, dtype=torch.float32)
        self.length = length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return self.data[i % self.data.shape[0]], i % 1000


def run(batch_size, workers, batches, warmup):
    ds = InMemory(batch_size * (batches + warmup))
    loader = DataLoader(ds, batch_size=batch_size, num_workers=workers, shuffle=False,
                        persistent_workers=False, prefetch_factor=2 if workers else None)
    waits = []
    it = iter(loader)
    start = None
    for b in range(batches + warmup):
        t0 = time.perf_counter()
        x, y = next(it)
        t1 = time.perf_counter()
        assert x.shape == (batch_size, 3, 224, 224) and x.dtype == torch.float32
        if b == warmup:
            start = t0
        if b >= warmup:
            waits.append(t1 - t0)
    elapsed = time.perf_counter() - start
    del it
    waits.sort()
    p99 = waits[min(len(waits) - 1, int(len(waits) * 0.99))]
    return statistics.median(waits), p99, batches / elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-sizes", default="32,128,512,1024")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, num_workers={a.workers}")
    print(f"{'batch':>6} {'MB':>8} {'median wait ms':>15} {'p99 wait ms':>12} {'batches/s':>10}")
    for bs in [int(s) for s in a.batch_sizes.split(",")]:
        med, p99, rate = run(bs, a.workers, a.batches, a.warmup)
        mb = bs * 3 * 224 * 224 * 4 / 1e6
        print(f"{bs:>6} {mb:>8.1f} {med * 1e3:>15.3f} {p99 * 1e3:>12.3f} {rate:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
