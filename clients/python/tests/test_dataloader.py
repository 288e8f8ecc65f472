"""stoke.DataLoader against torchvision and against itself (run by ./stoke test).

Every test here needs numpy and torch; where they are missing the tests skip and say so. The
producer is the checkout's ./stoke (STOKE_HOME, else the checkout these files lie in).
"""

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))

try:
    import numpy as np
    import torch
    import stoke
    import _aids  # tests/_aids.py
    MISSING = None
except ImportError as e:  # numpy or torch not installed: skip, loudly
    MISSING = f"{e.name} is not installed"

try:
    import torchvision
    from torchvision import transforms
except ImportError:
    torchvision = None

try:  # transforms v2 as the reference recipe's --use-v2 builds it (ToDtype's scale, ToPureTensor): 0.16 and later
    from torchvision.transforms import v2 as V2
    if not hasattr(V2, "ToPureTensor"):
        V2 = None
except ImportError:
    V2 = None

DATA = None
BAD = None
TMP = None
LAUNCHER = str(CHECKOUT / "stoke")
# A PNG whose IHDR is zeros: corrupt where Stoke's PNG decoder runs, else a format this build does not decode.
CUT_PNG = None


def setUpModule():
    global DATA, BAD, TMP, CUT_PNG
    if MISSING:
        print(f"[stoke] SKIPPING the Python DataLoader tests: {MISSING}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-"))
    DATA = TMP / "data"
    subprocess.run([LAUNCHER, "make-dataset", str(DATA), "--images", "45", "--seed", "11", "--classes", "4"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # The same files plus a truncated JPEG and a PNG named .jpg, in class folders of their own order.
    BAD = TMP / "bad"
    shutil.copytree(DATA, BAD)
    first = sorted((BAD / sorted(os.listdir(BAD))[0]).iterdir())[0]
    (BAD / "c_bad").mkdir()
    (BAD / "c_bad" / "cut.jpg").write_bytes(first.read_bytes()[:2000])
    (BAD / "c_bad" / "png.jpg").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    sys.path.insert(0, str(HERE))
    from test_formats import decoder_here
    CUT_PNG = "corrupt" if decoder_here() is None else "format not decoded: PNG"


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def children():
    """This process's child processes' pids: a producer started is one of them until it is reaped."""
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
        return f.read().split()


def producer_files():
    """What a loader of this process still holds or left: its anonymous files (the ring, the index,
    the tuning log, the dataset's list) open here, and any loader file in /dev/shm or the temporary
    folder of this process or of processes that are gone (the tests' own children; a live process
    elsewhere on the machine, another checkout's tests or a soak, has its own)."""
    def ours(name):
        pid = name.split("-")[2]
        return not pid.isdigit() or int(pid) == os.getpid() or not Path(f"/proc/{pid}").exists()
    left = [f for d in ("/dev/shm", tempfile.gettempdir()) for f in os.listdir(d)
            if f.startswith("stoke-py-") and not f.startswith("stoke-py-test-") and ours(f)]
    return sorted(left + anonymous_files(os.getpid()))


def anonymous_files(pid, owner=None):
    """The loader's anonymous files (memfd ``stoke-*-<owner>``) that process ``pid`` has open or mapped."""
    owner = pid if owner is None else owner
    found = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("/memfd:stoke-") and target.split(" ")[0].endswith(f"-{owner}"):
                found.add(target)
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                name = line.split(None, 5)[5].strip() if len(line.split(None, 5)) > 5 else ""
                if name.startswith("/memfd:stoke-") and name.split(" ")[0].endswith(f"-{owner}"):
                    found.add(name)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return sorted(found)


def torchrun_env():
    """The environment for 2 ranks: Debian's torch 2.x is built without libuv, which
    init_process_group's store asks for unless USE_LIBUV=0 (torch 1.13 never reads it)."""
    return dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT), USE_LIBUV="0")


_TORCHRUN_WORKS = None


def run_two_ranks(argv, port, log_dir, env, timeout=300):
    """``torchrun --nproc_per_node 2 argv``, or, where this torch's torchrun cannot start its
    rendezvous (Debian 13's torch 2.6 is built without libuv, and torchrun's agent asks for it
    whatever USE_LIBUV says), the two ranks started as torchrun starts them: RANK, LOCAL_RANK,
    WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT, init_process_group's env://."""
    global _TORCHRUN_WORKS
    if _TORCHRUN_WORKS is None:
        probe = subprocess.run([sys.executable, "-c", "from torch.distributed import TCPStore; "
                                "TCPStore('127.0.0.1', 0, 1, True)"], env=env, capture_output=True, text=True)
        _TORCHRUN_WORKS = probe.returncode == 0 or "libuv" not in probe.stderr
        if not _TORCHRUN_WORKS:
            print("[stoke] this torch's torchrun cannot start (built without libuv): its 2 ranks are started "
                  "as torchrun starts them instead", file=sys.stderr)
    if _TORCHRUN_WORKS:
        # --redirects/--tee name streams that exist: torch 1.13's parsing of 0 ("none") fails on
        # Python 3.11 (its enum iteration skips the zero flag), so stderr goes to files too.
        return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                               str(port), "--redirects", "2", "--tee", "2", "--log_dir", str(log_dir), *argv],
                              env=env, capture_output=True, text=True, timeout=timeout)
    ranks = [subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)))
             for r in range(2)]
    outs = [p.communicate(timeout=timeout) for p in ranks]
    return subprocess.CompletedProcess(argv, max(p.returncode for p in ranks), "".join(o for o, _ in outs),
                                       "".join(e for _, e in outs))


def run_python(code, *args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout)


