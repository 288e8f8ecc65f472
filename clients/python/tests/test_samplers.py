"""stoke.DataLoader with any Sampler or batch_sampler: each epoch's order is the object's own, drawn
at iter() as torch's DataLoader draws it and given to the producer through its order feed.

The reference is torch's DataLoader over the same ImageFolder with its eval transform (PIL's pixels):
for each sampler the issue names (torchvision's recipe's RASampler, WeightedRandomSampler,
SubsetRandomSampler, a user's subclass, a BatchSampler and a batch sampler of the user's), a sampler
built the same way gives both loaders their order, and every batch of 2 epochs is byte-equal, in
order. A state saved inside an epoch resumes to the uninterrupted run's batches; the RASampler runs
on 2 ranks as torchrun starts them.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))

try:
    import numpy as np  # noqa: F401 (stoke's own need, checked here)
    import torch
    import torchvision
    import torchvision.transforms as T
    import stoke
    import _aids
    from ra_sampler import RASampler
    MISSING = None
except ImportError as e:  # numpy, torch or torchvision not installed: skip, loudly
    MISSING = f"{e.name} is not installed"

TMP = None
DATA = None
#: RASampler keeps a multiple of 256 samples per epoch: the dataset has 256.
N = 256


def setUpModule():
    global TMP, DATA
    if MISSING:
        print(f"[stoke] SKIPPING the sampler tests: {MISSING}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-"))
    DATA = TMP / "data"
    subprocess.run([str(CHECKOUT / "stoke"), "make-dataset", str(DATA), "--images", str(N), "--seed", "13",
                    "--classes", "4"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def dataset():
    """The eval transform, small: Resize (bilinear, PIL's) and CenterCrop, uint8 CHW."""
    return torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(
        [T.Resize(40), T.CenterCrop(32), T.PILToTensor()]))


def generator(seed):
    return torch.Generator().manual_seed(seed)


if MISSING is None:  # a subclass needs torch at import; without it the tests skip, saying so
    class Reversed(torch.utils.data.DistributedSampler):
        """A user's subclass of DistributedSampler (Stoke draws a DistributedSampler's order itself,
        but not its subclass's): its epoch's order read backwards."""

        def __iter__(self):
            return iter(list(super().__iter__())[::-1])


