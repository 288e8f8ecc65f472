"""Elastic resume: a stoke.DataLoader state saved on one world resumes mid-epoch on another, every
sample of the epoch exactly once (run by ./stoke test).

The reference is the definition alone: the union of what every rank of every world took of an epoch
is each sample once, a repeat only ever where ``batch.padded`` says so, and every rank of a world
takes as many batches. Needs numpy and torch (skips, saying so, without them).
"""

import collections
import contextlib
import io
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(HERE))

try:
    import numpy as np
    import torch
    import stoke
    from stoke import _resume
    MISSING = None
except ImportError as e:
    MISSING = f"{e.name} is not installed"

DATA = None
TMP = None
N = 1003
SETTINGS = dict(shuffle=True, seed=7, with_indices=True, resize=32, crop=32, num_workers=1, slots=2)


def setUpModule():
    global DATA, TMP
    if MISSING:
        print(f"[stoke] SKIPPING the elastic resume tests: {MISSING}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-"))
    DATA = TMP / "data"
    # 1003 small JPEGs in 4 classes: the scenario takes 600 before its resume.
    subprocess.run([str(CHECKOUT / "stoke"), "make-dataset", str(DATA), "--images", str(N), "--seed", "5",
                    "--classes", "4"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def take(loader, counts, padded, steps=None):
    """Takes the loader's current epoch (or ``steps`` batches of it): each real sample counted in
    ``counts``, padding in ``padded``. Returns the batches taken."""
    taken = 0
    for batch in loader:
        _, _, idx = batch
        counts.update(idx[~batch.padded].tolist())
        padded.update(idx[batch.padded].tolist())
        taken += 1
        if steps is not None and taken == steps:
            break
    return taken


@unittest.skipIf(MISSING, MISSING or "")
class ElasticResumeTest(unittest.TestCase):
    def four_ranks_take_three_batches_of_50(self, steps=(3, 3, 3, 3)):
        counts, states = collections.Counter(), []
        for r in range(4):
            with stoke.DataLoader(DATA, batch_size=50, rank=r, world_size=4, **SETTINGS) as loader:
                loader.set_epoch(1)
                self.assertEqual(steps[r], take(loader, counts, collections.Counter(), steps[r]))
                states.append(loader.state_dict())
        return counts, states

    def finish(self, states, world, batch_size, before):
        """Finishes epoch 1 on ``world`` ranks of ``batch_size`` from ``states``, then takes epoch 2;
        checks each sample once in both and as many batches on every rank. Returns the reports."""
        seen, padded = before.copy(), collections.Counter()
        later, later_padded = collections.Counter(), collections.Counter()
        lengths, reports = set(), []
        for r in range(world):
            with stoke.DataLoader(DATA, batch_size=batch_size, rank=r, world_size=world, **SETTINGS) as loader:
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    loader.load_state_dict(states)
                reports.append(err.getvalue())
                expected = len(loader)
                self.assertEqual(expected, take(loader, seen, padded), f"rank {r}: len() is the resumed epoch's")
                lengths.add(expected)
                self.assertEqual(2, loader.state_dict()["epoch"])
                take(loader, later, later_padded)
        self.assertEqual(1, len(lengths), f"the ranks of {world} took different batch counts: {lengths}")
        self.assertEqual(list(range(N)), sorted(seen), f"epoch 1 resumed on {world} ranks: a sample missing")
        self.assertEqual({1}, set(seen.values()), f"epoch 1 resumed on {world} ranks: a sample twice")
        self.assertEqual(-(-(N - sum(before.values())) // world) * world - (N - sum(before.values())),
                         sum(padded.values()), "the only repeats are the remainder's padding, marked")
        self.assertEqual(list(range(N)), sorted(later))
        self.assertEqual({1}, set(later.values()), f"epoch 2 on {world} ranks: whole and disjoint")
        return reports

    def test_four_ranks_checkpointed_after_three_batches_of_50_finish_on_two_of_100_and_on_three_of_50(self):
        before, states = self.four_ranks_take_three_batches_of_50()
        self.assertEqual(600, sum(before.values()))
        self.assertEqual({1}, set(before.values()))
        self.assertEqual(2, states[0]["version"])
        self.assertEqual((1, 3, []), (states[2]["epoch"], states[2]["_num_yielded"], states[2]["epoch_cuts"]))
        reports = self.finish(states[1], 2, 100, before)  # one rank's state: every rank was at its step
        self.assertIn("600 of its 1003 samples taken, 403 left; split over 2 ranks as 3 batches of up to 100 each, "
                      "1 of them padding", reports[0])
        self.finish(json.loads(json.dumps(states)), 3, 50, before)  # every rank's, through JSON

    def test_ranks_that_stopped_at_different_steps_lose_and_repeat_nothing_given_every_state(self):
        before, states = self.four_ranks_take_three_batches_of_50(steps=(3, 3, 2, 3))
        self.assertEqual(550, sum(before.values()))
        reports = self.finish(states, 2, 100, before)
        self.assertIn("none taken twice (from the lowest step, 150 would have been)", reports[0])
        # From the lowest step's state alone, the 150 the others took past it come again, marked by nothing.
        again = before.copy()
        for r in range(2):
            with stoke.DataLoader(DATA, batch_size=100, rank=r, world_size=2, **SETTINGS) as loader:
                with contextlib.redirect_stderr(io.StringIO()):
                    loader.load_state_dict(states[2])
                take(loader, again, collections.Counter())
        self.assertEqual(list(range(N)), sorted(again))
        self.assertEqual(150, sum(1 for c in again.values() if c == 2))

    def test_a_resumed_world_checkpointed_again_resumes_on_a_third(self):
        before, states = self.four_ranks_take_three_batches_of_50()
        seen, second = before.copy(), []
        for r in range(3):
            with stoke.DataLoader(DATA, batch_size=40, rank=r, world_size=3, **SETTINGS) as loader:
                with contextlib.redirect_stderr(io.StringIO()):
                    loader.load_state_dict(states)
                take(loader, seen, collections.Counter(), 2)
                second.append(loader.state_dict())
        self.assertEqual([{"world_size": 4, "taken": [150] * 4}], second[0]["epoch_cuts"])
        self.assertEqual(600 + 240, sum(seen.values()))
        self.finish(second, 2, 64, seen)

    def test_a_state_of_another_order_or_world_is_refused_in_one_sentence_naming_it(self):
        _, states = self.four_ranks_take_three_batches_of_50()
        with stoke.DataLoader(DATA, batch_size=100, rank=0, world_size=2, **dict(SETTINGS, seed=8)) as loader:
            with self.assertRaisesRegex(ValueError, r"seed=7, this loader has 8"):
                loader.load_state_dict(states[0])
        with stoke.DataLoader(DATA, batch_size=100, rank=0, world_size=2, **SETTINGS) as loader:
            with self.assertRaisesRegex(ValueError, r"dataset_size=999, this loader has 1003"):
                loader.load_state_dict(dict(states[0], dataset_size=999))
            self.assertRegex(states[0]["dataset"], r"^[0-9a-f]{16}$")
            with self.assertRaisesRegex(ValueError, r"saved over another dataset \(dataset='0123456789abcdef'"):
                loader.load_state_dict(dict(states[0], dataset="0123456789abcdef"))
            with self.assertRaisesRegex(ValueError, r"states of 3 of the 4 ranks"):
                loader.load_state_dict(states[:3])
            with self.assertRaisesRegex(ValueError, r"in epoch 2 and another's in epoch 1"):
                loader.load_state_dict(states[:3] + [dict(states[3], epoch=2, _num_yielded=1)])
            with self.assertRaisesRegex(ValueError, r"version 3, written by a later Stoke"):
                loader.load_state_dict(dict(states[0], version=3))
            # Version 1 (batch, no version, no cuts) reads as it did.
            v1 = {k: v for k, v in states[0].items() if k not in ("version", "_num_yielded", "epoch_cuts")}
            v1["batch"] = 3
            with contextlib.redirect_stderr(io.StringIO()):
                loader.load_state_dict(v1)
            self.assertEqual((1, 0, [{"world_size": 4, "taken": [150] * 4}]),
                             (loader.state_dict()["epoch"], loader.state_dict()["_num_yielded"],
                              loader.state_dict()["epoch_cuts"]))

    def test_the_remainders_arithmetic_is_the_sets_over_many_worlds(self):
        rng = random.Random(3)
        for _ in range(400):
            n = rng.randint(1, 200)
            rest, cuts = list(range(n)), []
            for _ in range(rng.randint(1, 3)):
                w = rng.randint(1, 6)
                share = -(-len(rest) // w)
                taken = [rng.randint(0, share) for _ in range(w)]
                gone = {r + j * w for r in range(w) for j in range(taken[r]) if r + j * w < len(rest)}
                rest = [p for i, p in enumerate(rest) if i not in gone]
                cuts.append({"world_size": w, "taken": taken})
                self.assertEqual(len(rest), _resume.left_after(n, cuts), f"n={n} cuts={cuts}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def epochs_seen(out, epochs):
    """What the training script's worlds took of each epoch: from each generation's log, only the
    steps that the next generation's checkpoint covers (the rest it took again after resuming).
    Returns {epoch: Counter of the real samples}."""
    seen = {e: collections.Counter() for e in range(epochs)}
    for log in sorted(out.glob("seen-*.jsonl")):
        generation, rank = (int(x) for x in log.stem.split("-")[1:])
        successor = out / f"resumed-{generation + 1}.json"
        covered = None
        if successor.exists():
            covered = {s["rank"]: (s["epoch"], s["_num_yielded"]) for s in json.loads(successor.read_text())["from"]}
        for line in log.read_text().splitlines():
            step = json.loads(line)
            if covered is not None and (step["epoch"], step["step"]) >= covered[rank]:
                continue
            seen[step["epoch"]].update(step["real"])
    return seen


@unittest.skipIf(MISSING, MISSING or "")
class TorchrunElasticTest(unittest.TestCase):
    """The training script (elastic_train.py) under torchrun with gloo on CPU: 2 ranks, one killed
    mid-epoch, and the job going on with 1."""

    def env(self, run):
        return dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT), USE_LIBUV="0",
                    STOKE_TEST_RUN=str(run))

    def check(self, out):
        seen = epochs_seen(out, 2)
        for e in range(2):
            self.assertEqual(list(range(N)), sorted(seen[e]), f"epoch {e}: a sample missing")
            self.assertEqual({1}, set(seen[e].values()), f"epoch {e}: a sample twice outside the padding")

    def test_a_rank_killed_mid_epoch_and_the_job_restarted_on_one_rank_by_hand(self):
        from test_dataloader import run_two_ranks
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            script = [str(HERE / "elastic_train.py"), str(DATA), str(out), "--die-at", "0,13,1"]
            first = run_two_ranks(script, free_port(), out / "logs-1", self.env(1))
            self.assertNotEqual(0, first.returncode, "rank 1 was to die")
            self.assertTrue((out / "checkpoint.pt").exists(), first.stderr[-3000:])
            port = free_port()
            second = subprocess.run([sys.executable, *script], env=dict(
                self.env(2), RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
                MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)), capture_output=True, text=True, timeout=300)
            self.assertEqual(0, second.returncode, second.stderr[-3000:])
            self.assertIn("from the states of all 2 ranks at steps 12, 12", second.stderr)
            self.check(out)

    def test_a_node_lost_mid_epoch_under_torchruns_elastic_agent_and_the_job_going_on_with_one(self):
        # Two agents (nodes) of one process each, --nnodes=1:2, c10d rendezvous on loopback: the
        # second node's rank kills its agent and itself at step 5; the first agent restarts its
        # worker, which the rendezvous now gives a world of 1, and the script resumes from the
        # checkpoint of step 4, every rank's state in it.
        probe = subprocess.run([sys.executable, "-c", "from torch.distributed import TCPStore; "
                                "TCPStore('127.0.0.1', 0, 1, True)"], env=self.env(0), capture_output=True, text=True)
        if probe.returncode != 0 and "libuv" in probe.stderr:
            self.skipTest("this torch's torchrun cannot start its rendezvous (built without libuv); the restart "
                          "by hand covers it")
        port = free_port()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            agents = []
            for node in range(2):
                agents.append(subprocess.Popen(
                    [sys.executable, "-m", "torch.distributed.run", "--nnodes=1:2", "--nproc_per_node=1",
                     "--rdzv_backend=c10d", f"--rdzv_endpoint=127.0.0.1:{port}", "--rdzv_id=stoke-elastic",
                     "--max_restarts=3", "--monitor_interval=1",
                     # The first agent hosts the store, always: left to torchrun, the one that binds
                     # first does, and on a loaded machine that can be the node then lost with it.
                     f"--rdzv_conf=last_call_timeout=3,join_timeout=120,is_host={int(node == 0)}",
                     "--redirects", "2", "--tee", "2", "--log_dir", str(out / f"logs-{node}"),
                     str(HERE / "elastic_train.py"), str(DATA), str(out), "--die-at", "0,5,1", "--node-lost"],
                    env=self.env(node), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
                time.sleep(0.3)  # the first agent, the store's host, takes rank 0
            outputs = [a.communicate(timeout=600)[0] for a in agents]
            self.assertEqual(0, agents[0].returncode, outputs[0][-3000:])
            self.assertNotEqual(0, agents[1].returncode, "the second node was to be lost")
            resumed = json.loads((out / "resumed-1.json").read_text())
            self.assertEqual(1, resumed["world"], outputs[0][-3000:])
            self.assertEqual([2, 2], [s["world_size"] for s in resumed["from"]])
            self.assertIn("from the states of all 2 ranks at steps 4, 4", outputs[0])
            self.check(out)


if __name__ == "__main__":
    unittest.main()
