"""A named ring that another user could have planted is refused by ``stoke.Ring``: one owned by
another user, one its group or others can write, a symbolic link (never followed: its target is
unchanged) and a FIFO (refused at once, not waited on). The same file, owned and moded as
``stoke serve`` makes it, is then read to its end: the check refuses what it should and no more.

A real ``stoke serve`` writes the ring; the owner is changed as root (the tests and CI run as root).
"""

import gc
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
LAUNCHER = str(CHECKOUT / "stoke")
sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(HERE))

try:
    import numpy  # noqa: F401
    import stoke
    import _aids  # tests/_aids.py
    MISSING = None
except ImportError as e:
    MISSING = f"{e.name} is not installed"

NOBODY = 65534
IMAGES = 12


def seat(path):
    """The ring's consumer seat (offset 192), read from the file."""
    with open(path, "rb") as f:
        return struct.unpack("<q", os.pread(f.fileno(), 8, 192))[0]


@unittest.skipIf(MISSING, MISSING or "")
class RingOwnerTest(unittest.TestCase):
    def setUp(self):
        os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
        self.tmp = Path(tempfile.mkdtemp(prefix="stoke-py-test-owner-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        data = self.tmp / "data"
        subprocess.run([LAUNCHER, "make-dataset", str(data), "--images", str(IMAGES), "--seed", "3", "--classes", "2"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.path = f"/dev/shm/stoke-py-owner-{os.getpid()}"
        self.link = f"/dev/shm/stoke-py-owner-link-{os.getpid()}"
        self.fifo = f"/dev/shm/stoke-py-owner-fifo-{os.getpid()}"
        for p in (self.path, self.link, self.fifo):
            self.addCleanup(lambda p=p: os.path.lexists(p) and os.unlink(p))
        self.serve = subprocess.Popen([LAUNCHER, "serve", str(data), "--ring", self.path, "--batch-size", "4",
                                       "--status-interval", "0"], stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.stop_serve)
        deadline = time.monotonic() + 600
        while not os.path.exists(self.path):
            self.assertIsNone(self.serve.poll(), "stoke serve exited before its ring was made")
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)

    def stop_serve(self):
        if self.serve.poll() is None:
            self.serve.kill()
        self.serve.wait()
        self.serve.stderr.close()

    def refused(self, path, *says):
        with self.assertRaises(stoke.RingOwnerError) as caught:
            stoke.Ring(path, timeout=1)
        message = str(caught.exception)
        for part in (path,) + says:
            self.assertIn(part, message)
        return message

    def test_a_ring_of_another_user_or_writable_by_others_is_refused_and_the_same_file_owned_right_is_read(self):
        self.assertEqual(0o600, stat.S_IMODE(os.stat(self.path).st_mode), "stoke serve makes its ring 0600")
        if os.geteuid() == 0:
            os.chown(self.path, NOBODY, NOBODY)
            self.refused(self.path, f"owned by uid {NOBODY}", "mode 0600", "uid 0")
            os.chown(self.path, 0, 0)
        else:
            print("[stoke] not root: the ring is not given to another user here", file=sys.stderr)
        for mode in (0o666, 0o620, 0o602):
            os.chmod(self.path, mode)
            self.refused(self.path, f"owned by uid {os.geteuid()}", f"mode {mode:04o}")
        os.chmod(self.path, 0o600)
        self.assertEqual(0, seat(self.path), "no refused attach took the seat")
        with stoke.Ring(self.path) as ring:
            self.assertEqual(os.getpid(), seat(self.path))
            indices = sorted(i for batch in ring for i in batch.indices.tolist())
        self.assertEqual(list(range(IMAGES)), indices)
        self.assertEqual(0, self.serve.wait(timeout=120))

    def test_a_ring_is_detached_once_by_close_by_with_and_by_collection(self):
        ring = stoke.Ring(self.path)
        self.assertEqual((False, os.getpid()), (ring.closed, seat(self.path)))
        ring.close()
        # Detached: the seat marked left (-pid), until the producer takes it back (0).
        self.assertTrue(ring.closed)
        self.assertIn(seat(self.path), (-os.getpid(), 0))
        ring.close()  # closed once: again is nothing
        with stoke.Ring(self.path) as ring:  # once the producer has reclaimed the seat
            self.assertEqual((False, os.getpid()), (ring.closed, seat(self.path)))
        self.assertTrue(ring.closed, "with detaches it")
        self.assertIn(seat(self.path), (-os.getpid(), 0))
        ring = stoke.Ring(self.path)
        self.assertEqual(os.getpid(), seat(self.path))
        del ring
        gc.collect()
        self.assertIn(seat(self.path), (-os.getpid(), 0), "collection detaches what was left attached")

    def test_the_ring_hands_out_ring_batches_and_the_old_name_says_it_is_deprecated_once(self):
        with stoke.Ring(self.path) as ring:
            with ring.next() as batch:
                self.assertIs(stoke.RingBatch, type(batch))
                self.assertTrue(repr(batch).startswith("RingBatch(sequence=0, epoch=0"), repr(batch))
        _aids.forget_what_was_said()
        with self.assertWarnsRegex(stoke.StokeWarning, "stoke.ring.Batch is deprecated: it is stoke.ring.RingBatch"):
            from stoke.ring import Batch
        self.assertIs(stoke.RingBatch, Batch)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once
            self.assertIs(stoke.RingBatch, stoke.ring.Batch)
        self.assertNotIn("Batch", stoke.ring.__all__)
        with self.assertRaises(AttributeError):
            stoke.ring.Batches

    def test_a_link_planted_at_a_rings_path_is_not_followed_and_a_fifo_is_refused_at_once(self):
        os.symlink(self.path, self.link)
        self.refused(self.link, "symbolic link", self.path)
        self.assertEqual(0, seat(self.path), "the link's target, a live ring, was not attached through it")
        victim = self.tmp / "victim"
        victim.write_bytes(b"x" * 8192)
        before = victim.stat()
        os.unlink(self.link)
        os.symlink(victim, self.link)
        self.refused(self.link, "symbolic link")
        self.assertEqual(b"x" * 8192, victim.read_bytes())
        self.assertEqual(before.st_mtime_ns, victim.stat().st_mtime_ns)
        os.mkfifo(self.fifo, 0o600)
        start = time.monotonic()
        self.refused(self.fifo, "not a regular file")
        self.assertLess(time.monotonic() - start, 5, "a FIFO is refused at once, not waited on")


if __name__ == "__main__":
    unittest.main()
