"""stoke.DataLoader(restart_cache_dir=...): lossless restart-marker copies of the original JPEGs, read from
then on (run by ./stoke test).

The references: the same loader without a cache (every batch the same bytes), and PIL, which
decodes every copy in the cache to its original's pixels, over a folder and over tar shards
written by Python's tarfile. Needs numpy and torch; PIL for the last
check (each skips, saying so, without them).
"""

import contextlib
import io
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import unittest
import zipfile
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
    import _aids  # tests/_aids.py
    MISSING = None
except ImportError as e:
    MISSING = f"{e.name} is not installed"

try:
    from PIL import Image
except ImportError:
    Image = None

DATA = None
TMP = None
NO_COPIES = None  # why this build makes no copies, or None
SETTINGS = dict(batch_size=6, shuffle=True, seed=3, transform="train", crop=64, num_workers=2, with_indices=True)


def copier_here():
    """Why this build of Stoke makes no restart-marker copies, or None: the copies are made by its
    region decoder's library, which is built only where gcc and libjpeg's headers were."""
    jar = CHECKOUT / "cli" / "target" / "stoke.jar"
    try:
        with zipfile.ZipFile(jar) as z:
            if "io/stoke/ffm/native/libstoke_jpeg.so" not in z.namelist():
                return f"{jar} holds no libstoke_jpeg.so (built without gcc or libjpeg's headers)"
    except FileNotFoundError:
        return f"{jar} is not built"
    return None


