"""A consumer that forks keeps its ring: a forked child (``os.fork``, and ``multiprocessing``'s
``fork`` start method, as loader users fork workers) that exits normally, with ``close()``,
``__del__`` and the exit hooks run, neither gives up the parent's seat, nor releases its batches,
nor signals its producer; reading in the child raises, saying to open its own.

Real processes throughout: ``stoke serve`` writing a named ring read with ``stoke.Ring``, and
``stoke.DataLoader``'s own producer. What the parent then reads is checked against the dataset
(every index exactly once), and the seat and the re-delivery counter are read from the ring's
file itself, not through the client under test.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
LAUNCHER = str(CHECKOUT / "stoke")
IMAGES = 40

try:
    import numpy  # noqa: F401
    NUMPY = None
except ImportError:
    NUMPY = "numpy is not installed"
try:
    import torch  # noqa: F401
    TORCH = None
except ImportError:
    TORCH = "torch is not installed"

TMP = None
DATA = None

# Both scenarios share these steps: the parent reads, forks a child with os.fork that tries to
# read and then leaves through the interpreter's normal exit (atexit hooks, finalisers, __del__),
# reads on, forks a child with multiprocessing's fork start method that tries to read and closes
# its copy, and reads the epoch to its end. After each child the parent waits longer than the
# producer's monitor takes to reclaim a detached seat (50 ms), then reads the seat (offset 192)
# and the re-delivery counter (160) from the file.
COMMON = """
import json, multiprocessing, os, struct, sys, time

def header(fd):
    return {"seat": struct.unpack("<q", os.pread(fd, 8, 192))[0],
            "redelivered": struct.unpack("<q", os.pread(fd, 8, 160))[0]}

def child_result(path, result):
    with open(path, "w") as f:
        json.dump(result, f)

def forked(out, try_reading, close):
    # os.fork: the child runs try_reading, then leaves by sys.exit, the interpreter's normal exit.
    pid = os.fork()
    if pid == 0:
        child_result(out + ".os", {"error": try_reading()})
        sys.exit(0)
    _, status = os.waitpid(pid, 0)
    # multiprocessing's fork: its children leave by os._exit, so the child closes its copy itself.
    ctx = multiprocessing.get_context("fork")
    def target():
        child_result(out + ".mp", {"error": try_reading()})
        close()
    p = ctx.Process(target=target)
    p.start()
    p.join(60)
    time.sleep(0.5)  # ten of the producer's monitor intervals: a detached seat would be reclaimed by now
    with open(out + ".os") as f, open(out + ".mp") as g:
        return {"os_fork_exit": os.waitstatus_to_exitcode(status), "mp_exit": p.exitcode,
                "os_fork": json.load(f), "mp": json.load(g)}
"""

RING_SCRIPT = COMMON + """
import subprocess, stoke
data, launcher, path, out = sys.argv[1:5]
serve = subprocess.Popen([launcher, "serve", data, "--ring", path, "--batch-size", "4", "--slots", "4",
                          "--workers", "2", "--status-interval", "0"], stderr=subprocess.PIPE, text=True)
deadline = time.monotonic() + 600
while True:
    try:
        ring = stoke.Ring(path)
        break
    except (FileNotFoundError, stoke.RingFormatError, stoke.ProducerGoneError):
        if serve.poll() is not None or time.monotonic() > deadline:
            raise
        time.sleep(0.05)
fd = os.open(path, os.O_RDONLY)
seen, held = [], []
for _ in range(3):
    batch = ring.next()  # the third stays held (release_on_next): the child's exit must not give it back
    seen += batch.indices.tolist()

def try_reading():
    batch.release()  # the parent's held batch, as a finaliser in the child would: the parent's to release
    try:
        ring.next()
        return None
    except RuntimeError as e:
        return str(e)

result = forked(out, try_reading, ring.close)
result["after_fork"] = header(fd)
result["parent_pid"] = os.getpid()
seen += [i for batch in ring for i in batch.indices.tolist()]
result["seen"] = seen
result["at_end"] = header(fd)
ring.close()
result["serve_exit"] = serve.wait(timeout=120)
result["serve_stderr"] = serve.stderr.read()[-3000:]
print(json.dumps(result))
"""

LOADER_SCRIPT = COMMON + """
import stoke
data, out = sys.argv[1:3]
loader = stoke.DataLoader(data, batch_size=4, with_indices=True, num_workers=2)
it = iter(loader)
seen, kept = [], []
for _ in range(3):
    images, labels, indices = next(it)
    seen += indices.tolist()
    kept.append(images)  # three slots the parent's tensors still view: their finalisers run at the child's exit
