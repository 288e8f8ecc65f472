"""A presigned URL's query string is never printed or stored (run by ./stoke test).

A local HTTP server (ranged GETs, as S3 answers them) serves tar shards written by Python's tarfile,
one with a damaged member, and answers 403 to any request without the signature, so every shard
read proves that the requests carried the whole URL. Then the real processes run over a brace
pattern whose query holds the signature: ``stoke catalog``, ``stoke serve --sample-list-out``, ``stoke
embed``, fetches that fail (a missing shard, a refused signature), and ``stoke.DataLoader`` with its
``skipped`` records, its producer's command line and a restart cache. The reference is the secret
itself: it appears in none of their stderr, stdout, index files, skipped records, command lines,
cache files or output tables, each of which is checked to hold what it should (so no check passes
by being empty). The DataLoader's checks need numpy and torch (they skip without, saying so); the
others run everywhere.
"""

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import zipfile
from pathlib import Path
from urllib.parse import parse_qs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _range_server import RangeServer  # noqa: E402

PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
STOKE = str(CHECKOUT / "stoke")

try:
    import numpy  # noqa: F401
    import torch  # noqa: F401
    MISSING = None
except ImportError as e:
    MISSING = f"{e.name} is not installed"

#: What must never be printed or stored: the signature, and the credential's access key.
SECRET = "deadbeefsecret"
ACCESS_KEY = "AKIAEXAMPLEKEY"
QUERY = (f"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={ACCESS_KEY}%2F20250101%2Fus-east-1%2Fs3"
         f"%2Faws4_request&X-Amz-Expires=3600&X-Amz-Signature={SECRET}")
SHARDS = 3
DAMAGED = "1000"  # the damaged member's key, in shard 1

TMP = None
SERVER = None


