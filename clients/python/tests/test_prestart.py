"""The producer started at ``import stoke`` (``_prestart``): the first loader of a process runs on it,
and its batches are those of a producer started by the loader; where it is not the producer the
loader would start (a variable the producer reads changed since the import), or it is not wanted,
the loader starts its own; unused, it exits, and a forked child never takes its parent's.

Real processes throughout: each case is a fresh Python process that imports stoke, as a user's
script does, with ``stoke.DataLoader``'s own producers; the batches are compared with those of a
process started with ``STOKE_PRESTART=0``.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
LAUNCHER = str(CHECKOUT / "stoke")
IMAGES = 24
sys.path.insert(0, str(HERE))
import _aids  # noqa: E402  tests/_aids.py

MISSING = _aids.absent("numpy", "torch")
TMP = None
DATA = None

# Prints, as its last line, the prestarted producer's pid at the import (None where none was
# started), the first loader's producer's pid, a second loader's, and each epoch's batches summed
# by sample (the pixels, in order), for two epochs of the first loader.
LOADERS = """
import hashlib, json, os, sys, time
import stoke
from stoke import _prestart
prestarted = _prestart._PRESTARTED.proc.pid if _prestart._PRESTARTED is not None else None
data, change = sys.argv[1], sys.argv[2]
if change:
    name, value = change.split("=", 1)
    os.environ[name] = value

def digest(loader, epochs):
    out = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        out.append([(hashlib.sha256(images.numpy().tobytes()).hexdigest(), labels.tolist())
                    for images, labels in loader])
    return out

first = stoke.DataLoader(data, batch_size=5, shuffle=True, num_workers=2, seed=3)
first_pid = first._producer.pid
batches = digest(first, 2)
second = stoke.DataLoader(data, batch_size=5, num_workers=2)
second_pid = second._producer.pid
second_n = sum(len(labels) for _, labels in second)
alive = [os.path.exists(f"/proc/{p}") and open(f"/proc/{p}/stat").read().split()[2] != "Z"
         for p in (first_pid, second_pid)]
first.close()
second.close()
print(json.dumps({"prestarted": prestarted, "first": first_pid, "second": second_pid, "batches": batches,
                  "alive": alive, "second_n": second_n}))