@unittest.skipIf(MISSING, MISSING or "")
class DataLoaderTest(unittest.TestCase):
    def tearDown(self):
        # Every test's loaders are closed: nothing of theirs may be left, open, mapped or on disk.
        gc.collect()
        deadline = time.monotonic() + 5
        while producer_files() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual([], producer_files())

    def test_each_epoch_delivers_every_sample_exactly_once(self):
        with stoke.DataLoader(DATA, batch_size=8, num_workers=2, shuffle=True, seed=5, with_indices=True) as loader:
            self.assertEqual(45, len(loader.samples))
            self.assertEqual(6, len(loader))
            orders = []
            for epoch in range(3):
                loader.set_epoch(epoch)
                seen = []
                for batch in loader:
                    images, labels, indices = batch
                    self.assertEqual(epoch, batch.epoch)
                    self.assertEqual([], batch.skipped)
                    self.assertEqual(torch.uint8, images.dtype)
                    self.assertEqual((len(indices), 224, 224, 3), tuple(images.shape))
                    self.assertEqual([loader.samples[i][1] for i in indices.tolist()], labels.tolist())
                    seen += indices.tolist()
                self.assertEqual(list(range(45)), sorted(seen), f"epoch {epoch}")
                orders.append(seen)
            self.assertNotEqual(orders[0], orders[1], "shuffled epochs differ")

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_pixels_and_labels_equal_torchvisions_resize_and_center_crop(self):
        reference = torchvision.datasets.ImageFolder(
            str(DATA), transform=transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224)]))
        with stoke.DataLoader(DATA, batch_size=16, num_workers=2, dct_scaling="none", with_indices=True) as loader:
            self.assertEqual([(p, c) for p, c in reference.samples], [(p, c) for p, c in loader.samples])
            checked = 0
            for images, labels, indices in loader:
                for j, index in enumerate(indices.tolist()):
                    picture, label = reference[index]
                    expected = torch.from_numpy(np.array(picture.convert("RGB")))
                    self.assertEqual(label, int(labels[j]))
                    self.assertTrue(torch.equal(expected, images[j]), f"sample {index} differs from torchvision's")
                    checked += 1
            self.assertEqual(45, checked)

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_files_in_folders_below_a_class_are_torchvisions_samples_in_its_order(self):
        # torchvision walks each class folder (os.walk, links followed): a folder's own files first,
        # then its sub-folders' in the order of their paths ("sub b" before "sub/deeper").
        jpegs = sorted(Path(DATA).rglob("*.jpg"))[:9]
        root = Path(tempfile.mkdtemp(dir=TMP, prefix="nested-"))
        outside = root.parent / (root.name + "-outside")
        placed = ["cat/z.jpg", "cat/a.jpg", "cat/sub/b.jpg", "cat/sub b/c.jpg", "cat/sub/deeper/d.jpg",
                  "cat/sub/A.JPG", "dog/e.jpg", "dog/x/y/f.jpg"]
        for name, jpeg in zip(placed, jpegs):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(jpeg, root / name)
        (root / "cat/sub/notes.txt").write_text("not an image")
        outside.mkdir()
        shutil.copy(jpegs[8], outside / "o.jpg")
        os.symlink(outside, root / "cat/linked")
        reference = torchvision.datasets.ImageFolder(str(root))
        with stoke.DataLoader(root, batch_size=4, num_workers=1, with_indices=True) as loader:
            self.assertEqual([(p, c) for p, c in reference.samples], [(p, c) for p, c in loader.samples])
            self.assertEqual(9, len(loader.samples))
            seen = []
            for images, labels, indices in loader:
                self.assertEqual([reference.samples[i][1] for i in indices.tolist()], labels.tolist())
                seen += indices.tolist()
            self.assertEqual(list(range(9)), sorted(seen))

    def test_tar_shards_written_by_tarfile_give_the_folders_samples_names_and_pixels(self):
        import io
        import tarfile
        shards = TMP / "shards"
        shards.mkdir(exist_ok=True)
        classes = sorted(d.name for d in DATA.iterdir() if d.is_dir())
        files = [(c, f, label) for label, c in enumerate(classes) for f in sorted((DATA / c).iterdir())]
        for s in range(0, len(files), 20):
            with tarfile.open(shards / f"part-{s // 20:03d}.tar", "w", format=tarfile.PAX_FORMAT) as t:
                for c, f, label in files[s:s + 20]:
                    key = f"{c}/{f.name.split('.')[0]}"
                    t.add(str(f), arcname=key + ".jpg")
                    info = tarfile.TarInfo(key + ".cls")
                    info.size = len(str(label))
                    t.addfile(info, io.BytesIO(str(label).encode()))
        pattern = str(shards / "part-{000..002}.tar")
        with stoke.DataLoader(pattern, batch_size=16, num_workers=2, with_indices=True) as from_shards, \
                stoke.DataLoader(DATA, batch_size=16, num_workers=2, with_indices=True) as from_folder:
            self.assertEqual(45, len(from_shards.samples))
            for i, (c, f, label) in enumerate(files):
                self.assertEqual(f"{shards}/part-{i // 20:03d}.tar/{c}/{f.name.split('.')[0]}", from_shards.name(i))
                self.assertEqual(label, from_shards.samples[i][1])
            for (a, la, ia), (b, lb, ib) in zip(from_shards, from_folder):
                self.assertEqual(ia.tolist(), ib.tolist())
                self.assertEqual(la.tolist(), lb.tolist())
                self.assertTrue(torch.equal(a, b), "shard pixels differ from the folder's")

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_parquet_in_the_hubs_layout_gives_torchvisions_pixels_of_the_same_images(self):
        parquet = TMP / "parquet"
        subprocess.run([LAUNCHER, "make-dataset", str(parquet), "--images", "45", "--seed", "11", "--classes", "4",
                        "--format", "parquet", "--rows-per-file", "20", "--rows-per-group", "8"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        reference = torchvision.datasets.ImageFolder(
            str(DATA), transform=transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224)]))
        pattern = str(parquet / "train-*-of-00003.parquet")
        with stoke.DataLoader(pattern, batch_size=16, num_workers=2, dct_scaling="none", with_indices=True) as loader:
            checked = []
            for images, labels, indices in loader:
                for j, index in enumerate(indices.tolist()):
                    picture, label = reference[index]
                    self.assertEqual(label, int(labels[j]))
                    expected = torch.from_numpy(np.array(picture.convert("RGB")))
                    self.assertTrue(torch.equal(expected, images[j]), f"row {index} differs from torchvision's")
                    checked.append(index)
            self.assertEqual(list(range(45)), checked)
        with stoke.DataLoader(str(parquet), batch_size=16, shuffle=True, seed=3, resize=40, crop=32,
                              with_indices=True) as shuffled:
            for epoch in range(2):
                shuffled.set_epoch(epoch)
                seen = [i for _, _, indices in shuffled for i in indices.tolist()]
                self.assertEqual(list(range(45)), sorted(seen), f"epoch {epoch}")
                self.assertNotEqual(list(range(45)), seen, "shuffled within windows of row groups")
        # state_dict resumes the epoch exactly where it stopped, in the uninterrupted order.
        resume = dict(batch_size=8, shuffle=True, seed=3, resize=40, crop=32, with_indices=True)
        with stoke.DataLoader(str(parquet), **resume) as loader:
            whole = [i for _, _, indices in loader for i in indices.tolist()]
        with stoke.DataLoader(str(parquet), **resume) as loader:
            it = iter(loader)
            head = [i for _ in range(2) for i in next(it)[2].tolist()]
            state = loader.state_dict()
        with stoke.DataLoader(str(parquet), **resume) as loader:
            loader.load_state_dict(state)
            rest = [i for _, _, indices in loader for i in indices.tolist()]
        self.assertEqual(whole, head + rest)
        with self.assertRaisesRegex(RuntimeError, "label column image is a group"):
            stoke.DataLoader(pattern, label_column="image", batch_size=16)
        with self.assertRaisesRegex(TypeError, "image_column must be a non-empty string"):
            stoke.DataLoader(pattern, image_column=3)

    def test_float32_output_is_torchvisions_to_tensor_and_normalize_of_the_uint8(self):
        with stoke.DataLoader(DATA, batch_size=16, num_workers=2, output="float32") as floats, \
                stoke.DataLoader(DATA, batch_size=16, num_workers=2) as bytes_:
            for (f, _), (b, _) in zip(floats, bytes_):
                mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
                std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
                expected = (b.permute(0, 3, 1, 2).float() / 255 - mean) / std
                self.assertEqual((len(b), 3, 224, 224), tuple(f.shape))
                self.assertTrue(torch.allclose(expected, f, atol=1e-5))

    def test_a_tensor_kept_alive_keeps_its_bytes_and_its_slot(self):
        with stoke.DataLoader(DATA, batch_size=4, num_workers=2, slots=3) as loader:
            it = iter(loader)
            kept, _ = next(it)
            copy = kept.clone()
            view = kept[1:3]  # a view of the slot, held after `kept` goes
            del kept
            for images, _ in it:  # 11 more batches through the 2 other slots
                pass
            self.assertTrue(torch.equal(copy[1:3], view), "the slot under a live tensor was overwritten")
            del view
            # Its slot came back when the last view went: a whole epoch runs through 3 slots again.
            self.assertEqual(12, sum(1 for _ in loader))

    def test_a_batch_the_collector_frees_inside_another_release_gives_its_slot_back_without_a_deadlock(self):
        # A batch's slot goes back from its lease's finaliser, and the collector runs finalisers
        # between any two bytecodes: inside another batch's release on the same thread too. That
        # thread held the ring's release lock, and the nested release waited for it forever. Here the
        # collector runs inside the offer of one batch's release, where a second batch is garbage in
        # a reference cycle; in a child process, so that a deadlock fails the test, not the suite.
        out = run_python("""
            import gc, os, sys, threading
            import stoke
            sys.path.insert(0, sys.argv[2])
            import _aids
            gc.disable()  # the cycle below is collected inside the release, not before
            with stoke.DataLoader(sys.argv[1], batch_size=4, num_workers=1, slots=3) as loader:
                it = iter(loader)
                first, _ = next(it)
                second, _ = next(it)
                del _
                ring = _aids.producer_ring(loader)
                cycle = [first]
                cycle.append(cycle)  # the first batch's last view, in garbage only the collector frees
                del first, cycle
                queue = ring._free
                class CollectingFirst:  # the collector's turn comes inside the offer's commit
                    def offer(self, slot, held=None):
                        ring._free = queue
                        gc.collect()
                        return queue.offer(slot, held)
                ring._free = CollectingFirst()
                box = [second]
                del second
                freeing = threading.Thread(target=box.clear, daemon=True)  # the second's release
                freeing.start()
                freeing.join(30)
                if freeing.is_alive():
                    print("deadlocked", ring.held, flush=True)
                    os._exit(3)
                print("held", ring.held)
                print("rest", sum(1 for _ in it))
        """, DATA, HERE, timeout=120)
        self.assertEqual(0, out.returncode, out.stdout + out.stderr)
        self.assertEqual(["held 0", "rest 10"], out.stdout.split("\n")[:2],
                         "both slots went back, and the epoch's other 10 batches came through them")

    def test_a_keyboard_interrupt_while_a_batch_is_handed_out_loses_no_batch_and_no_slot(self):
        # Ctrl-C, then the same iterator again, as in a notebook. CPython raises the interrupt at a
        # call: here, planted at two of them. In the ring, once the batch is off the ready queue (its
        # slot was then neither held nor free, and the next call got the batch after it); in the
        # loader, once the batch's views are made (the batch was then never handed out, its position
        # passed: lost).
        from unittest import mock
        with stoke.DataLoader(DATA, batch_size=4, num_workers=2, slots=3, with_indices=True) as loader:
            order = [list(range(i, min(i + 4, 45))) for i in range(0, 45, 4)]
            it = iter(loader)
            got = [next(it)[2].tolist()]
            make = stoke.ring.RingBatch.__init__
            armed = [True]

            def interrupted_once(batch, ring, slot):
                if armed and armed.pop():
                    raise KeyboardInterrupt
                make(batch, ring, slot)

            with mock.patch.object(stoke.ring.RingBatch, "__init__", interrupted_once):
                with self.assertRaises(KeyboardInterrupt):
                    next(it)
                got.append(next(it)[2].tolist())
            self.assertEqual(order[:2], got, "the batch taken off the queue comes with the next call")
            wrap = loader._wrap

            def made_then_interrupted(raw):
                loader._wrap = wrap
                wrap(raw)
                raise KeyboardInterrupt

            loader._wrap = made_then_interrupted
            with self.assertRaises(KeyboardInterrupt):
                next(it)
            got += [batch[2].tolist() for batch in it]
            self.assertEqual(order, got, "every batch once, in order: the one interrupted comes next")
            gc.collect()
            self.assertEqual(0, _aids.producer_ring(loader).held, "no slot left held")
            self.assertEqual(12, sum(1 for _ in loader), "and the next epoch runs through all 3 slots")

    def test_a_release_an_interrupt_cut_short_is_made_all_the_same(self):
        # A batch's slot goes back from a finaliser, and a KeyboardInterrupt raised at its call is
        # printed and dropped by Python: the slot was never given back. Two of them held both slots,
        # and the loader said the user's code held every slot.
        from unittest import mock
        _aids.forget_what_was_said()
        with stoke.DataLoader(DATA, batch_size=4, num_workers=2, slots=2, with_indices=True) as loader:
            release = loader._pinning.release_after_copies
            cut = [True, True]

            def cut_short_twice(raw):
                if cut and cut.pop():
                    raise KeyboardInterrupt
                release(raw)

            loader._pinning.release_after_copies = cut_short_twice  # the two batches' finalisers call it
            it = iter(loader)
            held = [next(it), next(it)]
            del loader._pinning.release_after_copies
            seen = [i for batch in held for i in batch[2].tolist()]
            dropped = []
            with mock.patch.object(sys, "unraisablehook", dropped.append):  # where Python prints and drops them
                del held
            self.assertEqual([], cut, "both releases were cut short")
            self.assertEqual([KeyboardInterrupt] * 2, [type(u.exc_value) for u in dropped])
            del dropped  # their tracebacks hold the batches, which view the ring
            with self.assertWarnsRegex(stoke.StokeWarning, r"2 batch\(es\) whose last view was freed without its "
                                                           r"slot going back .* given back now"):
                seen += [i for batch in it for i in batch[2].tolist()]
            self.assertEqual(list(range(45)), seen, "every sample once, through 2 slots")
            gc.collect()
            self.assertEqual(0, _aids.producer_ring(loader).held)

    def test_a_release_under_way_in_another_thread_is_not_taken_for_one_an_interrupt_cut_short(self):
        # A batch's finaliser may run in another thread (autograd's frees a saved input), where its
        # release can wait: here for the ring's lock, as behind another release. Its views are gone
        # and its slot not yet back; the loader's look for releases that never came took it for one
        # at two looks, released it itself and said an interrupt had cut it short, which none had.
        import threading
        _aids.forget_what_was_said()
        with stoke.DataLoader(DATA, batch_size=4, num_workers=2, slots=3, with_indices=True) as loader:
            it = iter(loader)
            images, labels, indices = next(it)
            seen = indices.tolist()
            ring = _aids.producer_ring(loader)
            raw = next(b for b in ring.held_batches() if b.indices.tolist() == seen)
            ring._release_lock.acquire()  # this thread's: the finaliser's release waits for it
            try:
                box = [images, labels, indices]
                del images, labels, indices
                freer = threading.Thread(target=box.clear, daemon=True)
                freer.start()
                self.assertEqual([], _aids.look_for_orphans_once_freed(loader, raw))
                self.assertIn(raw, ring.held_batches(), "left to its finaliser, which is under way")
            finally:
                ring._release_lock.release()
            freer.join(10)
            self.assertNotIn(raw, ring.held_batches(), "its finaliser gave it back")
            seen += [i for batch in it for i in batch[2].tolist()]
            self.assertEqual(list(range(45)), seen, "every sample once")

    def test_a_release_an_interrupt_ends_at_the_free_queue_is_made_once(self):
        # A release took the batch off the ring's held list, then offered its slot to the free queue:
        # a KeyboardInterrupt at that call (CPython raises it at any call) lost the slot, neither held
        # nor free, and the loader waited for a batch the producer had no slot to make. The queue's
        # commit now takes the batch off the list, with no call between: a release cut short before
        # the offer is made again (by the ring's next call, or the batch's finaliser), and one cut
        # short after it is not made twice.
        with stoke.DataLoader(DATA, batch_size=4, num_workers=2, slots=2, with_indices=True,
                              timeout=30) as loader:
            it = iter(loader)
            seen = [i for i in next(it)[2].tolist()]
            ring = _aids.producer_ring(loader)
            queue, offered = ring._free, []

            class Interrupted:  # the interrupt lands at the offer's call, or at its return
                cut = None

                def offer(self, slot, held=None):
                    cut, self.cut = self.cut, None
                    if cut == "before":
                        raise KeyboardInterrupt
                    offered.append(slot)
                    done = queue.offer(slot, held)
                    if cut == "after":
                        raise KeyboardInterrupt
                    return done

            ring._free = interrupted = Interrupted()
            for cut in ("before", "after"):
                images, labels, indices = next(it)
                seen += indices.tolist()
                raw = next(b for b in ring.held_batches() if b.indices.tolist() == indices.tolist())
                interrupted.cut = cut
                with self.assertRaises(KeyboardInterrupt):
                    raw.release()
                self.assertEqual(cut == "before", raw in ring.held_batches(),
                                 f"cut short {cut} the offer: held until the commit, and not after it")
                self.assertEqual(cut == "before", not raw._released)
                following = next(it)  # the ring's next() makes a release an interrupt left waiting
                seen += following[2].tolist()
                self.assertNotIn(raw, ring.held_batches(), f"cut short {cut} the offer: made by the next call")
                del images, labels, indices, raw, following  # the finalisers' releases find it made
            seen += [i for batch in it for i in batch[2].tolist()]
            self.assertEqual(list(range(45)), seen, "every sample once, through 2 slots")
            gc.collect()
            self.assertEqual(0, ring.held)
            self.assertEqual(11, len(offered), "each slot handed out since the first batch offered back once")

    def test_tensors_handed_out_stay_valid_after_the_loader_is_closed(self):
        # close() unmaps the ring only once no batch views it: a batch used afterwards read unmapped
        # memory before (a segmentation fault, or zeros where the pages had been reused).
        with stoke.DataLoader(DATA, batch_size=4, num_workers=2) as loader:
            self.assertFalse(loader.closed)
            images, labels = next(iter(loader))
            copy, label_copy = images.clone(), labels.clone()
        self.assertTrue(loader.closed, "with closes it")
        loader.close()  # closed once: again is nothing
        with self.assertRaisesRegex(ValueError, "the loader is closed"):
            iter(loader)
        self.assertTrue(torch.equal(copy, images))
        self.assertTrue(torch.equal(label_copy, labels))
        def ring_mappings():
            with open("/proc/self/maps") as f:
                return [line for line in f if "memfd:stoke-ring" in line]
        self.assertEqual(1, len(ring_mappings()), "the closed loader's ring stays mapped while its batch lives")
        del images
        gc.collect()
        self.assertEqual([], ring_mappings(), "and goes with the batch's last view")

    def test_holding_every_slot_says_so_instead_of_hanging(self):
        with stoke.DataLoader(DATA, batch_size=4, num_workers=2, slots=2) as loader:
            it = iter(loader)
            held = [next(it), next(it)]
            with self.assertRaisesRegex(RuntimeError, r"all 2 ring slots are held.*clone\(\)"):
                next(it)
            del held
            self.assertEqual(4, len(next(it)[0]), "after letting go, the epoch goes on")

    def test_a_failed_batch_raises_sample_error_naming_the_files_and_iteration_goes_on(self):
        with stoke.DataLoader(BAD, batch_size=8, num_workers=2, with_indices=True) as loader:
            self.assertEqual(47, len(loader.samples))
            it = iter(loader)
            delivered, errors = [], []
            while True:
                try:
                    delivered += next(it)[2].tolist()
                except stoke.SampleError as e:
                    errors.append(e)
                except StopIteration:
                    break
            self.assertEqual(1, len(errors))
            names = {Path(s.path).name: s.reason for s in errors[0].samples}
            self.assertEqual({"cut.jpg": "truncated", "png.jpg": CUT_PNG}, names)
            self.assertIn("cut.jpg", str(errors[0]))
            failed_size = 8 if errors[0].batch_index < 5 else 7  # 47 = 5 batches of 8 + 7
            self.assertEqual(47 - failed_size, len(delivered), "every other batch is delivered")
            self.assertEqual(47 - failed_size, len(set(delivered)))

    def test_skip_reports_the_skipped_samples_and_zeroes_them(self):
        with stoke.DataLoader(BAD, batch_size=8, num_workers=2, on_error="skip", with_indices=True) as loader:
            skipped = []
            for batch in loader:
                images, labels, indices = batch
                for s in batch.skipped:
                    self.assertEqual(s.index, int(indices[s.position]))
                    self.assertEqual(0, int(images[s.position].abs().sum()))
                    skipped.append((Path(s.path).name, s.reason))
            self.assertEqual([("cut.jpg", "truncated"), ("png.jpg", CUT_PNG)], sorted(skipped))

    def test_auto_workers_feed_a_slow_loop_with_fewer_threads_and_say_why(self):
        cores = len(os.sched_getaffinity(0))
        if cores < 2:
            self.skipTest("one core: auto has nothing to choose")
        with stoke.DataLoader(DATA, batch_size=4, num_workers="auto", shuffle=True, seed=5, resize=64, crop=56,
                              with_indices=True) as loader:
            self.assertEqual("auto", loader.num_workers)
            seen, epochs = [], 0
            deadline = time.monotonic() + 60
            while loader.active_workers == cores and time.monotonic() < deadline:
                epoch = []
                for images, labels, indices in loader:
                    epoch += indices.tolist()
                    time.sleep(0.05)  # a step that one thread easily keeps up with
                self.assertEqual(list(range(45)), sorted(epoch), "every sample once, whatever the threads")
                epochs += 1
            changes = loader.auto_workers_log()
            self.assertLess(loader.active_workers, cores, changes)
            self.assertEqual(cores, changes[0]["from_workers"])
            self.assertIn("the consumer waited", changes[0]["reason"])
            self.assertEqual(loader.active_workers, changes[-1]["to_workers"])
            # The old name, kept one release: the same log, said once to be deprecated.
            _aids.forget_what_was_said()
            with self.assertWarnsRegex(stoke.StokeWarning, r"tuning\(\) is deprecated: it is auto_workers_log\(\)"):
                self.assertEqual(changes, loader.tuning())
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                self.assertEqual(changes, loader.tuning())

    def test_the_decoding_threads_run_at_worker_nice_and_the_loop_at_its_own_priority(self):
        def nice_values(pid):
            """{thread name: [nice]} for the producer's threads, from /proc."""
            found = {}
            for task in os.listdir(f"/proc/{pid}/task"):
                try:
                    with open(f"/proc/{pid}/task/{task}/comm") as f:
                        name = f.read().strip()
                    with open(f"/proc/{pid}/task/{task}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                found.setdefault(name, []).append(int(fields[19 - 3]))  # field 19 is nice; fields[0] is field 3
            return found

        own = os.getpriority(os.PRIO_PROCESS, 0)
        for asked, expected in ((None, max(own, 19)), (0, own), (7, max(own, 7))):
            kwargs = {} if asked is None else {"worker_nice": asked}
            with stoke.DataLoader(DATA, batch_size=4, num_workers=2, slots=2, **kwargs) as loader:
                next(iter(loader))
                # A worker sets its priority as it starts, which may come after the others filled a batch.
                deadline = time.monotonic() + 10
                while True:
                    threads = nice_values(_aids.producer_process(loader).pid)
                    workers = [n for name, values in threads.items() if name.startswith("stoke-worker-")
                               for n in values]
                    if workers == [expected, expected] or time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
                self.assertEqual([expected, expected], workers, f"worker_nice={asked}: {threads}")
                self.assertEqual([own], threads.get("main", [own]), "the JVM's main thread keeps its priority")
        with self.assertRaises(ValueError):
            stoke.DataLoader(DATA, worker_nice=20)

    def test_a_dead_producer_raises_with_its_stderr_from_its_exit_not_its_heartbeat(self):
        loader = stoke.DataLoader(DATA, batch_size=4, num_workers=1, slots=2)
        try:
            it = iter(loader)
            first = next(it)
            del first
            os.kill(_aids.producer_process(loader).pid, signal.SIGKILL)
            start = time.monotonic()
            with self.assertRaises(stoke.ProducerError) as caught:
                for _ in it:
                    pass
            # The exit is what was seen (its pid gone, or its status), not a heartbeat gone stale.
            self.assertRegex(str(caught.exception), r"is gone|exited with status -9")
            self.assertNotIn("heartbeat", str(caught.exception))
            # Generous on a loaded machine: the fallback it must not wait for is the heartbeat's 5 s.
            self.assertLess(time.monotonic() - start, stoke.ring.PRODUCER_TIMEOUT_MILLIS / 1000)
            self.assertIn("stderr", str(caught.exception))
        finally:
            loader.close()

    def test_a_producer_that_exits_at_start_raises_with_its_last_stderr_line(self):
        # The error waits for the exit and the stderr reader's end of pipe: the line is always there.
        for _ in range(3):
            with self.assertRaisesRegex(stoke.ProducerError, r"exited with status 1 before its ring was ready"
                                                             r"(.|\n)*is neither a folder"):
                stoke.DataLoader(str(TMP / "no-such-folder"), batch_size=2, seed=1)
            self.assertEqual([], producer_files())

    def test_kill_9_of_the_python_process_leaves_no_producer_and_no_file(self):
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
            import sys, time, stoke
            loader = stoke.DataLoader(sys.argv[1], batch_size=4, num_workers=1)
            next(iter(loader))
            print(loader._producer.proc.pid, flush=True)
            time.sleep(600)
            """), str(DATA)], env=dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT)),
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            pid = int(child.stdout.readline())
            # The ring is an anonymous file both processes map: nothing of it is on any file system.
            self.assertIn(f"/memfd:stoke-ring-{child.pid} (deleted)", anonymous_files(pid, owner=child.pid))
            self.assertIn(f"/memfd:stoke-ring-{child.pid} (deleted)", anonymous_files(child.pid))
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            deadline = time.monotonic() + 3
            while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertFalse(Path(f"/proc/{pid}").exists(), "the producer outlived its parent")
            # No process holds or maps the dead loader's files any more: the kernel has freed them.
            holders = {p: anonymous_files(p, owner=child.pid) for p in os.listdir("/proc") if p.isdigit()}
            self.assertEqual({}, {p: f for p, f in holders.items() if f})
            self.assertEqual([], [f for f in os.listdir("/dev/shm") + os.listdir(tempfile.gettempdir())
                                  if f.startswith(f"stoke-py-{child.pid}-") or f.startswith(f"stoke-py-list-{child.pid}-")])
        finally:
            child.kill()
            child.stdout.close()

    def test_state_dict_resumes_in_a_new_process_exactly_once_in_the_uninterrupted_order(self):
        settings = dict(batch_size=4, num_workers=2, shuffle=True, seed=9, transform="train", with_indices=True)
        with stoke.DataLoader(DATA, **settings) as loader:
            loader.set_epoch(2)
            whole = [(idx.tolist(), images.clone()) for images, _, idx in loader]
        with tempfile.TemporaryDirectory() as tmp:
            code = """
                import json, sys, torch, stoke
                data, out, part = sys.argv[1], sys.argv[2], sys.argv[3]
                loader = stoke.DataLoader(data, **json.loads(sys.argv[4]))
                if part == "first":
                    loader.set_epoch(2)
                    for step, (images, labels, idx) in enumerate(loader):
                        torch.save((idx, images.clone()), f"{out}/batch-{step}.pt")
                        if step == 4:
                            break
                    json.dump(loader.state_dict(), open(f"{out}/state.json", "w"))
                else:
                    loader.load_state_dict(json.load(open(f"{out}/state.json")))
                    for step, (images, labels, idx) in enumerate(loader, start=5):
                        torch.save((idx, images.clone()), f"{out}/batch-{step}.pt")
                loader.close()
                """
            for part in ("first", "rest"):
                done = run_python(code, DATA, tmp, part, json.dumps(settings))
                self.assertEqual(0, done.returncode, done.stderr)
            state = json.loads(Path(tmp, "state.json").read_text())
            self.assertEqual((2, 2, 5), (state["version"], state["epoch"], state["_num_yielded"]))
            resumed = [torch.load(f"{tmp}/batch-{k}.pt") for k in range(len(whole))]
            self.assertFalse(os.path.exists(f"{tmp}/batch-{len(whole)}.pt"))
        for k, ((idx, images), (ridx, rimages)) in enumerate(zip(whole, resumed)):
            self.assertEqual(idx, ridx.tolist(), f"batch {k}")
            self.assertTrue(torch.equal(images, rimages), f"batch {k}: the random crops differ")

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_an_image_folder_with_its_eval_transform_gives_torchvisions_pixels(self):
        T = transforms
        cases = [
            ("PILToTensor", [T.PILToTensor()], torch.uint8),
            ("ConvertImageDtype", [T.PILToTensor(), T.ConvertImageDtype(torch.float)], torch.float32),
            ("ToTensor", [T.ToTensor()], torch.float32),
            ("Normalize", [T.ToTensor(), T.Normalize(mean=(0.5, 0.4, 0.3), std=(0.2, 0.3, 0.25))], torch.float32),
            ("presets", [T.PILToTensor(), T.ConvertImageDtype(torch.float),
                         T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))], torch.float32),
        ]
        for name, tail, dtype in cases:
            dataset = torchvision.datasets.ImageFolder(
                str(DATA), transform=T.Compose([T.Resize(232), T.CenterCrop(208)] + tail))
            with stoke.DataLoader(dataset, batch_size=16, num_workers=2, with_indices=True) as loader:
                self.assertIs(dataset, loader.dataset)
                self.assertEqual("none", loader.dct_scaling, "a translated transform is exact")
                self.assertImageFolderPixels(loader, dataset, name, dtype)

    def assertImageFolderPixels(self, loader: Any, reference: Any, name: str, dtype: Any) -> None:
        """Every sample of ``loader`` (with indices, 208x208 CHW) is ``reference[index]``: its label, and its
        pixels exactly (uint8) or within 1e-6 (float32); the 45 of DATA, once each."""
        checked = 0
        for images, labels, indices in loader:
            self.assertEqual((len(indices), 3, 208, 208), tuple(images.shape), name)
            self.assertEqual(dtype, images.dtype, name)
            for j, index in enumerate(indices.tolist()):
                expected, label = reference[index]
                self.assertEqual(label, int(labels[j]))
                if dtype == torch.uint8:
                    self.assertTrue(torch.equal(expected, images[j]), f"{name}: sample {index}")
                else:
                    self.assertTrue(torch.allclose(expected, images[j], atol=1e-6, rtol=0),
                                    f"{name}: sample {index}, max diff {(expected - images[j]).abs().max()}")
                checked += 1
        self.assertEqual(45, checked, name)

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_a_path_with_a_torchvision_transform_gives_its_image_folders_pixels(self):
        T = transforms
        for name, transform, dtype in [
            ("PILToTensor", T.Compose([T.Resize(232), T.CenterCrop(208), T.PILToTensor()]), torch.uint8),
            ("Normalize", T.Compose([T.Resize(232), T.CenterCrop(208), T.ToTensor(),
                                     T.Normalize(mean=(0.5, 0.4, 0.3), std=(0.2, 0.3, 0.25))]), torch.float32),
        ]:
            reference = torchvision.datasets.ImageFolder(str(DATA), transform=transform)
            with stoke.DataLoader(str(DATA), batch_size=16, num_workers=2, with_indices=True,
                                  transform=transform) as loader:
                self.assertEqual(("eval", "none"), (loader.transform, loader.dct_scaling), name)
                self.assertImageFolderPixels(loader, reference, name, dtype)
        with self.assertRaisesRegex(ValueError, "crop given, and transform= is a torchvision transform that "
                                                "already decides it"):
            stoke.DataLoader(str(DATA), batch_size=16, transform=T.Compose([T.Resize(232), T.CenterCrop(208),
                                                                            T.PILToTensor()]), crop=200)

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_a_train_transform_is_translated_with_its_scale_ratio_and_flip(self):
        T = transforms
        # scale (1, 1) and ratio (10, 10) make no try fit, so torchvision falls back to the centred
        # box of ratio 10 on every image, and p=1 always flips: a box and a flip known in advance.
        fixed = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose([
            T.RandomResizedCrop(176, scale=(1.0, 1.0), ratio=(10.0, 10.0)), T.RandomHorizontalFlip(1.0),
            T.PILToTensor()]))
        with stoke.DataLoader(fixed, batch_size=16, num_workers=2, with_indices=True, shuffle=True) as loader:
            self.assertEqual(("train", [1.0, 1.0], [10.0, 10.0], 1.0),
                             (loader.transform, loader.scale, loader.ratio, loader.flip))
            for images, labels, indices in loader:
                self.assertEqual((len(indices), 3, 176, 176), tuple(images.shape))
                for j, index in enumerate(indices.tolist()):
                    self.assertTrue(torch.equal(fixed[index][0], images[j]), f"sample {index}")
        random = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose([
            T.RandomResizedCrop(176, scale=(0.25, 0.9), ratio=(0.5, 2.0)), T.RandomHorizontalFlip(0.3),
            T.ToTensor(), T.Normalize(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))]))
        runs = []
        for _ in range(2):
            with stoke.DataLoader(random, batch_size=16, num_workers=2, with_indices=True, seed=4) as loader:
                self.assertEqual(([0.25, 0.9], [0.5, 2.0], 0.3), (loader.scale, loader.ratio, loader.flip))
                self.assertIn("--scale", stoke._producer.serve_arguments(loader, loader.root, 0, 0, "r", "i", None))
                runs.append([(idx.tolist(), images.clone()) for images, _, idx in loader])
        for (ia, a), (ib, b) in zip(*runs):
            self.assertEqual(ia, ib)
            self.assertEqual((len(ia), 3, 176, 176), tuple(a.shape))
            self.assertTrue(torch.equal(a, b), "the same seed gives the same crops")
            self.assertGreaterEqual(float(a.min()), -1.0)
            self.assertLessEqual(float(a.max()), 1.0)

    @unittest.skipIf(V2 is None, "torchvision.transforms.v2 with ToPureTensor (0.16 or later) is not installed")
    def test_transforms_v2_pipelines_give_torchvisions_pixels(self):
        class Preset:  # the reference recipe's wrapper: __call__ only returns self.transforms(img)
            def __init__(self, transforms):
                self.transforms = transforms

            def __call__(self, img):
                return self.transforms(img)

        normalize = V2.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
        eval_cases = {
            "PILToTensor": ([V2.PILToTensor()], torch.uint8),
            "ToImage": ([V2.ToImage()], torch.uint8),
            "ToImage + ToPureTensor": ([V2.ToImage(), V2.ToPureTensor()], torch.uint8),
            # torchvision's docs' ToImage() + ToDtype(torch.uint8, scale=True), here after the crop: a no-op.
            "ToImage + ToDtype(uint8)": ([V2.ToImage(), V2.ToDtype(torch.uint8, scale=True)], torch.uint8),
            "ToDtype(uint8) then float32": ([V2.ToImage(), V2.ToDtype(torch.uint8), V2.ToPureTensor(),
                                             V2.ToDtype(torch.float32, scale=True), normalize], torch.float32),
            "ConvertImageDtype(uint8)": ([V2.PILToTensor(), V2.ConvertImageDtype(torch.uint8)], torch.uint8),
            "ToDtype(scale=True)": ([V2.PILToTensor(), V2.ToDtype(torch.float32, scale=True)], torch.float32),
            "ConvertImageDtype": ([V2.ToImage(), V2.ConvertImageDtype(torch.float)], torch.float32),
            "the recipe's preset": ([V2.PILToTensor(), V2.ToDtype(torch.float, scale=True), normalize,
                                     V2.ToPureTensor()], torch.float32),
        }
        for name, (tail, dtype) in eval_cases.items():
            for resize, crop in ((232, 208), (256, 224)):
                transform = Preset(V2.Compose([V2.Resize(resize, antialias=True), V2.CenterCrop(crop)] + tail))
                self.check_pixels(f"{name} {resize}/{crop}", transform, dtype, crop)
        # A train crop known in advance (see the v1 test): scale (1, 1) and ratio (10, 10) fall back to
        # the centred box of ratio 10, and p=1 always flips.
        for name, tail, dtype in (("uint8", [V2.ToImage()], torch.uint8),
                                  ("float32", [V2.PILToTensor(), V2.ToDtype(torch.float, scale=True), normalize,
                                               V2.ToPureTensor()], torch.float32)):
            transform = Preset(V2.Compose([V2.RandomResizedCrop(176, scale=(1.0, 1.0), ratio=(10.0, 10.0),
                                                                antialias=True),
                                           V2.RandomHorizontalFlip(1.0)] + tail))
            self.check_pixels(f"train {name}", transform, dtype, 176, shuffle=True)
        refused = {
            "PILToTensor() before the crop": [V2.PILToTensor(), V2.Resize(256), V2.CenterCrop(224)],
            "ToImage() before the crop": [V2.ToImage(), V2.RandomResizedCrop(176), V2.RandomHorizontalFlip()],
            "ToImage() before the crop ": [V2.ToImage(), V2.ToDtype(torch.uint8, scale=True), V2.RandomResizedCrop(176),
                                           V2.ToDtype(torch.float32, scale=True)],
            "ToDtype(torch.int16)": [V2.Resize(256), V2.CenterCrop(224), V2.PILToTensor(),
                                     V2.ToDtype(torch.int16, scale=True)],
            "scale=False": [V2.Resize(256), V2.CenterCrop(224), V2.PILToTensor(), V2.ToDtype(torch.float32)],
            "ToDtype(torch.float16)": [V2.Resize(256), V2.CenterCrop(224), V2.PILToTensor(),
                                       V2.ToDtype(torch.float16, scale=True)],
            "RandAugment here": [V2.Resize(256), V2.CenterCrop(224), V2.RandAugment(), V2.PILToTensor()],
            "Resize(size=None": [V2.Resize(None, max_size=300), V2.CenterCrop(224), V2.PILToTensor()],
        }
        for message, steps in refused.items():
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=V2.Compose(steps))
            with self.assertRaises(ValueError, msg=message) as caught:
                stoke.DataLoader(dataset, batch_size=4)
            self.assertIn(message, str(caught.exception))
            self.assertIn("torch.utils.data.DataLoader", str(caught.exception))

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_bicubic_and_nearest_give_torchvisions_pixels_in_each_spelling(self):
        from PIL import Image
        T = transforms
        normalize = T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
        tails = (([T.PILToTensor()], torch.uint8), ([T.ToTensor(), normalize], torch.float32))
        for name, mode, spelling in (("bicubic", T.InterpolationMode.BICUBIC, T.InterpolationMode.BICUBIC),
                                     ("nearest", T.InterpolationMode.NEAREST, T.InterpolationMode.NEAREST),
                                     ("bicubic", T.InterpolationMode.BICUBIC, Image.BICUBIC),  # PIL's int
                                     ("nearest", T.InterpolationMode.NEAREST, Image.NEAREST)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torchvision's deprecation of PIL's ints
                resize = T.Resize(232, interpolation=spelling)
                # The recipe's crop with a box known in advance (see the train test) and a flip.
                crop = T.RandomResizedCrop(176, scale=(1.0, 1.0), ratio=(10.0, 10.0), interpolation=spelling)
            self.assertEqual(mode, resize.interpolation)
            for tail, dtype in tails:
                label = f"{name} ({spelling!r}) {dtype}"
                self.check_pixels(f"eval {label}", T.Compose([resize, T.CenterCrop(208)] + tail), dtype, 208,
                                  interpolation=name)
                self.check_pixels(f"train {label}", T.Compose([crop, T.RandomHorizontalFlip(1.0)] + tail), dtype,
                                  176, shuffle=True, interpolation=name)
        if V2 is not None:
            for name, mode in (("bicubic", T.InterpolationMode.BICUBIC), ("nearest", T.InterpolationMode.NEAREST)):
                self.check_pixels(f"v2 eval {name}", V2.Compose([V2.Resize(232, interpolation=mode, antialias=True),
                                                                 V2.CenterCrop(208), V2.PILToTensor()]),
                                  torch.uint8, 208, interpolation=name)
                self.check_pixels(f"v2 train {name}", V2.Compose([
                    V2.RandomResizedCrop(176, scale=(1.0, 1.0), ratio=(10.0, 10.0), interpolation=mode),
                    V2.PILToTensor(), V2.ToDtype(torch.float32, scale=True), V2.Normalize((0.5,) * 3, (0.2,) * 3)]),
                    torch.float32, 176, interpolation=name)

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_random_erasing_after_normalize_erases_one_box_of_torchvisions_pixels(self):
        T = transforms
        normalize = T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
        head = [T.Resize(232), T.CenterCrop(208), T.ToTensor(), normalize]
        compat = stoke._torch_compat
        erasing = T.RandomErasing(p=0.25, scale=(0.1, 0.2), ratio=(0.5, 2.0), value=(0.5, -1.0, 2.0))
        self.assertEqual({"erase": 0.25, "erase_scale": [0.1, 0.2], "erase_ratio": [0.5, 2.0],
                          "erase_value": "0.5,-1.0,2.0"},
                         {k: v for k, v in compat.translate_transform(T.Compose(head + [erasing])).items()
                          if k.startswith("erase")})
        if V2 is not None:
            v2 = V2.Compose([V2.RandomResizedCrop(176), V2.PILToTensor(), V2.ToDtype(torch.float32, scale=True),
                             V2.Normalize((0.5,) * 3, (0.5,) * 3), V2.RandomErasing(0.1, value="random"),
                             V2.ToPureTensor()])
            self.assertEqual(("random", 0.1), (compat.translate_transform(v2)["erase_value"],
                                               compat.translate_transform(v2)["erase"]))
        for value in (0, (1.0, 2.0, 3.0), "random"):
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(
                head + [T.RandomErasing(p=1.0, value=value)]))
            plain = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(head))
            runs = []
            for _ in range(2):
                with stoke.DataLoader(dataset, batch_size=16, num_workers=2, with_indices=True, seed=3) as loader:
                    runs.append([(idx.tolist(), images.clone()) for images, _, idx in loader])
            for (ia, a), (ib, b) in zip(*runs):
                self.assertEqual(ia, ib)
                self.assertTrue(torch.equal(a, b), f"value {value!r}: the same seed erases the same boxes")
                for j, index in enumerate(ia):
                    expected = plain[index][0]
                    differs = ((expected - a[j]).abs() > 1e-6).any(0)
                    rows = differs.any(1).nonzero().flatten()
                    cols = differs.any(0).nonzero().flatten()
                    self.assertGreater(len(rows), 0, f"value {value!r}: sample {index} was not erased (p=1)")
                    top, bottom, left, right = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
                    box = a[j][:, top:bottom, left:right]
                    area = (bottom - top) * (right - left) / 208 ** 2
                    self.assertTrue(0.02 - 1e-3 <= area <= 0.33 + 1e-3, f"sample {index}: erased share {area}")
                    outside = a[j].clone()
                    outside[:, top:bottom, left:right] = expected[:, top:bottom, left:right]
                    self.assertLessEqual(float((outside - expected).abs().max()), 1e-6, f"sample {index}")
                    if value == "random":
                        self.assertGreater(float(box.std()), 0.5, f"sample {index}: normal values")
                    else:
                        fill = torch.tensor(value if isinstance(value, tuple) else (value,) * 3).view(3, 1, 1)
                        self.assertTrue(torch.equal(box, fill.expand_as(box)), f"sample {index}: value {value!r}")

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_random_erasing_on_the_uint8_image_gives_torchvisions_pixels_for_the_box_it_drew(self):
        T = transforms
        F = T.functional
        head = [T.Resize(232), T.CenterCrop(208), T.PILToTensor()]
        mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
        to_float = [T.ConvertImageDtype(torch.float), T.Normalize(mean, std)]
        chains = [("v1 uint8", head, T.RandomErasing(p=1.0, value=(124, 116, 104)), [], (124, 116, 104)),
                  ("v1 float32", head, T.RandomErasing(p=1.0, value=127.9), to_float, (127.9,) * 3)]
        if V2 is not None:
            v2_head = [V2.Resize(232, antialias=True), V2.CenterCrop(208), V2.PILToTensor()]
            chains.append(("v2 float32", v2_head, V2.RandomErasing(p=1.0, value=(124, 116, 104)),
                           [V2.ToDtype(torch.float32, scale=True), V2.Normalize(mean, std), V2.ToPureTensor()],
                           (124, 116, 104)))
        self.assertEqual("uint8:124.0,116.0,104.0", stoke._torch_compat.translate_transform(
            T.Compose(chains[0][1] + [chains[0][2]]))["erase_value"])
        for name, first, erasing, tail, value in chains:
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(first + [erasing] + tail))
            plain = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(first))
            then = T.Compose(tail) if tail else (lambda x: x)
            checked = 0
            with stoke.DataLoader(dataset, batch_size=16, num_workers=2, with_indices=True, seed=5) as loader:
                for images, _, indices in loader:
                    for j, index in enumerate(indices.tolist()):
                        image = plain[index][0].as_subclass(torch.Tensor)
                        got = images[j]
                        # The box Stoke drew is where its pixels are not the unerased image's.
                        differs = ((then(image) - got).abs() > 1e-6).any(0) if tail else (image != got).any(0)
                        rows = differs.any(1).nonzero().flatten()
                        cols = differs.any(0).nonzero().flatten()
                        self.assertGreater(len(rows), 0, f"{name}: sample {index} was not erased (p=1)")
                        top, left = int(rows[0]), int(cols[0])
                        h, w = int(rows[-1]) + 1 - top, int(cols[-1]) + 1 - left
                        # torchvision's erase of that box on the uint8 image, then the rest of the chain.
                        expected = then(F.erase(image, top, left, h, w, torch.tensor(value)[:, None, None]))
                        if tail:
                            self.assertLessEqual(float((expected - got).abs().max()), 1e-6, f"{name}: sample {index}")
                        else:
                            self.assertTrue(torch.equal(expected, got), f"{name}: sample {index}")
                        checked += 1
            self.assertEqual(45, checked, name)

    def check_pixels(self, name, transform, dtype, crop, shuffle=False, interpolation="bilinear"):
        """Every sample of the loader over ImageFolder(DATA, transform) is torchvision's own: uint8 byte
        for byte, float32 within 1e-6."""
        dataset = torchvision.datasets.ImageFolder(str(DATA), transform=transform)
        with stoke.DataLoader(dataset, batch_size=16, num_workers=2, with_indices=True, shuffle=shuffle) as loader:
            self.assertEqual(interpolation, loader.interpolation, name)
            checked = 0
            for images, labels, indices in loader:
                self.assertEqual((len(indices), 3, crop, crop), tuple(images.shape), name)
                self.assertEqual(dtype, images.dtype, name)
                for j, index in enumerate(indices.tolist()):
                    expected, label = dataset[index]
                    self.assertIs(torch.Tensor, type(images[j]), name)
                    self.assertEqual(label, int(labels[j]))
                    if dtype == torch.uint8:
                        self.assertTrue(torch.equal(expected.as_subclass(torch.Tensor), images[j]),
                                        f"{name}: sample {index}")
                    else:
                        diff = (expected.as_subclass(torch.Tensor) - images[j]).abs().max()
                        self.assertLessEqual(float(diff), 1e-6, f"{name}: sample {index}")
                    checked += 1
            self.assertEqual(45, checked, name)

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_what_stoke_cannot_do_exactly_is_refused_at_construction_naming_it_and_the_ways_out(self):
        T = transforms
        crop = [T.RandomResizedCrop(64)]
        eval_ = [T.Resize(72), T.CenterCrop(64)]
        tensor = [T.PILToTensor(), T.ConvertImageDtype(torch.float)]
        refused = {
            "AugMix(interpolation=": crop + [T.AugMix(interpolation=T.InterpolationMode.BICUBIC)] + tensor,
            "AutoAugment here": eval_ + [T.AutoAugment()] + tensor,
            "TrivialAugmentWide": crop + tensor + [T.TrivialAugmentWide()],
            "RandomErasing": crop + [T.RandomErasing()] + tensor,
            "RandomErasing(value='random') on a uint8 image": crop + [T.PILToTensor(), T.RandomErasing(value="random")],
            "RandomErasing(value=300) on a uint8 image": crop + [T.PILToTensor(), T.RandomErasing(value=300)],
            "ColorJitter here": eval_ + [T.ColorJitter(0.4, 0.4, 0.4)] + tensor,
            "ColorJitter and TrivialAugmentWide": crop + [T.ColorJitter(0.4), T.TrivialAugmentWide()] + tensor,
            "Lambda": eval_ + [T.Lambda(lambda x: x)] + tensor,
            "interpolation InterpolationMode.LANCZOS": [T.RandomResizedCrop(64, interpolation=T.InterpolationMode.LANCZOS)] + tensor,
            "Resize with interpolation InterpolationMode.BOX": [T.Resize(72, interpolation=T.InterpolationMode.BOX), T.CenterCrop(64)] + tensor,
            "Resize((72, 96))": [T.Resize((72, 96)), T.CenterCrop(64)] + tensor,
            "CenterCrop with size (64, 48)": [T.Resize(72), T.CenterCrop((64, 48))] + tensor,
            "without a CenterCrop": [T.Resize(72)] + tensor,
            "CenterCrop(80) after Resize(72)": [T.Resize(72), T.CenterCrop(80)] + tensor,
            "Normalize on PILToTensor": eval_ + [T.PILToTensor(), T.Normalize((0.5,) * 3, (0.5,) * 3)],
            "ConvertImageDtype(torch.float64)": eval_ + [T.PILToTensor(), T.ConvertImageDtype(torch.float64)],
            "ends with a PIL image": eval_,
            "RandomVerticalFlip": [T.RandomVerticalFlip()] + crop + tensor,
            "max_size": [T.Resize(72, max_size=100), T.CenterCrop(64)] + tensor,
        }
        before = children()
        for name, steps in refused.items():
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(steps))
            with self.assertRaises(ValueError, msg=name) as caught:
                stoke.DataLoader(dataset, batch_size=4, num_workers=1)
            message = str(caught.exception)
            self.assertIn(name, message)
            self.assertIn("batch_transform", message, name)
            self.assertIn("torch.utils.data.DataLoader", message, name)
            self.assertEqual(before, children(), f"{name}: refused before the producer starts")
            self.assertEqual([], producer_files())
        # A wrapper is looked through only when its __call__ just returns self.transforms(img), as
        # the reference recipe's presets do; one that does more is refused, not translated.
        class Rotating:
            def __init__(self):
                self.transforms = T.Compose(eval_ + tensor)

            def __call__(self, img):
                return self.transforms(img.rotate(3))

        with self.assertRaisesRegex(ValueError, "Rotating.*batch_transform"):
            stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=Rotating()))
        # A single transform (no Compose) is read as well, and refused the same way.
        with self.assertRaisesRegex(ValueError, "ColorJitter.*batch_transform"):
            stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=T.ColorJitter(0.1)))
        plain = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(eval_ + tensor))
        plain.target_transform = lambda y: y + 1
        with self.assertRaisesRegex(ValueError, "target_transform.*torch.utils.data.DataLoader"):
            stoke.DataLoader(plain)
        with self.assertRaisesRegex(ValueError, "crop given, and the dataset has a transform"):
            stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(eval_ + tensor)), crop=32)
        # Any file name is taken: its format is told by its bytes when its batch comes (test_formats.py).
        png = type("PngSet", (), {"samples": [("/x/a.png", 0), ("/x/b.tif", 1)]})()
        self.assertEqual([("/x/a.png", 0), ("/x/b.tif", 1)], stoke._torch_compat.dataset_samples(png))
        newline = type("Odd", (), {"samples": [("/x/a\nb.jpg", 0)]})()
        with self.assertRaisesRegex(ValueError, "line break"):
            stoke.DataLoader(newline)
        custom = torchvision.datasets.ImageFolder(str(DATA), loader=lambda p: None)
        with self.assertRaisesRegex(ValueError, "loader"):
            stoke.DataLoader(custom)
        self.assertEqual([], sorted(f for f in os.listdir(tempfile.gettempdir()) if f.startswith(f"stoke-py-list-{os.getpid()}-")))

    def test_any_object_with_samples_is_served_from_a_list_file_paths_with_spaces_included(self):
        spaced = TMP / "with space"
        if not spaced.exists():
            shutil.copytree(DATA, spaced / "a folder")
        files = sorted(spaced.rglob("*.jpg"))
        samples = [(str(f), k % 3) for k, f in enumerate(reversed(files))]  # an order and labels of our own
        dataset = type("Mine", (), {"samples": samples, "__len__": lambda self: len(samples)})()
        with stoke.DataLoader(dataset, batch_size=8, num_workers=2, with_indices=True, resize=64, crop=64) as loader:
            self.assertEqual(samples, loader.samples, "indices stay positions in dataset.samples")
            # The list is an anonymous file, read by the producer as /dev/fd/N: nothing on disk.
            self.assertRegex(loader.root, r"^/dev/fd/\d+$")
            self.assertEqual(f"/memfd:stoke-list-{os.getpid()} (deleted)", os.readlink(f"/proc/self/fd/{loader._list_fd}"))
            seen = []
            for images, labels, indices in loader:
                self.assertEqual([samples[i][1] for i in indices.tolist()], labels.tolist())
                self.assertEqual((len(indices), 64, 64, 3), tuple(images.shape))
                seen += indices.tolist()
            self.assertEqual(list(range(45)), sorted(seen))
        del images, labels, indices  # the last batch's views keep its ring mapped past close()
        gc.collect()
        self.assertEqual([], anonymous_files(os.getpid()), "close() closes the list's file")

    def test_pytorchs_samplers_and_generator_set_the_order(self):
        from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler
        small = dict(batch_size=4, num_workers=1, slots=2, resize=32, crop=32, with_indices=True)
        dataset = stoke.DataLoader(DATA, **small)
        with dataset:
            ds = dataset.dataset
            self.assertEqual((45, 45), (len(ds), len(ds.targets)))
            self.assertEqual(os.fspath(DATA), ds.root)
            self.assertEqual(sorted(d.name for d in DATA.iterdir()), ds.classes)
            self.assertEqual({c: i for i, c in enumerate(ds.classes)}, ds.class_to_idx)
            self.assertEqual([label for _, label in ds.samples], ds.targets)
            self.assertIsInstance(dataset.sampler, SequentialSampler)
            self.assertEqual(4, dataset.batch_size)
        with stoke.DataLoader(DATA, sampler=RandomSampler(ds), **small) as loader:
            self.assertTrue(loader.shuffle)
            self.assertIsInstance(loader.sampler, RandomSampler)
        from unittest import mock
        with mock.patch.dict(os.environ, {"RANK": "1", "WORLD_SIZE": "2"}), \
                stoke.DataLoader(DATA, sampler=SequentialSampler(ds), **small) as loader:
            self.assertEqual((0, 1), (loader.rank, loader.world_size), "torch's SequentialSampler is not sharded")
            self.assertFalse(loader.shuffle)
            self.assertEqual(list(range(45)), [i for _, _, idx in loader for i in idx.tolist()])
        with stoke.DataLoader(DATA, sampler=RandomSampler(ds, generator=torch.Generator().manual_seed(7)),
                              **small) as loader:
            self.assertEqual((True, 7), (loader.shuffle, loader.seed))
        with stoke.DataLoader(DATA, shuffle=True, generator=torch.Generator().manual_seed(11), **small) as loader:
            self.assertEqual(11, loader.seed)
            self.assertIsInstance(loader.sampler, RandomSampler)
        distributed = DistributedSampler(ds, num_replicas=2, rank=1, shuffle=True, seed=5, drop_last=True)
        with stoke.DataLoader(DATA, sampler=distributed, **small) as loader:
            self.assertEqual((1, 2, 5, "drop", True), (loader.rank, loader.world_size, loader.seed, loader.partition_tail,
                                                       loader.shuffle))
            self.assertIs(distributed, loader.sampler)
            self.assertEqual(6, len(loader))  # floor(45 / 2) = 22 samples
            first = [batch.epoch for batch in loader]
            self.assertEqual([0] * 6, first)
            distributed.set_epoch(3)  # the recipe's train_sampler.set_epoch(epoch)
            epochs = {batch.epoch for batch in loader}
            self.assertEqual({3}, epochs, "the sampler's set_epoch is honoured at iter()")
            loader.set_epoch(5)
            self.assertEqual(5, distributed.epoch, "loader.set_epoch keeps the sampler's epoch")
            self.assertEqual("drop", loader.state_dict()["shard_tail"])
        # A stand-in DistributedSampler under world_size > 1: its set_epoch works too.
        with stoke.DataLoader(DATA, rank=0, world_size=2, shuffle=True, **small) as loader:
            self.assertIsInstance(loader.sampler, DistributedSampler)
            loader.sampler.set_epoch(2)
            self.assertEqual({2}, {batch.epoch for batch in loader})

    def test_pytorch_keywords_that_stoke_cannot_honour_are_refused_at_construction(self):
        from torch.utils.data import BatchSampler, DistributedSampler, SequentialSampler
        small = dict(batch_size=4, num_workers=1)
        sequential = SequentialSampler(range(45))
        cases = {
            "batch_sampler option is mutually exclusive": dict(batch_sampler=BatchSampler(sequential, 4, False)),
            "mutually exclusive with shuffle": dict(sampler=sequential, shuffle=True),
            "num_workers option should be non-negative": dict(num_workers=-1),
            "timeout option should be non-negative": dict(timeout=-1),
            "seed=3 given, and the DistributedSampler says 0": dict(
                sampler=DistributedSampler(range(45), num_replicas=2, rank=0), seed=3),
            "slots and prefetch_factor": dict(slots=3, prefetch_factor=2),
            "collate_fn and batch_transform": dict(collate_fn=lambda b: b, batch_transform=lambda x, y: (x, y)),
            "with_indices": dict(collate_fn=lambda b: b, with_indices=True),
        }
        before = children()
        for message, kwargs in cases.items():
            with self.assertRaises(ValueError, msg=message) as caught:
                stoke.DataLoader(DATA, **{**small, **kwargs})
            self.assertIn(message, str(caught.exception))
            self.assertEqual(before, children(), f"{message}: refused before the producer starts")
            self.assertEqual([], producer_files())
        with self.assertRaisesRegex(TypeError, "not a Subset.*torch.utils.data.DataLoader"):
            stoke.DataLoader(torch.utils.data.Subset(range(45), [1, 2]), **small)
        with self.assertRaisesRegex(ValueError, "sampler is over 10 samples, the dataset has 45"):
            stoke.DataLoader(DATA, sampler=SequentialSampler(range(10)), **small)

    def test_keywords_stoke_maps_or_ignores_are_said_once(self):
        _aids.forget_what_was_said()
        small = dict(batch_size=4, resize=32, crop=32)
        expected = {"pin_memory_device is set and pin_memory is not": dict(num_workers=1, pin_memory_device="cuda"),
                    "worker_init_fn is ignored": dict(num_workers=1, worker_init_fn=lambda w: None),
                    "multiprocessing_context is ignored": dict(num_workers=1, multiprocessing_context="spawn"),
                    "pin_memory has no effect without CUDA": dict(num_workers=1, pin_memory=True)}
        if torch.cuda.is_available():
            del expected["pin_memory has no effect without CUDA"]
        for message, kwargs in expected.items():
            with self.assertWarnsRegex(stoke.StokeWarning, message):
                stoke.DataLoader(DATA, **small, **kwargs).close()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                stoke.DataLoader(DATA, **small, **kwargs).close()  # once: not again
        with stoke.DataLoader(DATA, num_workers=2, prefetch_factor=3, persistent_workers=True, **small) as loader:
            self.assertEqual(6, loader.slots, "slots = max(2, num_workers * prefetch_factor)")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # PyTorch's default says nothing: it is Stoke's "auto"
            with stoke.DataLoader(DATA, num_workers=0, **small) as loader:
                self.assertEqual("auto", loader.num_workers)
                self.assertEqual(45, sum(len(b[0]) for b in loader))

    def test_the_signature_is_pytorchs_with_stokes_options_keyword_only_after_it(self):
        import inspect
        # torch.utils.data.DataLoader's, as torch 2.6 writes it.
        torchs = [("dataset", inspect.Parameter.empty), ("batch_size", 1), ("shuffle", None), ("sampler", None),
                  ("batch_sampler", None), ("num_workers", 0), ("collate_fn", None), ("pin_memory", False),
                  ("drop_last", False), ("timeout", 0), ("worker_init_fn", None), ("multiprocessing_context", None),
                  ("generator", None)]
        keyword_only = [("prefetch_factor", None), ("persistent_workers", False), ("pin_memory_device", ""),
                        ("in_order", True)]
        params = list(inspect.signature(stoke.DataLoader).parameters.values())
        self.assertEqual(torchs, [(p.name, p.default) for p in params[:len(torchs)]])
        self.assertTrue(all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params[:len(torchs)]))
        self.assertEqual(keyword_only, [(p.name, p.default) for p in params[len(torchs):len(torchs) + 4]])
        self.assertTrue(all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[len(torchs):-1]),
                        "Stoke's own options come after PyTorch's, keyword-only")
        self.assertEqual(("deprecated", inspect.Parameter.VAR_KEYWORD), (params[-1].name, params[-1].kind),
                         "the deprecated spellings of renamed keywords, and no other")
        # Every parameter this torch has, stoke.DataLoader has under the same name, in the same place.
        theirs = inspect.signature(torch.utils.data.DataLoader).parameters
        positional = [n for n, p in theirs.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        self.assertEqual(positional, [p.name for p in params[:len(positional)]])
        self.assertEqual([], [n for n in theirs if n not in inspect.signature(stoke.DataLoader).parameters])
        # As PyTorch calls it: dataset= by keyword, shuffle positionally, batches of 1 by default.
        with stoke.DataLoader(dataset=DATA, resize=32, crop=32, with_indices=True) as loader:
            self.assertEqual((1, 45), (loader.batch_size, len(loader)))
            # One settings object: the loader keeps no copy of an option, it reads them through.
            names = {n for o in stoke._options.OPTIONS for n in (o.name, o.python, o.deprecated_python) if n}
            self.assertEqual([], sorted(names & set(vars(loader))))
            self.assertEqual((32, 32, "pad", "eval"),
                             (loader.resize, loader.crop, loader.partition_tail, loader.transform))
            self.assertEqual((None, 0.0, True, None), (loader.collate_fn, loader.timeout, loader.in_order,
                                                       loader.batch_sampler))
            for inner in ("options", "chw", "seed_drawn", "no_such"):  # the settings' own, not arguments
                with self.assertRaises(AttributeError, msg=inner):
                    getattr(loader, inner)
            _aids.forget_what_was_said()
            with self.assertWarnsRegex(stoke.StokeWarning, "shard_tail is deprecated: it is partition_tail now") as said:
                self.assertEqual("pad", loader.shard_tail)
            self.assertEqual(__file__, said.filename, "said at the line that reads it")
            self.assertEqual("auto", loader.num_workers, "PyTorch's num_workers=0: Stoke chooses its threads")
        with stoke.DataLoader(DATA, 4, True, None, None, 1, resize=32, crop=32, seed=2, with_indices=True) as loader:
            self.assertEqual((4, True, 1), (loader.batch_size, loader.shuffle, loader.num_workers))
            self.assertEqual(list(range(45)), sorted(i for _, _, idx in loader for i in idx.tolist()))
        with stoke.DataLoader(DATA, batch_size=16, in_order=False, resize=32, crop=32, with_indices=True) as loader:
            self.assertEqual(list(range(45)), [i for _, _, idx in loader for i in idx.tolist()],
                             "in_order=False allows another order; Stoke's stays the sampler's")

    def test_an_unseeded_loader_draws_its_seed_from_torch_as_torch_does_and_resumes_with_the_saved_one(self):
        small = dict(batch_size=4, num_workers=1, resize=32, crop=32, with_indices=True, shuffle=True)

        def order(loader):
            return [i for _, _, idx in loader for i in idx.tolist()]

        torch.manual_seed(3)
        with stoke.DataLoader(DATA, **small) as loader:
            first, seed = order(loader), loader.seed
        torch.manual_seed(3)
        with stoke.DataLoader(DATA, **small) as loader:
            self.assertEqual((seed, first), (loader.seed, order(loader)), "torch.manual_seed(s) repeats a run")
        torch.manual_seed(4)
        with stoke.DataLoader(DATA, **small) as loader:
            self.assertNotEqual(seed, loader.seed, "another torch seed, another order (as torch's RandomSampler)")
            self.assertNotEqual(first, order(loader))
        with stoke.DataLoader(DATA, rank=1, world_size=2, **small) as loader:
            self.assertEqual(0, loader.seed, "ranks share DistributedSampler's default seed")
        with stoke.DataLoader(DATA, seed=7, **small) as loader:
            self.assertEqual(7, loader.seed)
        # A resumed run in a new process draws another seed, and takes the saved one: the rest of the
        # epoch comes in the interrupted run's order.
        torch.manual_seed(3)
        with stoke.DataLoader(DATA, **small) as loader:
            it = iter(loader)
            head = [i for _ in range(3) for i in next(it)[2].tolist()]
            state = loader.state_dict()
        self.assertEqual(first[:12], head)
        torch.manual_seed(5)
        with stoke.DataLoader(DATA, **small) as loader:
            self.assertNotEqual(state["seed"], loader.seed)
            loader.load_state_dict(state)
            self.assertEqual(first[12:], order(loader))
        with stoke.DataLoader(DATA, seed=8, **small) as loader:
            with self.assertRaisesRegex(ValueError, "saved with seed"):
                loader.load_state_dict(state)

    def test_a_bad_argument_is_refused_before_any_file_or_process_exists(self):
        before = children()
        dataset = torchvision.datasets.ImageFolder(str(DATA)) if torchvision is not None else DATA
        cases = {
            "batch_size should be a positive integer value": dict(batch_size=0),
            "batch_size=None": dict(batch_size=None),
            "pins memory for CUDA only": dict(pin_memory=True, pin_memory_device="xpu"),
            "persistent_workers option needs num_workers > 0": dict(persistent_workers=True),
            "prefetch_factor option could only be specified in multiprocessing": dict(prefetch_factor=2),
            "in_order must be True or False": dict(in_order="yes"),
            "output must be": dict(output="float16"),
            "dct_scaling must be": dict(dct_scaling="some"),
            "worker_nice must be": dict(worker_nice=20),
            "rank must be in": dict(rank=3, world_size=2),
            "shuffle_window must be at least 0": dict(shuffle_window=-1),
            "restart_cache_size='1G' needs restart_cache_dir": dict(restart_cache_size="1G"),
        }
        for message, kwargs in cases.items():
            with self.assertRaisesRegex(ValueError, message):
                stoke.DataLoader(dataset, **kwargs)
            self.assertEqual([], producer_files(), message)
            self.assertEqual(before, children(), f"{message}: no producer was started")
        for name in ("worker_nice", "slots", "timeout", "resize", "start_timeout", "shuffle_window"):
            with self.assertRaisesRegex(TypeError, f"^{name} must be"):
                stoke.DataLoader(dataset, **{name: "1"})
            self.assertEqual([], producer_files(), name)
            self.assertEqual(before, children(), f"{name}: no producer was started")
        for name, kwargs in (("restart_cache_dir", dict(restart_cache_dir=5)),
                             ("restart_cache_size", dict(restart_cache_dir="/tmp", restart_cache_size=64))):
            with self.assertRaisesRegex(TypeError, f"^{name} must be"):
                stoke.DataLoader(dataset, **kwargs)
            self.assertEqual([], producer_files(), name)
            self.assertEqual(before, children(), f"{name}: no producer was started")

    @unittest.skipIf(os.geteuid() != 0 or shutil.which("unshare") is None,
                     "needs root and unshare(1) to mount a 64 MB /dev/shm in a private mount namespace")
    def test_a_64_mb_dev_shm_as_containers_have_runs_epochs_and_a_named_ring_fails_at_once_saying_why(self):
        # Docker's and Kubernetes' default /dev/shm is a 64 MB tmpfs: batch 256's uint8 ring (147 MiB)
        # and float32 ring (a 147 MiB slot) do not fit in it, and stoke.DataLoader does not need it.
        big = TMP / "big"
        if not big.exists():
            subprocess.run([LAUNCHER, "make-dataset", str(big), "--images", "300", "--seed", "4", "--classes", "3"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        script = textwrap.dedent("""
            import errno, json, os, subprocess, sys, time, stoke
            out = {"shm_size": os.statvfs("/dev/shm").f_blocks * os.statvfs("/dev/shm").f_frsize, "epochs": {}}
            for output in ("uint8", "float32"):
                with stoke.DataLoader(sys.argv[1], batch_size=256, shuffle=True, output=output, with_indices=True) as loader:
                    for epoch in range(2):
                        loader.set_epoch(epoch)
                        seen = [i for _, _, idx in loader for i in idx.tolist()]
                        out["epochs"][f"{output}-{epoch}"] = sorted(seen) == list(range(300))
            serve = subprocess.run([sys.argv[2], "serve", sys.argv[1], "--ring", "/dev/shm/x", "--batch-size", "256"],
                                   capture_output=True, text=True, timeout=300)
            out["serve"] = [serve.returncode, serve.stderr.strip().splitlines()[-1:]]
            # A named ring that fits (4 slots of 32 images: 19 MiB), then another process fills the
            # tmpfs: the ring's pages were reserved, so the workers never touch one it cannot back
            # (SIGBUS, which aborts the JVM) and every batch comes.
            fits = subprocess.Popen([sys.argv[2], "serve", sys.argv[1], "--ring", "/dev/shm/fits", "--batch-size", "32"],
                                    stderr=subprocess.PIPE, text=True)
            while not os.path.exists("/dev/shm/fits") and fits.poll() is None:
                time.sleep(0.05)
            with open("/dev/shm/filler", "wb") as filler:
                try:
                    while True:
                        filler.write(bytes(1 << 20))
                        filler.flush()
                except OSError as e:
                    out["filled"] = e.errno == errno.ENOSPC
            with stoke.Ring("/dev/shm/fits") as ring:
                out["served"] = sorted(i for batch in ring for i in batch.indices.tolist()) == list(range(300))
            out["fits_exit"] = [fits.wait(timeout=60), fits.stderr.read()[-2000:]]
            os.unlink("/dev/shm/filler")
            out["left"] = os.listdir("/dev/shm")
            print(json.dumps(out))
            """)
        env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT))
        run = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                              'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"', "sh",
                              sys.executable, "-c", script, str(big), LAUNCHER],
                             env=env, capture_output=True, text=True, timeout=600)
        self.assertEqual(0, run.returncode, run.stderr[-3000:])
        out = json.loads(run.stdout.strip().splitlines()[-1])
        self.assertEqual(64 << 20, out["shm_size"])
        self.assertEqual({f"{o}-{e}": True for o in ("uint8", "float32") for e in (0, 1)}, out["epochs"])
        self.assertIn("ring of 4 slots of 147.0 MiB (588.0 MiB) in anonymous shared memory", run.stderr)
        code, (sentence,) = out["serve"]
        self.assertEqual(1, code)
        for part in ("/dev/shm/x does not fit", "154,181,632 bytes", "67,108,864 bytes free", "--batch-size",
                     "--slots", "--shm-size=", "emptyDir", "medium: Memory", "--ring DIR/NAME"):
            self.assertIn(part, sentence)
        self.assertTrue(out["filled"], "the tmpfs was filled up while the named ring was served")
        self.assertEqual(0, out["fits_exit"][0], out["fits_exit"][1])
        self.assertTrue(out["served"], "every sample came through the named ring on a full tmpfs")
        self.assertEqual([], out["left"], "nothing left in /dev/shm")

    def test_pin_memory_registers_the_ring_once_and_gives_a_slot_back_only_after_the_queued_copies(self):
        # No GPU here: CUDA's calls are stood in for, to check what the loader does with them.
        from unittest import mock
        calls = []

        class FakeCudart:
            def cudaHostRegister(self, pointer, size, flags):
                calls.append(("register", pointer, size, flags))
                return 0

            def cudaHostUnregister(self, pointer):
                calls.append(("unregister", pointer))
                return 0

        class FakeEvent:
            done = False

            def __init__(self):
                self.synchronized = False

            def record(self):
                calls.append("record")

            def query(self):
                return FakeEvent.done or self.synchronized

            def synchronize(self):
                calls.append("synchronize")
                self.synchronized = True

        cudart = FakeCudart()
        with mock.patch.object(torch.cuda, "is_available", return_value=True), \
                mock.patch.object(torch.cuda, "cudart", return_value=cudart), \
                mock.patch.object(torch.cuda, "Event", FakeEvent):
            loader = stoke.DataLoader(DATA, batch_size=4, num_workers=1, slots=2, pin_memory=True, resize=32, crop=32)
            with loader:
                base, length = _aids.producer_ring(loader).mapped_region()
                self.assertEqual(len(_aids.producer_ring(loader)._mm), length)
                self.assertEqual(np.frombuffer(_aids.producer_ring(loader)._mm, dtype=np.uint8).ctypes.data, base)
                self.assertEqual([("register", base, length, 0)], calls, "the whole ring, once")
                it = iter(loader)
                images, _ = next(it)
                del images, _
                gc.collect()
                self.assertEqual(["record"], calls[1:], "a freed batch records an event on the stream")
                self.assertEqual(1, _aids.producer_ring(loader).held, "its slot waits for the copies queued before")
                images, _ = next(it)  # one slot is free: no waiting
                self.assertNotIn("synchronize", calls)
                del images, _
                gc.collect()
                images, _ = next(it)  # both slots wait: the oldest is waited for, then given back
                self.assertIn("synchronize", calls)
                del images, _
                gc.collect()
                FakeEvent.done = True
                self.assertEqual(9, sum(1 for _ in it), "the epoch goes on: 12 batches in all")
            self.assertEqual(("unregister", base), calls[-1], "unregistered before the ring is unmapped")

    def test_timeout_bounds_the_wait_for_a_batch(self):
        with stoke.DataLoader(DATA, batch_size=4, num_workers=1, slots=2, timeout=0.5) as loader:
            it = iter(loader)
            deadline = time.monotonic() + 60
            while True:  # the first batch: a loaded machine may take longer than 0.5 s to start decoding
                try:
                    next(it)
                    break
                except RuntimeError as e:
                    if "timed out" not in str(e) or time.monotonic() > deadline:
                        raise
            kept = next(it)  # held while the producer stops: the timeout says this side holds it
            os.kill(_aids.producer_process(loader).pid, signal.SIGSTOP)
            try:
                start = time.monotonic()
                with self.assertRaisesRegex(RuntimeError, "DataLoader timed out after 0.5 seconds; this process holds "
                                                          "1 of the ring's 2 slots$"):
                    for _ in range(12):
                        next(it)
                # 0.5 s asked: generous for a loaded machine, and short of "forever", which a lost timeout is.
                self.assertLess(time.monotonic() - start, 3.0)
            finally:
                os.kill(_aids.producer_process(loader).pid, signal.SIGCONT)
            del kept
            self.assertEqual(4, len(next(it)[0]), "after a timeout the epoch goes on")

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def test_collate_fn_has_pytorchs_meaning_and_batch_transform_sees_the_slot_without_a_copy(self):
        from torch.utils.data import default_collate
        T = transforms
        dataset = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(
            [T.Resize(40), T.CenterCrop(32), T.PILToTensor()]))
        _aids.forget_what_was_said()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # default_collate is free and said nothing
            with stoke.DataLoader(dataset, batch_size=8, num_workers=2, collate_fn=default_collate) as loader:
                images, labels = next(iter(loader))
                self.assertEqual((8, 3, 32, 32), tuple(images.shape))
        received = []

        def collate(samples):
            received.append([(tuple(image.shape), image.dtype, type(label)) for image, label in samples])
            images, labels = default_collate(samples)
            return {"images": images.float(), "labels": labels}

        with self.assertWarnsRegex(stoke.StokeWarning, "collate_fn gets each batch as a list.*batch_transform"):
            loader = stoke.DataLoader(dataset, batch_size=8, num_workers=2, collate_fn=collate)
        with loader:
            out = list(loader)
        self.assertEqual(6, len(out))
        self.assertEqual([((3, 32, 32), torch.uint8, int)] * 8, received[0])
        self.assertEqual(torch.float32, out[0]["images"].dtype)
        self.assertEqual(45, sum(len(o["labels"]) for o in out))
        seen = []

        def on_device(images, labels):
            base, length = _aids.producer_ring(loader).mapped_region()
            seen.append(base <= images.data_ptr() < base + length)
            return images.float().mean(dim=(1, 2, 3)), labels + 100

        with stoke.DataLoader(dataset, batch_size=8, num_workers=2, batch_transform=on_device,
                              with_indices=True) as loader:
            for batch in loader:
                means, labels, indices = batch
                self.assertEqual((len(indices),), tuple(means.shape))
                self.assertTrue(all(label >= 100 for label in labels.tolist()))
                self.assertEqual(len(indices), len(batch.padded))
        self.assertEqual([True] * 6, seen, "batch_transform gets the tensor viewing the ring's slot")

    @unittest.skipIf(torchvision is None, "torchvision is not installed")
    def run_recipe(self, extra, torchrun=False, loaders=("torch", "stoke")):
        """recipe_train.py's result with each loader ({loader: dict}, or the failed run's stderr)."""
        recipe = TMP / "recipe"
        if not recipe.exists():
            for part, images, seed in (("train", 40, 21), ("val", 21, 22)):
                subprocess.run([LAUNCHER, "make-dataset", str(recipe / part), "--images", str(images), "--seed",
                                str(seed), "--classes", "4"], check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        env = torchrun_env()
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            for loader in loaders:
                out = Path(tmp) / f"{loader}.json"
                argv = [str(HERE / "recipe_train.py"), str(recipe), str(out), "--loader", loader, "--batch-size", "8",
                        "--workers", "2", *extra]
                if torchrun:
                    done = run_two_ranks(argv, 29518, Path(tmp) / f"logs-{loader}", env)
                else:
                    done = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True,
                                          timeout=300)
                results[loader] = json.loads(out.read_text()) if done.returncode == 0 else done.stderr
        return results

    def test_the_reference_recipes_calls_give_the_model_the_same_batches_with_either_loader(self):
        crops = ["--train-crop-size", "176", "--val-crop-size", "208", "--val-resize-size", "232"]
        mix = ["--mixup-alpha", "0.2", "--cutmix-alpha", "1.0"]
        cases = {"default flags": ([], 224, 224, []), "crops 176/208/232, mixup and cutmix": (crops + mix, 176, 208, [4])}
        if V2 is not None:  # torchvision 0.16 and later: the recipe's --use-v2
            cases.update({"--use-v2": (["--use-v2"] + crops, 176, 208, []),
                          "--use-v2, mixup and cutmix": (["--use-v2"] + crops + mix, 176, 208, [4]),
                          "--use-v2, default flags": (["--use-v2"], 224, 224, [])})
        else:
            print("[stoke] the recipe's --use-v2 cases need torchvision.transforms.v2 (0.16 or later): skipped here",
                  file=sys.stderr)
        for case, (args, train_crop, val_crop, target_shape) in cases.items():
            results = self.run_recipe(args)
            for loader, result in results.items():
                self.assertIsInstance(result, dict, f"{case}, {loader}: {str(result)[-3000:]}")
            torch_run, stoke_run = results["torch"], results["stoke"]
            self.assertEqual([["torch.float32", [3, train_crop, train_crop]]], stoke_run["train_inputs"], case)
            self.assertEqual([["torch.float32", [3, val_crop, val_crop]]], stoke_run["val_inputs"], case)
            self.assertEqual([["torch.float32" if target_shape else "torch.int64", target_shape]],
                             stoke_run["train_target"], f"{case}: mixup/cutmix targets reach the loss")
            self.assertEqual([["torch.int64", []]], stoke_run["val_target"], case)
            self.assertEqual((40, 5, 21, 21, 3), (stoke_run["train_samples"], stoke_run["train_steps"],
                                                   stoke_run["dataset_len"], stoke_run["num_processed_samples"],
                                                   stoke_run["len_val"]), case)
            self.assertEqual(torch_run, stoke_run, f"{case}: the model, the loss and the counts see the same")
        # --backend tensor resizes tensors with torch's filter: Stoke refuses it by name, at construction.
        refused = self.run_recipe(["--backend", "tensor"] + (["--use-v2"] if V2 is not None else []),
                                  loaders=("stoke",))["stoke"]
        self.assertIn("PILToTensor() before the crop", refused)
        self.assertIn("--backend tensor", refused)
        # The same under torchrun: DistributedSampler for both sets, set_epoch, padded evaluation.
        results = self.run_recipe(crops + mix, torchrun=True)
        for loader, result in results.items():
            self.assertIsInstance(result, dict, f"torchrun, {loader}: {str(result)[-3000:]}")
        torch_run, stoke_run = results["torch"], results["stoke"]
        self.assertEqual("DistributedSampler", stoke_run["sampler"])
        self.assertEqual((20, 3, 22), (stoke_run["train_samples"], stoke_run["train_steps"],
                                       stoke_run["num_processed_samples"]), "rank 0's 20 samples; 21 padded to 22")
        self.assertEqual(torch_run, stoke_run)

    def test_ranks_take_torchs_distributed_sampler_indices_of_stokes_permutation(self):
        from torch.utils.data import DistributedSampler
        small = dict(batch_size=4, num_workers=1, slots=2, shuffle=True, seed=3, with_indices=True, resize=32, crop=32)
        with stoke.DataLoader(DATA, rank=0, world_size=1, **small) as whole:
            whole.set_epoch(1)
            permutation = [i for _, _, idx in whole for i in idx.tolist()]  # Stoke's order of epoch 1
        self.assertEqual(list(range(45)), sorted(permutation))
        for world, tail in ((4, "pad"), (2, "drop")):
            lengths = set()
            for rank in range(world):
                # torch's DistributedSampler over range(N), unshuffled, picks positions of the permutation
                # exactly as it would pick from its own: padding by repeating from the start, or dropping.
                torchs = DistributedSampler(range(45), num_replicas=world, rank=rank, shuffle=False,
                                            drop_last=tail == "drop")
                expected = [permutation[i] for i in torchs]
                expected_padded = [rank + p * world >= 45 for p in range(len(expected))]
                with stoke.DataLoader(DATA, rank=rank, world_size=world, partition_tail=tail, **small) as loader:
                    loader.set_epoch(1)
                    got, padded, steps = [], [], 0
                    for batch in loader:
                        got += batch[2].tolist()
                        padded += batch.padded.tolist()
                        self.assertEqual(torch.bool, batch.padded.dtype)
                        steps += 1
                    self.assertEqual(len(loader), steps)
                    lengths.add(steps)
                self.assertEqual(expected, got, f"rank {rank} of {world}, {tail}")
                self.assertEqual(expected_padded, padded, f"rank {rank} of {world}, {tail}")
            per_rank = -(-45 // world) if tail == "pad" else 45 // world
            self.assertEqual({-(-per_rank // 4)}, lengths, "every rank takes the same number of steps")
        with self.assertRaisesRegex(ValueError, "partition_tail must be 'pad' or 'drop', not 'wrap'"):
            stoke.DataLoader(DATA, partition_tail="wrap")

    def test_ddp_over_a_dataset_that_does_not_split_evenly_finishes_with_equal_steps(self):
        # 41 images on 2 ranks, batch 4: 21 each (the last one padding), 6 steps each. Before, one
        # rank got 21 samples (6 batches), the other 20 (5), and DDP hung on the sixth all-reduce.
        odd = TMP / "odd41"
        if not odd.exists():
            shutil.copytree(DATA, odd)
            for f in sorted(p for p in odd.rglob("*.jpg"))[:4]:
                f.unlink()
        self.assertEqual(41, sum(1 for _ in odd.rglob("*.jpg")))
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "ddp.py"
            script.write_text(textwrap.dedent("""
                import json, sys, torch, torch.distributed as dist, stoke
                from torch.nn.parallel import DistributedDataParallel
                dist.init_process_group("gloo")
                torch.manual_seed(0)
                model = DistributedDataParallel(torch.nn.Linear(3, 4))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
                loader = stoke.DataLoader(sys.argv[1], batch_size=4, num_workers=1, slots=2, shuffle=True, seed=1,
                                          with_indices=True, resize=32, crop=32, output="float32")
                steps, real, padded = 0, [], []
                for epoch in range(2):
                    loader.set_epoch(epoch)
                    for batch in loader:
                        images, labels, idx = batch
                        loss = torch.nn.functional.cross_entropy(model(images.mean(dim=(2, 3))), labels)
                        optimizer.zero_grad()
                        loss.backward()  # an all-reduce: a rank with a step more would wait here forever
                        optimizer.step()
                        steps += 1
                        if epoch == 0:
                            real += idx[~batch.padded].tolist()
                            padded += idx[batch.padded].tolist()
                everyone = [None] * dist.get_world_size()
                dist.all_gather_object(everyone, {"rank": loader.rank, "world": loader.world_size, "steps": steps,
                                                  "len": len(loader), "real": real, "padded": padded})
                if dist.get_rank() == 0:
                    json.dump(everyone, open(sys.argv[2], "w"))
                loader.close()
                dist.destroy_process_group()
                """))
            out = Path(tmp) / "out.json"
            done = run_two_ranks([str(script), str(odd), str(out)], 29517, Path(tmp) / "logs", torchrun_env())
            self.assertEqual(0, done.returncode, done.stderr[-3000:])
            ranks = json.loads(out.read_text())
        self.assertEqual([(0, 2), (1, 2)], [(r["rank"], r["world"]) for r in ranks])
        self.assertEqual([12, 12], [r["steps"] for r in ranks], "both ranks take 6 steps an epoch")
        self.assertEqual([6, 6], [r["len"] for r in ranks])
        real = ranks[0]["real"] + ranks[1]["real"]
        self.assertEqual(list(range(41)), sorted(real), "the non-padded samples are every sample exactly once")
        self.assertEqual([[], 1], [ranks[0]["padded"], len(ranks[1]["padded"])])

if __name__ == "__main__":
    unittest.main()