class ShardServer(RangeServer):
    """Serves the files of a folder at ``/shards/NAME``; 403 to a request whose query lacks the
    signature. ``requests`` records each request's path and query."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, "/shards/")

    def url(self, pattern: str, query: str = QUERY) -> str:
        return f"{self.base()}{pattern}?{query}"

    def refuse(self, path: str, query: str):
        return None if parse_qs(query).get("X-Amz-Signature") == [SECRET] else (403, "SignatureDoesNotMatch")


def setUpModule():
    global TMP, SERVER
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-secrets-"))
    images = TMP / "images"
    subprocess.run([STOKE, "make-dataset", str(images), "--images", "24", "--seed", "5", "--classes", "3"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = TMP / "shards"
    folder.mkdir()
    files = sorted(images.rglob("*.jpg"))
    for s in range(SHARDS):
        with tarfile.open(folder / f"train-{s}.tar", "w") as tar:
            for i in range(s, len(files), SHARDS):
                tar.add(files[i], arcname=f"{i:04d}.jpg")
                _add(tar, f"{i:04d}.cls", str(i % 3).encode())
            if s == 1:  # one member that is no image: a skipped sample, named in `skipped`
                _add(tar, f"{DAMAGED}.jpg", b"\xff\xd8\xff\xe0 not a JPEG past its marker" * 4)
                _add(tar, f"{DAMAGED}.cls", b"1")
    SERVER = ShardServer(folder)


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    import io

    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def stoke(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([STOKE, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def region_decoder_here():
    """Why this build makes no restart cache copies (its region decoder's library is missing), or None."""
    jar = CHECKOUT / "cli" / "target" / "stoke.jar"
    try:
        with zipfile.ZipFile(jar) as z:
            if "io/stoke/ffm/native/libstoke_jpeg.so" not in z.namelist():
                return f"{jar} holds no libstoke_jpeg.so (built without gcc or libjpeg's headers)"
    except FileNotFoundError:
        return f"{jar} is not built"
    return None


class SecretChecks:
    """What every test here checks: no secret in a text or a folder's files; the requests signed."""

    def setUp(self):
        SERVER.requests.clear()

    def assertNoSecret(self, what: str, text) -> None:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        for secret in (SECRET, ACCESS_KEY, "deadbeef"):
            self.assertNotIn(secret, text, f"{what} carries the URL's query:\n{text[-3000:]}")

    def assertNoSecretInFiles(self, folder: Path) -> int:
        files = [p for p in folder.rglob("*") if p.is_file()]
        for p in files:
            self.assertNoSecret(str(p), p.read_bytes())
        return len(files)

    def assertRequestsWereSigned(self) -> None:
        # The requests themselves use the whole URL: the server refuses any other.
        self.assertTrue(SERVER.requests, "no request reached the server")
        shard_reads = [r for r in SERVER.requests if r.startswith("/shards/train-")]
        self.assertTrue(shard_reads, SERVER.requests)
        for r in shard_reads:
            self.assertIn(f"X-Amz-Signature={SECRET}", r)


class SecretsTest(SecretChecks, unittest.TestCase):
    def test_stoke_index_writes_and_prints_no_query(self):
        out = TMP / "index" / "index.json"
        r = stoke("catalog", SERVER.url("train-{0..2}.tar"), "--out", str(out))
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertRequestsWereSigned()
        self.assertNoSecret("stoke catalog's stderr", r.stderr + r.stdout)
        index = out.read_text()
        self.assertNoSecret(str(out), index)
        urls = [e["url"] for e in json.loads(index)["shardlist"]]
        base = f"http://127.0.0.1:{SERVER.server_address[1]}/shards/"
        self.assertEqual([f"{base}train-{s}.tar" for s in range(SHARDS)], urls)

    def test_a_missing_shard_and_a_refused_signature_are_named_without_the_query(self):
        r = stoke("catalog", SERVER.url("train-{0..3}.tar"), "--out", str(TMP / "missing.json"))
        self.assertNotEqual(0, r.returncode)
        self.assertIn("/shards/train-3.tar?REDACTED", r.stderr)
        self.assertIn("not found (HTTP 404)", r.stderr)
        self.assertNoSecret("a missing shard's message", r.stderr + r.stdout)
        wrong = QUERY.replace(SECRET, "deadbeefwrongsignature")
        r = stoke("catalog", SERVER.url("train-{0..2}.tar", wrong), "--out", str(TMP / "refused.json"))
        self.assertNotEqual(0, r.returncode)
        self.assertIn("?REDACTED", r.stderr)
        self.assertIn("403", r.stderr)
        self.assertNoSecret("a refused request's message", r.stderr + r.stdout)
        self.assertTrue(any("deadbeefwrongsignature" in q for q in SERVER.requests), "sent as given")

    def test_stoke_serve_index_out_names_samples_without_the_query(self):
        index = TMP / "serve-index.json"
        proc = subprocess.Popen(
            [STOKE, "serve", SERVER.url("train-{0..2}.tar"), "--ring", str(TMP / "ring"), "--sample-list-out", str(index),
             "--on-error", "skip", "--batch-size", "4", "--workers", "1", "--epochs", "1", "--crop", "64",
             "--resize", "72", "--status-interval", "0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 240
            while not index.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertTrue(index.exists(), f"no --sample-list-out (status {proc.poll()})")
            text = index.read_text()
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        self.assertNoSecret("stoke serve's stderr", err + out)
        self.assertNoSecret("--sample-list-out", text)
        names = [json.loads(line)[0] for line in text.splitlines()[1:] if line.strip()]
        self.assertEqual(25, len(names), text[:500])
        self.assertIn(f"http://127.0.0.1:{SERVER.server_address[1]}/shards/train-1.tar/{DAMAGED}", names)
        self.assertRequestsWereSigned()

    def test_stoke_embed_writes_no_query(self):
        model = CHECKOUT / "embed" / "models" / "tiny_cnn_u8.onnx"
        for fmt in ("npy", "parquet"):
            out = TMP / f"embed-{fmt}"
            r = stoke("embed", SERVER.url("train-{0..2}.tar"), "--model", str(model), "--out", str(out),
                      "--on-error", "skip", "--format", fmt, "--batch-size", "4", "--workers", "1",
                      "--intra-op-threads", "1")
            self.assertEqual(0, r.returncode, r.stderr[-3000:])
            self.assertNoSecret(f"stoke embed --format {fmt}'s output", r.stderr + r.stdout)
            self.assertGreater(self.assertNoSecretInFiles(out), 1, f"{out} holds no tables")
        self.assertEqual(sorted(f"train-{s}.parquet" for s in range(SHARDS)),
                         sorted(p.name for p in (TMP / "embed-parquet").glob("train-*.parquet")))
        skipped = (TMP / "embed-npy" / "skipped.txt").read_text()
        self.assertIn(DAMAGED, skipped)
        self.assertRequestsWereSigned()


LOADER_SCRIPT = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import stoke
from stoke import _prestart
prestarted = _prestart._PRESTARTED.proc.pid if _prestart._PRESTARTED is not None else None
spec, cache = sys.argv[2], sys.argv[3]
skipped = []
try:
    with stoke.DataLoader(spec, batch_size=4, shuffle=True, seed=3, transform="train", crop=64, num_workers=2,
                          on_error="skip", restart_cache_dir=cache or None) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            for batch in loader:
                skipped += [[s.path, s.reason] for s in batch.skipped]
                # What `ps` shows every user of the machine: the producer's command line.
                with open(f"/proc/{loader._producer.pid}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\\0", b" ").decode()
        print(json.dumps({"skipped": skipped, "dataset": repr(loader.dataset),
                          "samples": [list(s) for s in loader.samples], "cmdline": cmdline,
                          "prestarted": loader._producer.pid == prestarted}))
        deadline = time.monotonic() + 120  # the filler works while the ring is full
        while cache and len(list(Path(cache).rglob("*.stc"))) < 25 and time.monotonic() < deadline:
            time.sleep(0.2)
except stoke.ProducerError as e:
    print(json.dumps({"error": str(e)}))
"""


@unittest.skipIf(MISSING, MISSING or "")
class DataLoaderSecretsTest(SecretChecks, unittest.TestCase):
    def run_loader(self, spec: str, cache: str = "") -> dict:
        r = subprocess.run([sys.executable, "-c", LOADER_SCRIPT, str(PACKAGE_ROOT), spec, cache],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(0, r.returncode, r.stderr[-3000:])
        self.assertNoSecret("the training process's stdout and stderr", r.stdout + r.stderr)
        return json.loads(r.stdout.strip().splitlines()[-1])

    def test_skipped_records_samples_and_the_restart_cache_hold_no_query(self):
        why = region_decoder_here()
        cache = TMP / "restart-cache"
        got = self.run_loader(SERVER.url("train-{0..2}.tar"), "" if why else str(cache))
        self.assertRequestsWereSigned()
        shard1 = f"http://127.0.0.1:{SERVER.server_address[1]}/shards/train-1.tar"
        self.assertEqual([f"{shard1}/{DAMAGED}"] * 2, [path for path, _ in got["skipped"]], got["skipped"])
        self.assertEqual(25, len(got["samples"]))
        self.assertIn(f"{shard1}/{DAMAGED}", [name for name, _ in got["samples"]])
        self.assertIn("?REDACTED", got["dataset"])
        if got["prestarted"]:
            # Started at `import stoke` (stoke/_prestart.py): its command came on its stdin, a pipe.
            self.assertRegex(got["cmdline"], r" prestart \d+ $", "nothing of the dataset on its command line")
        else:
            self.assertRegex(got["cmdline"], r" serve @/dev/fd/\d+ ", "the dataset reaches the producer in a file")
        if why:
            print(f"[stoke] SKIPPING the restart cache's part of test_secrets: {why}", file=sys.stderr)
            return
        entries = sorted(cache.rglob("*.stc"))
        self.assertEqual(25, len(entries), "an entry per member (the damaged one is named too)")
        self.assertNoSecretInFiles(cache)
        # Each entry names its shard by the URL without its query (its ETag tells versions apart).
        names = set()
        for entry in entries:
            blob = entry.read_bytes()
            name_length, = struct.unpack_from("<i", blob, 12)
            names.add(blob[64:64 + name_length].decode())
        base = f"http://127.0.0.1:{SERVER.server_address[1]}/shards/"
        self.assertEqual({f"{base}train-{s}.tar" for s in range(SHARDS)}, names)

    def test_a_failed_fetch_reaches_python_without_the_query(self):
        got = self.run_loader(SERVER.url("train-{0..3}.tar"))
        self.assertIn("error", got, got)
        self.assertIn("train-3.tar?REDACTED", got["error"])


if __name__ == "__main__":
    unittest.main()