def setUpModule():
    global DATA, TMP, NO_COPIES
    if MISSING:
        print(f"[stoke] SKIPPING the restart cache tests: {MISSING}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-"))
    DATA = TMP / "data"
    # ImageNet-like JPEGs: sizes, qualities, and progressive and grayscale shares as ImageNet's.
    subprocess.run([str(CHECKOUT / "stoke"), "make-dataset", str(DATA), "--images", "30", "--seed", "8",
                    "--classes", "3"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    NO_COPIES = copier_here()  # after make-dataset, which built the jar if it had to
    if NO_COPIES:
        print(f"[stoke] SKIPPING the restart cache tests: {NO_COPIES}", file=sys.stderr)


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def epochs(n, fill=False, data=None, lag=0.0, **more):
    """``n`` epochs of the loader, each a list of (indices, images) in order; ``more`` over
    SETTINGS; ``lag`` seconds a batch, as a model's step, so the ring fills and the workers copy
    what they miss. With ``fill``, the producer is then left idle (its ring full) until its cache
    holds an entry per JPEG: its filler works on the CPU the workers leave."""
    out = []
    with stoke.DataLoader(DATA if data is None else data, **{**SETTINGS, **more}) as loader:
        for e in range(n):
            loader.set_epoch(e)
            batches = []
            for images, _, idx in loader:
                batches.append((idx.tolist(), images.clone()))
                time.sleep(lag)
            out.append(batches)
        if fill:
            wait_for_entries(more["restart_cache_dir"], 30)
    return out


def entries(cache):
    return sorted(p for p in Path(cache).rglob("*.stc"))


def wait_for_epochs(loader, n, timeout=10):
    """The loader's restart-cache stats once they hold ``n`` epochs: the producer's 20 ms loop
    writes an epoch's line soon after its last batch is published."""
    deadline = time.monotonic() + timeout
    while len(loader.restart_cache_stats()) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    return loader.restart_cache_stats()


def wait_for_entries(cache, n, timeout=120):
    deadline = time.monotonic() + timeout
    while len(entries(cache)) < n and time.monotonic() < deadline:
        time.sleep(0.2)
    return entries(cache)


@unittest.skipIf(MISSING, MISSING or "")
class RestartCacheTest(unittest.TestCase):
    def setUp(self):
        if NO_COPIES:
            self.skipTest(NO_COPIES)

    def assertSameEpochs(self, expected, got):
        self.assertEqual(len(expected), len(got))
        for e, (a, b) in enumerate(zip(expected, got)):
            self.assertEqual([i for i, _ in a], [i for i, _ in b], f"epoch {e}: another order")
            for k, ((_, x), (_, y)) in enumerate(zip(a, b)):
                self.assertTrue(torch.equal(x, y), f"epoch {e} batch {k}: other pixels")

    def test_the_cached_epochs_are_the_uncached_ones_in_this_process_and_the_next(self):
        with tempfile.TemporaryDirectory() as cache:
            reference = epochs(3)
            self.assertSameEpochs(reference, epochs(3, fill=True, restart_cache_dir=cache))
            made = entries(cache)
            self.assertEqual(30, len(made), "one entry per JPEG")
            # A new process over the filled cache reads the copies from its first epoch.
            self.assertSameEpochs(reference, epochs(3, restart_cache_dir=cache))
            self.assertEqual(made, entries(cache), "nothing made again")

    def test_two_jobs_filling_one_folder_at_once_read_their_uncached_pixels(self):
        # Another job on the node (another seed, so other crops and order) fills the same folder
        # while this one does. Each takes 50 ms a batch, so the ring fills: workers copy what they
        # miss, fillers what is left, in both processes at once. Every batch of each job is that
        # job's uncached batch, and the folder ends with one entry per JPEG.
        lag = 0.05
        mine, theirs = epochs(3), epochs(3, seed=4)
        child = textwrap.dedent(f"""
            import json, sys, time
            sys.path.insert(0, {str(PACKAGE_ROOT)!r})
            import stoke
            out = []
            with stoke.DataLoader({str(DATA)!r}, **json.loads(sys.argv[1])) as loader:
                for e in range(3):
                    loader.set_epoch(e)
                    for images, _, idx in loader:
                        out.append([idx.tolist(), images.contiguous().numpy().tobytes().hex()])
                        time.sleep({lag})
            print(json.dumps(out))
        """)
        with tempfile.TemporaryDirectory() as cache:
            other = subprocess.Popen(
                [sys.executable, "-c", child, json.dumps({**SETTINGS, "seed": 4, "restart_cache_dir": cache})],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                got = epochs(3, lag=lag, restart_cache_dir=cache)
                out, err = other.communicate(timeout=180)
            finally:
                other.kill()
            self.assertEqual(0, other.returncode, err[-2000:])
            self.assertSameEpochs(mine, got)
            expected = [[i, images.contiguous().numpy().tobytes().hex()] for epoch in theirs for i, images in epoch]
            self.assertEqual(expected, json.loads(out.strip().splitlines()[-1]), "the other job's batches")
            self.assertEqual(30, len(wait_for_entries(cache, 30)), "one entry per JPEG, filed once")

    def test_each_epoch_says_its_misses_then_its_hits_once_on_stderr_and_in_the_stats(self):
        line = "stoke serve: restart cache after epoch "
        said = io.StringIO()
        with tempfile.TemporaryDirectory() as cache, contextlib.redirect_stderr(said):
            with stoke.DataLoader(DATA, **SETTINGS, restart_cache_dir=cache) as loader:
                self.assertEqual([], loader.restart_cache_stats(), "no epoch finished yet")
                for e in range(3):
                    loader.set_epoch(e)
                    self.assertEqual(30, sum(len(idx) for _, _, idx in loader))
                    stats = wait_for_epochs(loader, e + 1)
                    if e == 0:
                        # The first epoch found an empty folder: every read a miss (and the next
                        # epoch's first batches, read ahead, too); then the filler copies them all.
                        self.assertGreaterEqual(stats[0]["misses"], 30, stats)
                        wait_for_entries(cache, 30)
                stats = loader.restart_cache_stats()
        self.assertEqual([0, 1, 2], [s["epoch"] for s in stats[:3]], stats)
        self.assertEqual(0, stats[2]["misses"], f"every copy made before epoch 2: {stats}")
        self.assertGreater(stats[2]["hits"], 0, stats)
        self.assertEqual(30, stats[-1]["total_copied"] + stats[-1]["total_originals"], stats)
        self.assertEqual(stats[-1]["total_filled_bytes"], sum(s["filled_bytes"] for s in stats))
        # The workers' copies are part of the copies, counted in one epoch each.
        self.assertEqual(stats[-1]["total_copied_by_workers"], sum(s["copied_by_workers"] for s in stats))
        for s in stats:
            self.assertLessEqual(s["copied_by_workers"], s["copied"], s)
        lines = [x for x in said.getvalue().splitlines() if x.startswith(line)]
        for s in stats[:3]:
            # Once each, with the counts the stats hold.
            mine = [x for x in lines if x.startswith(f"{line}{s['epoch']}: ")]
            self.assertEqual(1, len(mine), said.getvalue())
            self.assertTrue(mine[0].startswith(f"{line}{s['epoch']}: {s['hits']:,} hits, {s['misses']:,} misses, "),
                            f"{mine[0]} against {s}")
            self.assertIn(f"; {s['copied_by_workers']:,} by the workers as they decoded)", mine[0], s)
        for s in stats:
            self.assertFalse(s["full"], s)
            self.assertIsNone(s["failure"], s)

    def test_a_folder_it_cannot_write_is_said_once_and_each_line_says_why(self):
        # The count's file cannot be made (a folder in its place, as a read-only mount or a full disk
        # refuses it): the first write fails, is said once, and every later epoch's line says why;
        # the batches are the uncached ones.
        line = "stoke serve: restart cache after epoch "
        said = io.StringIO()
        reference = epochs(3)
        with tempfile.TemporaryDirectory() as cache, contextlib.redirect_stderr(said):
            os.mkdir(os.path.join(cache, ".stoke-cache-usage"))
            with stoke.DataLoader(DATA, **SETTINGS, restart_cache_dir=cache) as loader:
                got = []
                for e in range(3):
                    loader.set_epoch(e)
                    got.append([(idx.tolist(), images.clone()) for images, _, idx in loader])
                    # The producer waits with its ring full: its fillers try their first write now.
                    deadline = time.monotonic() + 30
                    while not said.getvalue().count("WARNING: the restart cache") and time.monotonic() < deadline:
                        time.sleep(0.05)
                stats = wait_for_epochs(loader, 3)
            self.assertEqual([], entries(cache), "nothing written")
        self.assertSameEpochs(reference, got)
        self.assertEqual(1, said.getvalue().count("WARNING: the restart cache cannot use "), said.getvalue())
        failure = stats[-1]["failure"]
        self.assertIn(".stoke-cache-usage", failure or "", stats)
        self.assertFalse(stats[-1]["full"], stats)
        last = [x for x in said.getvalue().splitlines() if x.startswith(f"{line}2: ")]
        self.assertEqual(1, len(last), said.getvalue())
        self.assertTrue(last[0].endswith(f"; it writes nothing more ({failure})"), last[0])

    def test_a_loader_without_a_cache_says_nothing_of_one(self):
        said = io.StringIO()
        with contextlib.redirect_stderr(said):
            with stoke.DataLoader(DATA, **SETTINGS) as loader:
                self.assertEqual(30, sum(len(idx) for _, _, idx in loader))
                time.sleep(0.1)  # past the producer's 20 ms loop: a line would be out by now
                self.assertEqual([], loader.restart_cache_stats())
        self.assertNotIn("restart cache", said.getvalue())

    @unittest.skipIf(Image is None, "PIL is not installed")
    def test_pil_decodes_every_copy_to_its_originals_pixels(self):
        with tempfile.TemporaryDirectory() as cache:
            epochs(1, fill=True, restart_cache_dir=cache)
            checked = 0
            for entry in entries(cache):
                blob = entry.read_bytes()
                path_length, = struct.unpack_from("<i", blob, 12)
                content_length, = struct.unpack_from("<q", blob, 40)
                if content_length == 0:
                    continue  # read as it is: it seeks already, or cannot be copied
                path = blob[64:64 + path_length].decode()
                copy = Image.open(__import__("io").BytesIO(blob[64 + path_length:]))
                original = Image.open(DATA / path)
                self.assertEqual((original.size, original.mode), (copy.size, copy.mode), path)
                self.assertEqual(original.tobytes(), copy.tobytes(), f"{path}: PIL decodes the copy otherwise")
                self.assertEqual("JPEG", copy.format)
                self.assertNotIn("progressive", copy.info, f"{path}: the copy is sequential")
                checked += 1
            self.assertGreater(checked, 20)

    def test_tar_shards_of_the_originals_are_cached_member_by_member(self):
        # Written by Python's tarfile, not by Stoke: two shards of the folder's files as they are.
        shards = TMP / "shards"
        shards.mkdir(exist_ok=True)
        files = sorted(p for p in DATA.rglob("*.jpg"))
        for s in range(2):
            with tarfile.open(shards / f"s-{s}.tar", "w") as tar:
                for i in range(s, len(files), 2):
                    tar.add(files[i], arcname=f"{i:03d}.jpg")
                    label = str(i % 3).encode()
                    info = tarfile.TarInfo(f"{i:03d}.cls")
                    info.size = len(label)
                    tar.addfile(info, __import__("io").BytesIO(label))
        spec = str(shards / "s-{0..1}.tar")
        with tempfile.TemporaryDirectory() as cache:
            reference = epochs(2, data=spec)
            self.assertSameEpochs(reference, epochs(2, fill=True, data=spec, restart_cache_dir=cache))
            made = entries(cache)
            self.assertEqual(30, len(made), "one entry per member")
            self.assertSameEpochs(reference, epochs(2, data=spec, restart_cache_dir=cache))
            self.assertEqual(made, entries(cache), "nothing made again")
            if Image is None:
                return
            # Each entry names its shard and the member's place; PIL decodes its copy to the member's pixels.
            checked = 0
            for entry in made:
                blob = entry.read_bytes()
                name_length, = struct.unpack_from("<i", blob, 12)
                size, offset = struct.unpack_from("<qq", blob, 16)
                content_length, = struct.unpack_from("<q", blob, 40)
                if content_length == 0:
                    continue
                shard = blob[64:64 + name_length].decode()
                with open(shard, "rb") as f:
                    f.seek(offset)
                    member = f.read(size)
                copy = Image.open(__import__("io").BytesIO(blob[64 + name_length:]))
                original = Image.open(__import__("io").BytesIO(member))
                self.assertEqual(original.tobytes(), copy.tobytes(), f"{shard} at {offset}")
                checked += 1
            self.assertGreater(checked, 20)

    def test_a_producer_killed_while_filling_leaves_nothing_that_is_served_and_the_next_run_goes_on(self):
        with tempfile.TemporaryDirectory() as cache:
            reference = epochs(2)
            loader = stoke.DataLoader(DATA, **SETTINGS, restart_cache_dir=cache)
            it = iter(loader)
            next(it)
            os.kill(_aids.producer_process(loader).pid, signal.SIGKILL)  # mid-epoch, the filler at work
            _aids.producer_process(loader).wait()
            with self.assertRaises(stoke.ProducerError):
                for _ in it:
                    pass
            loader.close()
            self.assertSameEpochs(reference, epochs(2, restart_cache_dir=cache))
            # The killed producer's copies cut short are removed when the cache is next opened; the
            # next producer, which ended cleanly, finished the copy in hand before it exited.
            self.assertEqual([], [p for p in Path(cache).rglob("*") if p.name.endswith(".tmp")])


NOBODY = 65534

CHILD = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import stoke
settings = json.loads(sys.argv[2])
cache = {} if sys.argv[4] == "-" else {"restart_cache_dir": sys.argv[4]}
with stoke.DataLoader(sys.argv[3], **settings, **cache) as loader:
    producer = loader._producer
    batches = [[idx.tolist(), hashlib.sha256(images.numpy().tobytes()).hexdigest()] for images, _, idx in loader]
producer._reader.join(30)  # its stderr read to the end: the producer has exited
print(json.dumps({"batches": batches, "stderr": list(producer._stderr)}))
"""


def one_epoch_in_a_child(cache_dir, timeout=180):
    """Epoch 0 of the loader over ``DATA`` read by a child Python process, and its producer's last
    stderr lines: a loader that hangs fails the test (subprocess.TimeoutExpired) instead of the run.

    Returns:
        ``([[indices, sha-256 of the batch's pixels], ...], stderr)``.
    """
    r = subprocess.run([sys.executable, "-c", CHILD, str(PACKAGE_ROOT), json.dumps(SETTINGS), str(DATA),
                        "-" if cache_dir is None else str(cache_dir)], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"the child loader failed ({r.returncode}): {r.stderr}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["batches"], "\n".join(out["stderr"])


@unittest.skipIf(MISSING, MISSING or "")
class CacheFolderTest(unittest.TestCase):
    """The cache's folder on a shared machine: what Stoke makes there is the user's alone, read back
    with ``os.stat``; another user's folder is refused, naming it and its owner, unless shared with
    its group on purpose (``cache_shared_with``)."""

    assertSameEpochs = RestartCacheTest.assertSameEpochs

    def setUp(self):
        if NO_COPIES:
            self.skipTest(NO_COPIES)

    def test_the_folder_it_makes_and_every_entry_are_the_users_alone(self):
        with tempfile.TemporaryDirectory() as top:
            cache = Path(top) / "made" / "cache"
            epochs(1, fill=True, restart_cache_dir=cache)
            made = entries(cache)
            self.assertEqual(30, len(made))
            self.assertEqual(0o700, stat.S_IMODE(os.stat(cache).st_mode), oct(os.stat(cache).st_mode))
            self.assertEqual(0o600, stat.S_IMODE(os.stat(cache / ".stoke-cache-usage").st_mode))
            for entry in made:
                self.assertEqual(0o600, stat.S_IMODE(os.stat(entry).st_mode), entry)
                self.assertEqual(0o700, stat.S_IMODE(os.stat(entry.parent).st_mode), entry.parent)
                self.assertEqual(os.geteuid(), os.stat(entry).st_uid)

    @unittest.skipUnless(hasattr(os, "geteuid") and os.geteuid() == 0,
                         "needs root to give a folder to another user (CI runs as root)")
    def test_another_users_folder_is_refused_unless_shared_with_its_group(self):
        with tempfile.TemporaryDirectory() as top:
            theirs = Path(top) / "theirs"
            theirs.mkdir()
            os.chown(theirs, NOBODY, 0)
            os.chmod(theirs, 0o2770)
            with self.assertRaises(stoke.ProducerError) as refused:
                stoke.DataLoader(DATA, **SETTINGS, restart_cache_dir=theirs)
            message = str(refused.exception)
            self.assertIn(f"refusing {theirs} as the restart cache: it belongs to nobody (uid 65534)", message)
            self.assertIn("--cache-shared-with GROUP", message)
            self.assertEqual([], list(theirs.iterdir()), "nothing written into a refused folder")

            reference = epochs(1)
            self.assertEqual([i for i, _ in reference[0]],
                             [i for i, _ in epochs(1, fill=True, restart_cache_dir=theirs, cache_shared_with="root")[0]])
            made = entries(theirs)
            self.assertEqual(30, len(made))
            for entry in made:
                self.assertEqual(0o640, stat.S_IMODE(os.stat(entry).st_mode), entry)
                self.assertEqual(0, os.stat(entry).st_gid, "the folder's group")
                self.assertEqual(0o2770, stat.S_IMODE(os.stat(entry.parent).st_mode), entry.parent)

    def test_a_link_or_a_fifo_planted_in_the_folder_is_never_followed_nor_waited_on(self):
        """A link to someone's file at one entry's name, a FIFO at another's, and in a second folder a
        FIFO at the usage count's name: every epoch is the uncached one, within a bound (a plain open
        of a FIFO waits for a writer forever: the loader runs in a child process, killed past it),
        each planted thing is named by the producer, and the link's target keeps its bytes."""
        with tempfile.TemporaryDirectory() as top:
            cache = Path(top) / "cache"
            epochs(1, fill=True, restart_cache_dir=cache)
            made = entries(cache)
            victim = Path(top) / "victim"
            victim.write_bytes(b"precious")
            made[3].unlink()
            made[3].symlink_to(victim)
            made[7].unlink()
            os.mkfifo(made[7])
            fifo_folder = Path(top) / "fifo"
            fifo_folder.mkdir(mode=0o700)
            usage = fifo_folder / ".stoke-cache-usage"
            os.mkfifo(usage)
            reference = one_epoch_in_a_child(None)
            for folder, said in ((cache, (f"a symbolic link at {made[3]}", f"a FIFO at {made[7]}")),
                                 (fifo_folder, (f"{usage} is a FIFO, not a regular file",))):
                batches, stderr = one_epoch_in_a_child(folder)
                self.assertEqual(reference[0], batches, f"the epoch over {folder} is not the uncached one")
                self.assertTrue(any(s in stderr for s in said), stderr)
            self.assertEqual(b"precious", victim.read_bytes(), "the link's target is unchanged")

    def test_a_group_without_a_folder_to_share_is_refused_in_python(self):
        with self.assertRaisesRegex(ValueError, "cache_shared_with='root' needs restart_cache_dir or shard_cache_dir"):
            stoke.DataLoader(DATA, **SETTINGS, cache_shared_with="root")
        with self.assertRaisesRegex(TypeError, "cache_shared_with must be a group's name"):
            stoke.DataLoader(DATA, **SETTINGS, restart_cache_dir=TMP / "never", cache_shared_with="a/b")


if __name__ == "__main__":
    unittest.main()