"""


def setUpModule():
    global TMP, DATA
    if MISSING:
        print(f"[stoke] SKIPPING the prestart tests: {MISSING}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-prestart-"))
    DATA = TMP / "data"
    subprocess.run([LAUNCHER, "make-dataset", str(DATA), "--images", str(IMAGES), "--seed", "9", "--classes", "3"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def run_script(script, *args, **env):
    environ = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT))
    environ.pop("STOKE_PRESTART", None)
    environ.update(env)
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)], env=environ,
                         capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        raise AssertionError(f"the script failed ({run.returncode}):\n{run.stderr[-4000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1]), run.stderr


def gone(pid, within):
    """Whether process ``pid`` has exited (or is a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@unittest.skipIf(MISSING, MISSING)
class PrestartTest(unittest.TestCase):
    def test_the_first_loader_runs_on_it_with_the_batches_of_its_own_producer(self):
        got, stderr = run_script(LOADERS, DATA, "")
        off, _ = run_script(LOADERS, DATA, "", STOKE_PRESTART="0")
        self.assertIsNotNone(got["prestarted"], "import stoke started a producer")
        self.assertEqual(got["prestarted"], got["first"], "the first loader runs on the prestarted producer")
        self.assertNotEqual(got["first"], got["second"], "a second loader starts its own")
        self.assertEqual([True, True], got["alive"])
        self.assertEqual(IMAGES, got["second_n"])
        self.assertIsNone(off["prestarted"], "STOKE_PRESTART=0 starts none")
        self.assertEqual(off["batches"], got["batches"], "the same batches, in order, over two epochs")
        self.assertEqual(2 * (IMAGES // 5 + 1), sum(len(e) for e in got["batches"]))
        self.assertNotIn("WARNING", stderr)

    def test_a_variable_the_producer_reads_changed_since_the_import_and_the_loader_starts_its_own(self):
        got, stderr = run_script(LOADERS, DATA, "AWS_PROFILE=stoke-prestart-test")
        self.assertIsNotNone(got["prestarted"])
        self.assertNotEqual(got["prestarted"], got["first"], "not the producer the loader would start")
        self.assertTrue(gone(got["prestarted"], 5), "and it was stopped")
        self.assertNotIn("WARNING", stderr, "no failure: the loader started its producer as it would have")
        # A variable the producer does not read (torch sets this one when imported) changes nothing.
        torch_set, _ = run_script(LOADERS, DATA, "TORCHINDUCTOR_CACHE_DIR=/tmp/stoke-prestart-test")
        self.assertEqual(torch_set["prestarted"], torch_set["first"])

    def test_a_dataset_object_and_a_sampler_reach_it_through_the_loaders_files(self):
        # The dataset's list file and the order feed (a pipe) are made after the import: the prestarted
        # producer opens them through /proc; the sampler's order must arrive whole, epoch after epoch.
        script = """
        import hashlib, json, sys
        import torch, torchvision
        from torchvision import transforms as T
        import stoke
        from stoke import _prestart
        prestarted = _prestart._PRESTARTED.proc.pid if _prestart._PRESTARTED is not None else None
        dataset = torchvision.datasets.ImageFolder(sys.argv[1], transform=T.Compose(
            [T.Resize(40), T.CenterCrop(32), T.PILToTensor()]))
        sampler = torch.utils.data.RandomSampler(dataset, generator=torch.Generator().manual_seed(4))
        loader = stoke.DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=2)
        out = []
        for epoch in range(2):
            torch.manual_seed(epoch)
            out.append([(hashlib.sha256(x.numpy().tobytes()).hexdigest(), y.tolist()) for x, y in loader])
        print(json.dumps({"prestarted": prestarted, "producer": loader._producer.pid, "batches": out}))
        loader.close()
        """
        got, stderr = run_script(script, DATA)
        off, _ = run_script(script, DATA, STOKE_PRESTART="0")
        self.assertIsNotNone(got["prestarted"])
        self.assertEqual(got["prestarted"], got["producer"])
        self.assertEqual(off["batches"], got["batches"])
        self.assertNotIn("WARNING", stderr)

    def test_unused_it_exits_and_the_loader_then_starts_its_own(self):
        script = """
        import json, sys, time
        import stoke
        from stoke import _prestart
        proc = _prestart._PRESTARTED.proc
        status = proc.wait(timeout=30)
        loader = stoke.DataLoader(sys.argv[1], batch_size=8, num_workers=1)
        n = sum(len(y) for _, y in loader)
        print(json.dumps({"status": status, "prestarted": proc.pid, "producer": loader._producer.pid, "n": n}))
        loader.close()
        """
        got, stderr = run_script(script, DATA, STOKE_PRESTART_IDLE="1")
        self.assertEqual(0, got["status"], "idle for its limit, it exits with 0")
        self.assertNotEqual(got["prestarted"], got["producer"])
        self.assertEqual(IMAGES, got["n"])
        self.assertNotIn("WARNING", stderr)

    def test_a_forked_child_starts_its_own_and_the_parent_keeps_its(self):
        script = """
        import json, os, sys
        import stoke
        from stoke import _prestart
        prestarted = _prestart._PRESTARTED.proc.pid
        read, write = os.pipe()
        child = os.fork()
        if child == 0:
            loader = stoke.DataLoader(sys.argv[1], batch_size=8, num_workers=1)
            n = sum(len(y) for _, y in loader)
            os.write(write, json.dumps({"producer": loader._producer.pid, "n": n}).encode())
            loader.close()
            os._exit(0)
        os.close(write)
        in_child = json.loads(os.read(read, 4096).decode())
        os.waitpid(child, 0)
        loader = stoke.DataLoader(sys.argv[1], batch_size=8, num_workers=1)
        n = sum(len(y) for _, y in loader)
        print(json.dumps({"prestarted": prestarted, "child": in_child, "parent": loader._producer.pid, "n": n}))
        loader.close()
        """
        got, _ = run_script(script, DATA)
        self.assertNotEqual(got["prestarted"], got["child"]["producer"], "the child started its own")
        self.assertEqual(IMAGES, got["child"]["n"])
        self.assertEqual(got["prestarted"], got["parent"], "the parent's first loader took the prestarted one")
        self.assertEqual(IMAGES, got["n"])

    def test_it_ends_with_the_process_that_imported_stoke(self):
        script = """
        import json
        import stoke
        from stoke import _prestart
        print(json.dumps({"prestarted": _prestart._PRESTARTED.proc.pid}), flush=True)
        """
        got, _ = run_script(script)
        self.assertTrue(gone(got["prestarted"], 5), "stopped at the exit of the process that started it")
        killed = subprocess.Popen([sys.executable, "-c", textwrap.dedent(
            """
            import json, os, signal, sys, time
            import stoke
            from stoke import _prestart
            print(json.dumps({"prestarted": _prestart._PRESTARTED.proc.pid}), flush=True)
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)
            """)], env=dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT)),
            stdout=subprocess.PIPE, text=True)
        pid = json.loads(killed.stdout.readline())["prestarted"]
        killed.wait(timeout=60)
        killed.stdout.close()
        self.assertTrue(gone(pid, 5), "killed with the process that started it (the parent-death signal)")

    def test_a_multiprocessing_child_starts_none(self):
        script = """
        import json, multiprocessing

        def child(queue):
            import stoke
            from stoke import _prestart
            queue.put(_prestart._PRESTARTED is None)

        if __name__ == "__main__":
            ctx = multiprocessing.get_context("spawn")
            queue = ctx.Queue()
            p = ctx.Process(target=child, args=(queue,))
            p.start()
            none = queue.get(timeout=120)
            p.join(60)
            print(json.dumps({"none": none}))
        """
        path = TMP / "spawned.py"
        path.write_text(textwrap.dedent(script))
        environ = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT))
        run = subprocess.run([sys.executable, str(path)], env=environ, capture_output=True, text=True, timeout=300)
        self.assertEqual(0, run.returncode, run.stderr[-3000:])
        self.assertEqual({"none": True}, json.loads(run.stdout.strip().splitlines()[-1]))


