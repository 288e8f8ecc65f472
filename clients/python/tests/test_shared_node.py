"""Two ranks of one torchrun on one node share one shard cache (run by ./stoke test).

A local HTTP server (HEAD and ranged GETs with an ETag, as S3 answers them) serves tar shards written
by Python's tarfile and counts the bytes it sends for each shard. One process without a cache reads
the epoch first: the reference, sample by sample (its index, label and pixels). Then ``torchrun
--nproc_per_node 2`` starts two ranks, each a ``stoke.DataLoader(..., shard_cache_dir=FOLDER)`` over
the same URLs and one folder: every sample arrives once between them with the reference's label and
pixels, the server sends each shard's bytes once (not once per rank), and the folder is ``0700`` and
left empty by the last rank out. Needs numpy and torch (skips without, saying so).
"""

import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
STOKE = str(CHECKOUT / "stoke")
sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(HERE))
from _range_server import RangeServer  # noqa: E402

try:
    import numpy  # noqa: F401
    import torch  # noqa: F401
    MISSING = None
except ImportError as e:
    MISSING = f"{e.name} is not installed"

SHARDS = 4
IMAGES = 48

#: One rank's epoch: each sample's index, label and pixels' SHA-256, as JSON lines to argv[3].
READER = textwrap.dedent("""
    import hashlib, json, os, sys, time
    import stoke
    url, folder, out = sys.argv[1], sys.argv[2], sys.argv[3]
    kw = {} if folder == "-" else {"shard_cache_dir": folder}
    loader = stoke.DataLoader(url, batch_size=8, num_workers=1, shard_cache_size="64M", with_indices=True, **kw)
    # Ranks of one job run in step (each training step waits on the others), so neither leaves the
    # node's cache before the other has come: after its first batch, a rank waits for its peers'
    # first batch (a marker beside its output), as a DDP step would. Without this, a rank whose
    # interpreter started late could find the first rank gone and the folder emptied behind it.
    world = int(os.environ.get("WORLD_SIZE", "1"))
    marker = lambda r: os.path.join(os.path.dirname(out) or ".", f"{r}.started")
    with open(out, "w") as f:
        for step, (images, labels, indices) in enumerate(loader):
            if step == 0 and world > 1:
                open(marker(os.environ["RANK"]), "w").close()
                deadline = time.monotonic() + 120
                while not all(os.path.exists(marker(r)) for r in range(world)):
                    if time.monotonic() > deadline:
                        sys.exit("the other rank never delivered its first batch")
                    time.sleep(0.05)
            for i in range(len(labels)):
                f.write(json.dumps({"index": int(indices[i]), "label": int(labels[i]),
                                    "pixels": hashlib.sha256(images[i].numpy().tobytes()).hexdigest()}) + "\\n")
""")


class CountingServer(RangeServer):
    """The shards at ``/NAME``, each with its content's ETag; ``sent`` counts the bytes sent for each."""

    def pattern(self) -> str:
        return f"{self.base()}train-{{0..{SHARDS - 1}}}.tar"

    def etag(self, file: Path, data: bytes) -> str:
        return f'"{hashlib.md5(data).hexdigest()}"'


@unittest.skipIf(MISSING, MISSING or "")
class SharedShardCacheTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp(prefix="stoke-py-test-shared-node-"))
        images = cls.tmp / "images"
        subprocess.run([STOKE, "make-dataset", str(images), "--images", str(IMAGES), "--seed", "9", "--classes", "3"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.shards = cls.tmp / "shards"
        cls.shards.mkdir()
        files = sorted(images.rglob("*.jpg"))
        for s in range(SHARDS):
            with tarfile.open(cls.shards / f"train-{s}.tar", "w") as tar:
                for i in range(s, len(files), SHARDS):
                    tar.add(files[i], arcname=f"{i:04d}.jpg")
                    label = str(i % 3).encode()
                    info = tarfile.TarInfo(f"{i:04d}.cls")
                    info.size = len(label)
                    tar.addfile(info, io.BytesIO(label))
        cls.server = CountingServer(cls.shards)
        cls.script = cls.tmp / "reader.py"
        cls.script.write_text(READER)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def _read(self, lines: Path) -> dict:
        samples = {}
        for line in lines.read_text().splitlines():
            s = json.loads(line)
            self.assertNotIn(s["index"], samples, f"sample {s['index']} delivered twice")
            samples[s["index"]] = (s["label"], s["pixels"])
        return samples

    def test_two_ranks_fetch_each_shard_once_and_read_the_reference_pixels(self) -> None:
        from test_dataloader import run_two_ranks, torchrun_env

        env = torchrun_env()
        reference = self.tmp / "reference.jsonl"
        done = subprocess.run([sys.executable, str(self.script), self.server.pattern(), "-", str(reference)],
                              env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(0, done.returncode, done.stderr)
        expected = self._read(reference)
        self.assertEqual(IMAGES, len(expected))
        sizes = {p.name: p.stat().st_size for p in self.shards.iterdir()}
        self.assertEqual(sizes, self.server.sent, "the reference reads each shard once")

        # Each rank writes its own lines: rank R to OUT/R.jsonl (torchrun sets RANK).
        wrapper = self.tmp / "rank.py"
        wrapper.write_text(textwrap.dedent(f"""
            import os, runpy, sys
            sys.argv = [{str(self.script)!r}, sys.argv[1], sys.argv[2], os.path.join(sys.argv[3], os.environ["RANK"] + ".jsonl")]
            runpy.run_path(sys.argv[0], run_name="__main__")
        """))

        def two_ranks(folder: str, out: Path, port: int) -> list:
            with self.server.lock:
                self.server.sent.clear()
            out.mkdir()
            done = run_two_ranks([str(wrapper), self.server.pattern(), folder, str(out)], port,
                                 self.tmp / f"logs-{out.name}", env)
            self.assertEqual(0, done.returncode, done.stdout + done.stderr)
            return [self._read(out / f"{r}.jsonl") for r in range(2)]

        # Without a shared folder each rank fetches every shard: the server sends each twice.
        two_ranks("-", self.tmp / "apart", 29541)
        self.assertEqual({name: 2 * size for name, size in sizes.items()}, self.server.sent)

        folder = self.tmp / "node-cache"
        ranks = two_ranks(str(folder), self.tmp / "shared", 29542)
        self.assertEqual(set(), set(ranks[0]) & set(ranks[1]), "a sample went to both ranks")
        self.assertEqual(expected, {**ranks[0], **ranks[1]}, "each sample's label and pixels, as read without a cache")
        # The node fetched each shard once between the two ranks.
        self.assertEqual(sizes, self.server.sent)
        self.assertEqual(0o700, stat.S_IMODE(os.stat(folder).st_mode))
        self.assertEqual([], sorted(os.listdir(folder)), "the last rank out removes the shards and their locks")


if __name__ == "__main__":
    unittest.main()
