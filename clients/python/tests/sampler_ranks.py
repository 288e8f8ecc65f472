"""One rank of the ``--ra-sampler`` case, run by torchrun (2 ranks): torchvision's recipe's
RASampler over an ImageFolder with its eval transform, through stoke.DataLoader and through torch's
DataLoader, 2 epochs with ``set_epoch`` as the recipe calls it. Prints one JSON line: whether every
batch was byte-equal, and the indices this rank took.

Usage: sampler_ranks.py DATA
"""

import json
import os
import sys

import torch
import torchvision
import torchvision.transforms as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stoke  # noqa: E402
from ra_sampler import RASampler  # noqa: E402


def main() -> None:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dataset = torchvision.datasets.ImageFolder(sys.argv[1], transform=T.Compose(
        [T.Resize(40), T.CenterCrop(32), T.PILToTensor()]))
    theirs = RASampler(dataset, num_replicas=world, rank=rank, seed=3, repetitions=3)
    mine = RASampler(dataset, num_replicas=world, rank=rank, seed=3, repetitions=3)
    reference = torch.utils.data.DataLoader(dataset, batch_size=8, sampler=theirs)
    equal, indices, batches = True, [], 0
    with stoke.DataLoader(dataset, batch_size=8, sampler=mine, num_workers=1, with_indices=True) as loader:
        for epoch in range(2):
            theirs.set_epoch(epoch)
            mine.set_epoch(epoch)
            expected = list(reference)
            got = [(images.clone(), labels.clone(), idx.tolist(), batch.epoch)
                   for batch in loader for images, labels, idx in [batch]]
            equal &= len(expected) == len(got)
            for (e_images, e_labels), (images, labels, idx, at) in zip(expected, got):
                equal &= torch.equal(e_images, images) and torch.equal(e_labels, labels) and at == epoch
                indices.extend(idx)
            batches += len(got)
        seen_world = loader.world_size
    print(json.dumps({"rank": rank, "equal": bool(equal), "batches": batches, "indices": indices,
                      "world": seen_world}), flush=True)


if __name__ == "__main__":
    main()