@unittest.skipIf(_aids.absent("numpy"), _aids.absent("numpy"))  # stoke imports numpy
class AnswerTest(unittest.TestCase):
    """``hand``'s reading of the answer, against a stand-in that answers as the producer may (the
    producer itself is exercised above; this checks the loader's side of each answer)."""

    def answering(self, code):
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def test_a_refusal_is_said_once_and_an_idle_exit_is_not(self):
        sys.path.insert(0, str(PACKAGE_ROOT))
        try:
            from stoke import _prestart
        finally:
            sys.path.pop(0)
        from contextlib import redirect_stderr
        from io import StringIO
        _prestart._SAID.clear()
        said = StringIO()
        with redirect_stderr(said):
            refused = self.answering("import sys; sys.stdin.readline(); print('no: cannot open /proc/1/fd/9: "
                                     "Permission denied', flush=True); import time; time.sleep(30)")
            self.assertFalse(_prestart.hand(refused, ["serve", "x"]))
            self.assertIsNotNone(refused.poll(), "the refusing producer is stopped")
            again = self.answering("import sys; sys.stdin.readline(); print('no: again', flush=True)")
            self.assertFalse(_prestart.hand(again, ["serve", "x"]))
            expired = self.answering("import sys; sys.exit(0)")
            expired.wait()
            self.assertFalse(_prestart.hand(expired, ["serve", "x"]))
            # The JVM's own log lines may come first on stdout: passed over.
            taken = self.answering("import sys; sys.stdin.readline(); print('[0.012s][warning][aot] x'); "
                                   "print('ok', flush=True)")
            self.assertTrue(_prestart.hand(taken, ["serve", "x"]))
            taken.wait(timeout=30)
        for p in (refused, again, expired, taken):
            p.stderr.close()
        text = said.getvalue()
        self.assertEqual(1, text.count("WARNING"), text)
        self.assertIn("cannot open /proc/1/fd/9: Permission denied", text)
        self.assertIn("STOKE_PRESTART=0", text)


if __name__ == "__main__":
    unittest.main()