fd = loader._producer._fds["ring"]
producer = loader._producer.proc

def try_reading():
    errors = []
    for read in (lambda: next(it), lambda: iter(loader)):
        try:
            read()
            errors.append(None)
        except RuntimeError as e:
            errors.append(str(e))
    return errors

result = forked(out, try_reading, loader.close)
result["after_fork"] = header(fd)
result["parent_pid"] = os.getpid()
result["producer_running"] = producer.poll() is None
del images, labels, indices, kept
seen += [i for _, _, idx in it for i in idx.tolist()]
result["seen"] = seen
result["at_end"] = header(fd)
loader.set_epoch(1)
result["next_epoch"] = sorted(i for _, _, idx in loader for i in idx.tolist())
loader.close()
print(json.dumps(result))
"""


def setUpModule():
    global TMP, DATA
    if NUMPY:
        print(f"[stoke] SKIPPING the fork tests: {NUMPY}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-fork-"))
    DATA = TMP / "data"
    subprocess.run([LAUNCHER, "make-dataset", str(DATA), "--images", str(IMAGES), "--seed", "5", "--classes", "4"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def run_script(script, *args):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT))
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)], env=env,
                         capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        raise AssertionError(f"the script failed ({run.returncode}):\n{run.stderr[-4000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1]), run.stderr


class ForkTest(unittest.TestCase):
    def check_children(self, result, says):
        self.assertEqual(0, result["os_fork_exit"], "the os.fork child exits normally")
        self.assertEqual(0, result["mp_exit"], "the multiprocessing child exits normally")
        for child in ("os_fork", "mp"):
            errors = result[child]["error"]
            for error in errors if isinstance(errors, list) else [errors]:
                self.assertIsNotNone(error, f"reading in the {child} child raised")
                for part in says:
                    self.assertIn(part, error)
        parent = result["parent_pid"]
        self.assertEqual({"seat": parent, "redelivered": 0}, result["after_fork"],
                         "after both children exited the seat is still the parent's and nothing was re-delivered")
        self.assertEqual(list(range(IMAGES)), sorted(result["seen"]), "the epoch: every sample exactly once")
        self.assertEqual(IMAGES, len(result["seen"]), "nothing delivered twice")
        self.assertEqual(0, result["at_end"]["redelivered"])

    @unittest.skipIf(NUMPY, NUMPY or "")
    def test_a_ring_read_by_a_parent_that_forks_stays_the_parents_to_the_end_of_its_epoch(self):
        path = f"/dev/shm/stoke-py-fork-{os.getpid()}"
        try:
            result, stderr = run_script(RING_SCRIPT, DATA, LAUNCHER, path, TMP / "ring-child")
        finally:
            if os.path.lexists(path):
                os.unlink(path)
        self.check_children(result, ["is a fork of it", "attach a Ring of its own"])
        self.assertEqual(result["parent_pid"], result["at_end"]["seat"], "the seat is the parent's until it closes")
        self.assertEqual(0, result["serve_exit"], result["serve_stderr"])
        # The producer names each consumer it saw leave: the parent alone, at its close after the epoch.
        left = re.findall(r"consumer pid (\d+) (?:detached|is gone)", result["serve_stderr"])
        self.assertEqual(set(), set(map(int, left)) - {result["parent_pid"]}, result["serve_stderr"])

    @unittest.skipIf(NUMPY or TORCH, NUMPY or TORCH or "")
    def test_a_dataloader_whose_process_forks_keeps_its_producer_seat_and_batches(self):
        result, stderr = run_script(LOADER_SCRIPT, DATA, TMP / "loader-child")
        self.check_children(result, ["is a fork of it", "create a stoke.DataLoader in the child"])
        self.assertTrue(result["producer_running"], "the children's exits neither stopped nor signalled the producer")
        self.assertEqual(result["parent_pid"], result["at_end"]["seat"])
        self.assertEqual(list(range(IMAGES)), result["next_epoch"], "the producer goes on to the next epoch")


if __name__ == "__main__":
    unittest.main()
