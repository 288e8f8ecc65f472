"""The repeated-augmentation sampler of torchvision's classification recipe (``--ra-sampler``), as a
test fixture: the order ``references/classification/sampler.py``'s ``RASampler`` gives, written
again here (that file is not installed with torchvision).

Each epoch: a permutation of the dataset drawn from ``seed + epoch`` (or dataset order without
shuffle), every index repeated ``repetitions`` times in a row, padded from its start to a multiple
of ``num_replicas``, rank ``r`` taking every ``num_replicas``-th element from ``r``, and the first
``floor(len(dataset) // 256 * 256 / num_replicas)`` of those kept. The recipe calls ``set_epoch``.
"""

import math

import torch


class RASampler(torch.utils.data.Sampler):
    """torchvision's recipe's ``RASampler(dataset, num_replicas, rank, shuffle, seed, repetitions)``."""

    def __init__(self, dataset, num_replicas, rank, shuffle=True, seed=0, repetitions=3):
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.repetitions = shuffle, seed, repetitions
        self.epoch = 0
        self.num_samples = int(math.ceil(len(dataset) * float(repetitions) / num_replicas))
        self.total_size = self.num_samples * num_replicas
        self.num_selected_samples = int(math.floor(len(dataset) // 256 * 256 / num_replicas))

    def __iter__(self):
        if self.shuffle:
            generator = torch.Generator()
            generator.manual_seed(self.seed + self.epoch)
            order = torch.randperm(len(self.dataset), generator=generator).tolist()
        else:
            order = list(range(len(self.dataset)))
        repeated = [index for index in order for _ in range(self.repetitions)]
        repeated += repeated[:self.total_size - len(repeated)]
        mine = repeated[self.rank:self.total_size:self.num_replicas]
        return iter(mine[:self.num_selected_samples])

    def __len__(self):
        return self.num_selected_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