class Growing:
    """A user's batch sampler with no batch_size: batches of 1, 2, ... 6 samples over the even
    indices, a new order each epoch from its generator."""

    def __init__(self, n, seed):
        self.n, self.generator = n, generator(seed)

    def __iter__(self):
        order = (torch.randperm(self.n // 2, generator=self.generator) * 2).tolist()
        at, size = 0, 1
        while at < len(order):
            yield order[at:at + size]
            at, size = at + size, size % 6 + 1

    def __len__(self):
        return sum(1 for _ in self._sizes())

    def _sizes(self):
        at, size = 0, 1
        while at < self.n // 2:
            yield size
            at, size = at + size, size % 6 + 1


#: Each case: how to build its sampler (a new one, the same each time), the loaders' keywords, and
#: whether the recipe's set_epoch is called on it each epoch.
def cases(ds):
    weights = [1.0 + (i % 5) for i in range(N)]
    return {
        "RASampler": (lambda: RASampler(ds, num_replicas=1, rank=0, seed=7, repetitions=3),
                      dict(batch_size=16), True),
        "WeightedRandomSampler": (lambda: torch.utils.data.WeightedRandomSampler(weights, 30, generator=generator(3)),
                                  dict(batch_size=4, drop_last=True), False),
        "SubsetRandomSampler": (lambda: torch.utils.data.SubsetRandomSampler(range(5, N, 7), generator=generator(4)),
                                dict(batch_size=5), False),
        "a user's subclass": (lambda: Reversed(ds, num_replicas=1, rank=0, seed=2), dict(batch_size=6), True),
        "BatchSampler": (lambda: torch.utils.data.BatchSampler(
            torch.utils.data.RandomSampler(range(40), generator=generator(5)), 7, False), {}, False),
        "a user's batch sampler": (lambda: Growing(60, 6), {}, False),
    }


def keywords(options, sampler):
    key = "batch_sampler" if "batch_size" not in options else "sampler"
    return dict(options, **{key: sampler})


def epochs(loader, sampler, set_epoch, first=0, count=2, stop_after=None):
    """Every batch of ``count`` epochs, cloned: (images, labels), calling the sampler's set_epoch first
    as the recipe does; ``stop_after`` batches in all, then it stops (a run cut short)."""
    out = []
    for epoch in range(first, first + count):
        if set_epoch:
            sampler.set_epoch(epoch)
        for batch in loader:
            out.append((batch[0].clone(), batch[1].clone()))
            if stop_after is not None and len(out) == stop_after:
                return out
    return out


@unittest.skipIf(MISSING, MISSING or "")
class SamplerTest(unittest.TestCase):
    def assertSameBatches(self, expected, got, name):
        self.assertEqual(len(expected), len(got), f"{name}: batches")
        for k, ((e_images, e_labels), (images, labels)) in enumerate(zip(expected, got)):
            self.assertEqual(e_labels.tolist(), labels.tolist(), f"{name}: batch {k}'s labels")
            self.assertTrue(torch.equal(e_images, images), f"{name}: batch {k}'s pixels")

    def test_each_sampler_gives_torchs_batches_in_order_over_two_epochs(self):
        ds = dataset()
        for name, (make, options, set_epoch) in cases(ds).items():
            with self.subTest(name):
                theirs = make()
                expected = epochs(torch.utils.data.DataLoader(ds, **keywords(options, theirs)), theirs, set_epoch)
                self.assertGreater(len(expected), 2, name)
                mine = make()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", stoke.StokeWarning)  # the growing ring's note
                    with stoke.DataLoader(ds, num_workers=2, **keywords(options, mine)) as loader:
                        self.assertIs(mine, loader.batch_sampler if "batch_size" not in options else loader.sampler)
                        got = epochs(loader, mine, set_epoch)
                        self.assertFalse(any(b.padded.any() for b in [next(iter(loader))]),
                                         f"{name}: a sampler's own repeats are not Stoke's padding")
                self.assertSameBatches(expected, got, name)

    def test_a_batch_sampler_larger_than_the_ring_gets_a_larger_ring_said_once(self):
        ds = dataset()
        _aids.forget_what_was_said()
        with stoke.DataLoader(ds, batch_sampler=Growing(44, 1), num_workers=1) as loader:
            self.assertEqual(1, loader.batch_size, "no batch_size said: a slot of one sample to start with")
            with self.assertWarnsRegex(stoke.StokeWarning, "gave a batch of 6 samples, more than a ring slot's 1"):
                sizes = [len(labels) for _, labels in loader]
            self.assertEqual([1, 2, 3, 4, 5, 6, 1], sizes)
            self.assertEqual(6, loader.batch_size)

    def test_an_epoch_a_sampler_leaves_empty_passes_and_the_next_comes(self):
        ds = dataset()

        class EveryOtherEpoch:  # nothing in even epochs
            epoch = 0

            def set_epoch(self, epoch):
                self.epoch = epoch

            def __iter__(self):
                return iter([] if self.epoch % 2 == 0 else [9, 4, 7])

            def __len__(self):
                return 0 if self.epoch % 2 == 0 else 3

        theirs, mine = EveryOtherEpoch(), EveryOtherEpoch()
        expected = epochs(torch.utils.data.DataLoader(ds, batch_size=2, sampler=theirs), theirs, True, count=4)
        with stoke.DataLoader(ds, batch_size=2, num_workers=1, sampler=mine, timeout=60) as loader:
            producer = _aids.producer_process(loader).pid
            got = epochs(loader, mine, True, count=4)
            self.assertEqual(producer, _aids.producer_process(loader).pid,
                             "an empty epoch's record goes to the producer, which goes on: no new one is started")
        self.assertEqual(4, len(expected))
        self.assertSameBatches(expected, got, "epochs 0 and 2 empty")

    def test_a_state_saved_inside_an_epoch_resumes_to_the_uninterrupted_runs_batches(self):
        ds = dataset()
        chosen = {"RASampler": 5, "SubsetRandomSampler": 3, "WeightedRandomSampler": 4, "BatchSampler": 2,
                  "a user's batch sampler": 7}
        all_cases = cases(ds)
        for name, cut in chosen.items():
            make, options, set_epoch = all_cases[name]
            with self.subTest(name):
                sampler = make()
                with stoke.DataLoader(ds, num_workers=2, **keywords(options, sampler)) as loader:
                    whole = epochs(loader, sampler, set_epoch)
                sampler = make()
                with stoke.DataLoader(ds, num_workers=2, **keywords(options, sampler)) as loader:
                    before = epochs(loader, sampler, set_epoch, stop_after=cut)
                    state = json.loads(json.dumps(loader.state_dict()))  # plain values, as a checkpoint holds
                self.assertEqual((0, cut), (state["epoch"], state["_num_yielded"]), name)
                # A new process's sampler: the same construction; its generator's draws so far, the
                # epoch's order and its epoch come from the state.
                sampler = make()
                with stoke.DataLoader(ds, num_workers=2, **keywords(options, sampler)) as loader:
                    loader.load_state_dict(state)
                    if set_epoch:
                        sampler.set_epoch(0)  # the recipe's call before its first epoch's loop
                    after = [(b[0].clone(), b[1].clone()) for b in loader]  # the rest of epoch 0
                    after += epochs(loader, sampler, set_epoch, first=1, count=1)
                self.assertSameBatches(whole, before + after, name)

    def test_an_order_that_cannot_be_drawn_again_is_said_at_state_dict(self):
        ds = dataset()
        _aids.forget_what_was_said()
        with stoke.DataLoader(ds, batch_size=4, num_workers=1,
                              sampler=torch.utils.data.SubsetRandomSampler(range(20))) as loader:
            next(iter(loader))
            with self.assertWarnsRegex(stoke.StokeWarning, "SubsetRandomSampler's later epochs cannot be drawn again "
                                                           "on resume.*seeded generator="):
                state = loader.state_dict()
            self.assertEqual(5, len(state["given"]["order"]["batch_sizes"]), "this epoch's order is saved all the same")
        with stoke.DataLoader(ds, batch_size=4, num_workers=1, sampler=torch.utils.data.SubsetRandomSampler(
                range(20), generator=generator(1))) as loader:
            next(iter(loader))
            with warnings.catch_warnings():
                warnings.simplefilter("error", stoke.StokeWarning)
                loader.state_dict()  # its generator's state is saved: nothing to say

    def test_a_sampler_that_gives_an_index_outside_the_dataset_is_refused_naming_it(self):
        ds = dataset()

        class OffTheEnd:  # a sampler as torch takes one: an iterable of indices with a len
            def __iter__(self):
                return iter([3, 1, N])

            def __len__(self):
                return 3

        with stoke.DataLoader(ds, batch_size=2, num_workers=1, sampler=OffTheEnd()) as loader:
            with self.assertRaisesRegex(ValueError, f"the OffTheEnd gave index {N} at position 2 of epoch 0, outside "
                                                    f"the dataset's {N} samples"):
                iter(loader)
        with self.assertRaisesRegex(ValueError, "batch_sampler option is mutually exclusive with batch_size"):
            stoke.DataLoader(ds, batch_size=4, batch_sampler=Growing(10, 1))
        with self.assertRaisesRegex(ValueError, "sampler option is mutually exclusive with shuffle"):
            stoke.DataLoader(ds, shuffle=True, sampler=torch.utils.data.SubsetRandomSampler(range(3)))

    def test_the_recipes_ra_sampler_on_two_ranks_gives_each_rank_torchs_batches(self):
        from test_dataloader import run_two_ranks, torchrun_env
        env = torchrun_env()
        with tempfile.TemporaryDirectory() as logs:
            done = run_two_ranks([str(HERE / "sampler_ranks.py"), str(DATA)], 29561, logs, env)
        self.assertEqual(0, done.returncode, done.stderr[-3000:])
        # The two ranks share one stdout: a print's object and its newline are two writes, so one
        # rank's object can follow the other's on the same line. Read every object wherever it stands.
        ranks, decoder = {}, json.JSONDecoder()
        for line in done.stdout.splitlines():
            at = 0
            while line.startswith("{", at):  # a rank's objects, one after another; other lines are logs
                r, at = decoder.raw_decode(line, at)
                ranks[r["rank"]] = r
        self.assertEqual([0, 1], sorted(ranks), done.stdout[-2000:])
        for r in (0, 1):
            self.assertTrue(ranks[r]["equal"], f"rank {r}: a batch differs from torch's loader's")
            self.assertEqual(2, ranks[r]["world"], f"rank {r}: the world torchrun started")
            self.assertEqual(2 * 16, ranks[r]["batches"], f"rank {r}: 128 samples an epoch, in batches of 8")
        self.assertNotEqual(ranks[0]["indices"], ranks[1]["indices"], "each rank its own share, not partitioned again")
        first = RASampler(range(N), num_replicas=2, rank=1, seed=3, repetitions=3)
        self.assertEqual(list(first), ranks[1]["indices"][:128], "rank 1's epoch 0 is the RASampler's own")


if __name__ == "__main__":
    unittest.main()
