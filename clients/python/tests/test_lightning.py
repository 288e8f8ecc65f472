"""Lightning: a ``stoke.DataLoader`` returned by a ``LightningDataModule`` trains under Lightning's own
``Trainer``, against Lightning itself (lightning 2.6.6 on the torch 2.14.1 stack), never a stand-in:

- a batch survives the collection utilities that rebuild tuples: ``lightning_utilities``'
  ``apply_to_collection`` (``type(batch)(items)``), Lightning's ``move_data_to_device`` (which keeps
  the batch's ``epoch``, ``batch_index`` and ``padded``), ``torch.utils._pytree`` and torch's
  ``default_collate``/``default_convert``, ``copy`` and ``pickle``;
- a fit on 1 process and on 2 (``Trainer(strategy="ddp", devices=2, accelerator="cpu")``, real
  processes that Lightning starts, gloo), Lightning's defaults standing (``use_distributed_sampler``
  among them), takes every sample once an epoch, over the ranks;
- a job that crashes mid-epoch and is resumed with ``fit(ckpt_path=...)`` from the last checkpoint
  (Lightning's ``ModelCheckpoint``, which saves the loader's ``state_dict()`` in its loops' state)
  trains every sample of that epoch once: what the checkpoint had, then what the resumed fit took.

The fits run tests/lightning_fit.py, which records each step's sample indices. The reference is the
definition: the union over ranks (and over the checkpointed part and the resumed part) of an epoch
is each sample once. Imports without torch or Lightning; skips, saying why, where they are absent
(fails on the torch 2.14.1 stack, which promises them).
"""

import collections
import copy
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(HERE))

from _aids import import_library  # noqa: E402

N = 24  # images: 12 batches of 2 an epoch on 1 process, 6 a rank on 2
BATCH = 2
TMP = None


def setUpModule():
    global TMP
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-lightning-"))


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def data() -> Path:
    """N small JPEGs in 3 classes, made once."""
    folder = TMP / "data"
    if not folder.is_dir():
        subprocess.run([str(CHECKOUT / "stoke"), "make-dataset", str(folder), "--images", str(N), "--seed", "5",
                        "--classes", "3"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fit(out: Path, devices: int, *flags: str) -> subprocess.CompletedProcess:
    """lightning_fit.py on ``devices`` processes (Lightning starts the second itself)."""
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT), USE_LIBUV="0",
               OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(HERE / "lightning_fit.py"), str(data()), str(out), "--devices",
                           str(devices), "--batch-size", str(BATCH), *flags], env=env, capture_output=True,
                          text=True, timeout=600)
    print(f"[stoke] lightning_fit.py {' '.join(flags)} on {devices} process(es): {time.monotonic() - started:.0f} s",
          file=sys.stderr)
    return done


