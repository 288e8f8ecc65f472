"""The producer's stall report (``stoke serve --stall-report``), run by ./stoke test.

A local HTTP server serves tar shards and their catalog, and holds the first shard's fetch until the
test lets it go: ``stoke serve`` then publishes nothing while its slots are free, and after a second
it says, once, every thread's state and stack, its worker's fetch among them; once the shard comes,
the batches follow. A ``stoke.DataLoader`` with ``timeout=6`` over the same held shard has the report
printed at 3 s, before its timeout. Then the Python producer's reader: the report's lines reach the
user's terminal, where the producer's other lines stay in its tail.
"""

import contextlib
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
STOKE = str(CHECKOUT / "stoke")
sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(HERE))

from _range_server import RangeServer  # noqa: E402
from stoke import _producer  # noqa: E402


class HeldServer(RangeServer):
    """Holds every request for ``train-0.tar`` until ``let_go`` is set (60 s at most)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.let_go = threading.Event()

    def refuse(self, path: str, query: str):
        if path.endswith("/train-0.tar"):
            self.let_go.wait(60)
        return None


class StallReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp(prefix="stoke-py-test-stall-"))
        images = cls.tmp / "images"
        subprocess.run([STOKE, "make-dataset", str(images), "--images", "16", "--seed", "9", "--classes", "2"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.shards = cls.tmp / "shards"
        cls.shards.mkdir()
        files = sorted(images.rglob("*.jpg"))
        for s in range(2):
            with tarfile.open(cls.shards / f"train-{s}.tar", "w") as tar:
                for i in range(s, len(files), 2):
                    tar.add(files[i], arcname=f"{i:04d}.jpg")
                    label = str(i % 2).encode()
                    info = tarfile.TarInfo(f"{i:04d}.cls")
                    info.size = len(label)
                    tar.addfile(info, io.BytesIO(label))
        subprocess.run([STOKE, "catalog", str(cls.shards)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_a_held_fetch_is_reported_once_with_the_threads_and_the_batches_follow(self) -> None:
        server = HeldServer(self.shards)
        self.addCleanup(server.stop)
        self.addCleanup(server.let_go.set)
        ring = self.tmp / "ring"
        proc = subprocess.Popen([STOKE, "serve", server.base(), "--ring", str(ring), "--batch-size", "4",
                                 "--workers", "1", "--epochs", "1", "--status-interval", "300",
                                 "--stall-report", "1"], stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        lines = []
        seen = threading.Event()

        def read() -> None:
            for line in proc.stderr:
                lines.append(line.rstrip("\n"))
                if line.startswith("stoke serve: stall: no batch published"):
                    seen.set()

        threading.Thread(target=read, daemon=True).start()
        self.assertTrue(seen.wait(90), "no stall report:\n" + "\n".join(lines))
        time.sleep(2.5)  # still held: a stall is said once, not once a second
        server.let_go.set()
        deadline = time.monotonic() + 60
        while not any("batches produced 4/4" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
        text = "\n".join(lines)
        self.assertIn("batches produced 4/4", text, "the batches follow once the shard comes")
        said = [line for line in lines if line.startswith("stoke serve: stall: no batch published")]
        self.assertEqual(1, len(said), text)
        self.assertRegex(said[0], r"no batch published for [12] s while the consumer waits \(0 published; slots: "
                                  r"0 held, [01] filling, [34] free of 4\)")
        report = [line for line in lines if line.startswith("stoke serve: stall: ")]
        threads = [line for line in report if line.startswith('stoke serve: stall: "')]
        self.assertTrue(any('"main" ' in line for line in threads), text)
        # The worker waits in the shard's fetch: a stack names the remote reader.
        self.assertTrue(any(line.startswith("stoke serve: stall:     at ") and "io.stoke.remote" in line
                            for line in report), text)
        self.assertIsNone(proc.poll(), "the report stops nothing: serve waits for its consumer\n" + text)

    def test_a_loader_that_times_out_has_the_producers_report_printed_before(self) -> None:
        import stoke

        server = HeldServer(self.shards)
        self.addCleanup(server.stop)
        self.addCleanup(server.let_go.set)
        self.assertEqual([1, 2, 30, 60, 60], [_producer.stall_report_seconds(t) for t in (0.5, 4, 61, 120, 1e6)])
        printed = io.StringIO()
        with contextlib.redirect_stderr(printed):
            loader = stoke.DataLoader(server.base(), batch_size=4, num_workers=1, timeout=6)
            try:
                with self.assertRaisesRegex(RuntimeError, "DataLoader timed out after 6 seconds"):
                    next(iter(loader))
            finally:
                server.let_go.set()
                loader.close()
        text = printed.getvalue()
        self.assertRegex(text, r"stoke serve: stall: no batch published for 3 s while the consumer waits")
        self.assertIn("io.stoke.remote", text, "the worker's fetch in a stack")

    def test_the_python_producer_prints_the_report_and_keeps_other_lines_in_its_tail(self) -> None:
        producer = _producer.Producer.__new__(_producer.Producer)
        producer._stderr = _producer.collections.deque(maxlen=_producer.STDERR_LINES)
        script = ("import sys; sys.stderr.write('stoke serve: batches produced 1/4\\n"
                  "stoke serve: stall: no batch published for 60 s\\n"
                  "stoke serve: stall: \"stoke-worker-0\" RUNNABLE\\n')")
        producer.proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
        printed = io.StringIO()
        with contextlib.redirect_stderr(printed):
            producer._read_stderr()
        producer.proc.wait()
        self.assertEqual("stoke serve: stall: no batch published for 60 s\n"
                         "stoke serve: stall: \"stoke-worker-0\" RUNNABLE\n", printed.getvalue())
        self.assertEqual(3, len(producer._stderr))


if __name__ == "__main__":
    unittest.main()