def records(out: Path, phase: str, rank: int) -> list:
    """The steps lightning_fit.py recorded: training's (``phase`` fit or resume), or validation's
    (``val-fit``, ``val-resume``)."""
    path = out / (f"{phase}-{rank}.jsonl" if phase.startswith("val-") else f"seen-{phase}-{rank}.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


class BatchCollectionTest(unittest.TestCase):
    """What the collection utilities make of a real batch of a real loader."""

    @classmethod
    def setUpClass(cls):
        cls.torch = import_library("torch")
        import_library("lightning")
        import stoke
        cls.loader = stoke.DataLoader(str(data()), batch_size=4, shuffle=True, seed=1, with_indices=True, resize=32,
                                      crop=32, num_workers=1, slots=4)
        it = iter(cls.loader)
        next(it)
        cls.batch = next(it)  # batch 1 of epoch 0: an index that a default could not give

    @classmethod
    def tearDownClass(cls):
        cls.batch = None
        cls.loader.close()

    def assert_items(self, expected, got):
        self.assertEqual(len(expected), len(got))
        for e, g in zip(expected, got):
            self.assertTrue(self.torch.equal(e, g))

    def test_apply_to_collection_rebuilds_a_batch_of_its_items(self):
        from lightning_utilities.core.apply_func import apply_to_collection
        import stoke
        batch = self.batch
        got = apply_to_collection(batch, self.torch.Tensor, lambda t: t * 1)
        self.assertIs(stoke.Batch, type(got))
        self.assert_items(batch, got)
        images, labels, indices = got
        self.assertEqual((4, 32, 32, 3), tuple(images.shape))
        # Rebuilt from its items alone: what it was not given it does not claim.
        self.assertEqual((None, None, None, None), (got.epoch, got.batch_index, got.skipped, got.padded))
        # Nested, as a user's (batch, extra) pair or a dict of loaders' batches are.
        nested = apply_to_collection({"a": batch, "b": [batch]}, self.torch.Tensor, lambda t: t * 1)
        self.assertIs(stoke.Batch, type(nested["b"][0]))
        self.assert_items(batch, nested["a"])

    def test_move_data_to_device_keeps_what_the_batch_carries(self):
        from lightning.fabric.utilities.apply_func import move_data_to_device
        import lightning.pytorch as pl
        import stoke
        batch = self.batch
        for moved in (move_data_to_device(batch, self.torch.device("cpu")),
                      pl.LightningModule().transfer_batch_to_device(batch, self.torch.device("cpu"), 0)):
            self.assertIs(stoke.Batch, type(moved))
            self.assert_items(batch, moved)
            self.assertEqual((0, 1, []), (moved.epoch, moved.batch_index, moved.skipped))
            self.assertTrue(self.torch.equal(batch.padded, moved.padded))
        moved = move_data_to_device([batch], self.torch.device("cpu"))[0]
        self.assertEqual((0, 1), (moved.epoch, moved.batch_index))
        as_float = batch.to(self.torch.float64)
        self.assertEqual(self.torch.float64, as_float[0].dtype)
        self.assertEqual(self.torch.bool, as_float.padded.dtype, "padded is moved, never converted")

    def test_pytree_sees_a_node_of_the_items_and_keeps_the_rest(self):
        from torch.utils import _pytree
        import stoke
        batch = self.batch
        leaves, spec = _pytree.tree_flatten(batch)
        self.assertEqual(3, len(leaves))
        self.assert_items(batch, leaves)
        for got in (_pytree.tree_unflatten(leaves, spec), _pytree.tree_map(lambda t: t * 1, batch),
                    _pytree.tree_map(lambda a, b: a * 1, batch, batch)):
            self.assertIs(stoke.Batch, type(got))
            self.assert_items(batch, got)
            self.assertEqual((0, 1), (got.epoch, got.batch_index))
            self.assertIs(batch.padded, got.padded)
        paths = [path for path, _ in _pytree.tree_flatten_with_path(batch)[0]]
        self.assertEqual(3, len(paths))

    def test_default_collate_copy_and_pickle(self):
        from torch.utils.data import default_collate, default_convert
        import stoke
        batch = self.batch
        # torch's own code takes a Batch as it takes the plain tuple of the same items.
        for got, expected in ((default_collate([batch, batch]), default_collate([tuple(batch), tuple(batch)])),
                              (default_convert(batch), default_convert(tuple(batch)))):
            self.assertEqual(type(expected), type(got))
            self.assert_items(expected, got)
        rebuilt = type(batch)(list(batch))
        self.assertIs(stoke.Batch, type(rebuilt))
        self.assert_items(batch, rebuilt)
        for got in (copy.copy(batch), copy.deepcopy(batch), pickle.loads(pickle.dumps(batch))):
            self.assertIs(stoke.Batch, type(got))
            self.assert_items(batch, got)
            self.assertEqual((0, 1), (got.epoch, got.batch_index))


class FitTest(unittest.TestCase):
    """Lightning's Trainer over a stoke.DataLoader: a fit of 2 epochs that crashes mid-epoch 1 after
    a checkpoint, then a fit resumed from it."""

    def setUp(self):
        import_library("torch")
        import_library("lightning")

    def fit_crash_and_resume(self, devices: int) -> None:
        out = Path(tempfile.mkdtemp(dir=TMP))
        per_epoch = N // devices // BATCH  # batches a rank takes an epoch
        every = per_epoch + per_epoch // 2  # the checkpoint: half-way through epoch 1
        crashed = fit(out, devices, "--checkpoint-every", str(every), "--crash-at", str(every + 1))
        self.assertNotEqual(0, crashed.returncode, crashed.stderr[-4000:])
        self.assertIn(f"crash at step {every + 1}", crashed.stderr, crashed.stderr[-4000:])
        checkpoint = out / f"step={every}.ckpt"
        self.assertTrue(checkpoint.is_file(), crashed.stderr[-4000:])
        import torch
        # The loader's state is in the checkpoint, where Lightning keeps a stateful loader's: rank 0's.
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
        state = saved["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]
        self.assertEqual((1, every - per_epoch), (state["epoch"], state["_num_yielded"]))
        self.assertEqual((0, devices), (state["rank"], state["world_size"]))

        resumed = fit(out, devices, "--resume", str(checkpoint))
        self.assertEqual(0, resumed.returncode, resumed.stderr[-4000:])
        self.assertIn("stoke.DataLoader: resuming epoch 1", resumed.stderr)
        if devices > 1:
            # On one device, Lightning would count the batches its checkpoint took against the
            # remainder's len() and end the epoch early: refused, where its last samples were lost.
            elsewhere = fit(Path(tempfile.mkdtemp(dir=TMP)), 1, "--resume", str(checkpoint))
            self.assertNotEqual(0, elsewhere.returncode, elsewhere.stderr[-4000:])
            self.assertIn(f"Lightning cannot resume epoch 1 on another world: it was saved by {devices} rank(s) in "
                          f"batches of {BATCH} and is resumed by 1", elsewhere.stderr, elsewhere.stderr[-4000:])

        for rank in range(devices):
            for phase in ("fit", "resume"):
                # Lightning iterated the loader returned, not one it re-created (it re-creates only
                # torch's DataLoader), on the rank and world of torch.distributed.
                loader = json.loads((out / f"loader-{phase}-{rank}.json").read_text())
                self.assertEqual({"type": "stoke.loader.DataLoader", "rank": rank, "world_size": devices,
                                  "trainer_world_size": devices}, loader)
            for r in records(out, "fit", rank) + records(out, "resume", rank):
                # The batch reached training_step as a Batch, its epoch and index carried through the
                # batch transfer, and Lightning's batch_idx is the loader's.
                self.assertEqual(("stoke.loader.Batch", r["epoch"], r["batch_idx"]),
                                 (r["type"], r["batch_epoch"], r["batch_index"]))
                self.assertEqual([False] * BATCH, r["padded"])
        for epoch in (0, 1):
            seen = collections.Counter()
            for rank in range(devices):
                # Steps up to the checkpoint count; the one trained after it was lost with the crash.
                before = [r for r in records(out, "fit", rank) if r["epoch"] == epoch and r["global_step"] < every]
                after = [r for r in records(out, "resume", rank) if r["epoch"] == epoch]
                self.assertEqual(list(range(per_epoch)), [r["batch_idx"] for r in before + after],
                                 f"rank {rank}, epoch {epoch}: every batch of the epoch, once, in order")
                for r in before + after:
                    seen.update(r["indices"])
            self.assertEqual({i: 1 for i in range(N)}, dict(seen), f"epoch {epoch}: every sample once over "
                                                                   f"{devices} rank(s)")
        # Validation, from val_dataloader(), after each epoch: epoch 0's before the crash, epoch 1's
        # in the resumed fit; every sample once over the ranks, each rank as many batches.
        for phase, epoch in (("fit", 0), ("resume", 1)):
            seen = collections.Counter()
            for rank in range(devices):
                steps = records(out, f"val-{phase}", rank)
                self.assertEqual([(epoch, i) for i in range(per_epoch)], [(r["epoch"], r["batch_idx"]) for r in steps])
                for r in steps:
                    seen.update(r["indices"])
            self.assertEqual({i: 1 for i in range(N)}, dict(seen), f"validation of epoch {epoch}")

    def test_one_process_fit_resumes_mid_epoch_with_every_sample_once(self):
        self.fit_crash_and_resume(1)

    def test_ddp_fit_on_two_processes_resumes_mid_epoch_with_every_sample_once(self):
        self.fit_crash_and_resume(2)


if __name__ == "__main__":
    unittest.main()
