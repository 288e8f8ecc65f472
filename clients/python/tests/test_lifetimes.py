"""How long a producer lives: no longer than the process that started it, wherever it is (run by ./stoke test).

Real processes throughout: a parent Python process that starts ``stoke.DataLoader``, or ``stoke serve
--parent-pid``, over a local HTTP server that never answers (a remote dataset whose open stalls), is
killed with SIGKILL, and its producer must be gone within 2 s. The tests that start a
``stoke.DataLoader`` need numpy and torch, and skip, saying so, without them.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
LAUNCHER = str(CHECKOUT / "stoke")
sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(HERE))

try:
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import stoke
    import _aids  # tests/_aids.py
    MISSING = None
except ImportError as e:  # numpy or torch not installed: the DataLoader tests skip, loudly
    MISSING = f"{e.name} is not installed"

#: The exec wrapper, run as stoke.DataLoader runs it (no numpy or torch needed).
PARENT_DEATH = PACKAGE_ROOT / "stoke" / "_parent_death.py"
#: How soon after its parent's death a producer must be gone.
GONE_WITHIN_S = 2.0
TMP = None
DATA = None


def setUpModule():
    global TMP, DATA
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-lifetimes-"))
    DATA = TMP / "data"
    subprocess.run([LAUNCHER, "make-dataset", str(DATA), "--images", "24", "--seed", "5", "--classes", "3"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


class StallingServer:
    """A local HTTP server that takes every request and answers none until it is closed: a remote
    store whose first request (the dataset's index, or a shard's header) hangs."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.asked.set()
                server.release.wait(120)
                self.close_connection = True

            do_HEAD = do_GET

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def tuners_of(pid):
    """The children of process ``pid`` that run ``stoke tune`` (its command line has the argument)."""
    found = []
    for child in children_of(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"tune" in f.read().split(b"\0"):
                    found.append(child)
        except OSError:
            pass
    return found


def children_of(pid):
    """The pids of process ``pid``'s children (of all its threads), from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def alive(pid):
    """Whether ``pid`` runs (a zombie waiting for init to reap it has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid, seconds):
    """Seconds until ``pid`` was gone, or None if it still ran after ``seconds``."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if not alive(pid):
            return time.monotonic() - start
        time.sleep(0.01)
    return None if alive(pid) else time.monotonic() - start


def java_of(pid, timeout=60.0):
    """Waits until process ``pid`` runs the JVM (``./stoke`` has ``exec``ed it), then returns ``pid``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if os.readlink(f"/proc/{pid}/exe").endswith("/java"):
                return pid
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"process {pid} ran no java within {timeout:.0f} s")


class ParentDeathTest(unittest.TestCase):
    def setUp(self):
        self.server = StallingServer()
        self.addCleanup(self.server.close)

    def start_parent(self, code, *args):
        """A parent Python process running ``code`` (with ``stoke`` importable), killed at cleanup."""
        parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args],
                                  env=dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (parent.kill(), parent.wait(), parent.stdout.close(), parent.stderr.close()))
        return parent

    def stalled_producer(self, parent):
        """The parent's producer, once its JVM is blocked opening the stalled remote dataset."""
        if not self.server.asked.wait(90):
            parent.kill()
            self.fail(f"no request reached the server; the parent's stderr: {parent.communicate()[1]}")
        (producer,) = children_of(parent.pid)
        self.addCleanup(lambda: alive(producer) and os.kill(producer, signal.SIGKILL))
        return java_of(producer)

    @unittest.skipIf(MISSING, f"stoke.DataLoader needs numpy and torch: {MISSING}")
    def test_a_dataloader_killed_during_a_slow_remote_open_leaves_no_producer_within_2_s(self):
        # stop=True: the producer is stopped (SIGSTOP) before its parent is killed, so its JVM can
        # run nothing (not its own --parent-pid watch): only the kernel's parent-death signal,
        # set before the JVM ran, ends it. stop=False: as it happens, whichever comes first.
        for stop in (False, True):
            with self.subTest(stop=stop):
                self.server.asked.clear()
                parent = self.start_parent("""
                    import sys, stoke
                    stoke.DataLoader(sys.argv[1], batch_size=4, num_workers=1, start_timeout=300)
                    """, self.server.url + "/shard-{0..3}.tar")
                producer = self.stalled_producer(parent)
                if stop:
                    os.kill(producer, signal.SIGSTOP)
                parent.kill()
                parent.wait()
                took = wait_gone(producer, GONE_WITHIN_S)
                self.assertIsNotNone(took, f"the producer {producer} outlived its parent by {GONE_WITHIN_S} s")

    @unittest.skipIf(MISSING, f"stoke.DataLoader needs numpy and torch: {MISSING}")
    def test_a_dataloader_made_in_a_thread_that_ends_keeps_its_producer(self):
        # The parent-death signal fires when the thread that forked the producer ends: the loader
        # made in a short-lived thread must still serve every batch from the main thread after it.
        made = []
        thread = threading.Thread(target=lambda: made.append(
            stoke.DataLoader(DATA, batch_size=4, num_workers=1, shuffle=True, seed=3)))
        thread.start()
        thread.join()
        (loader,) = made
        with loader:
            pid = _aids.producer_process(loader).pid
            time.sleep(0.5)  # the kernel's signal, were it sent at the thread's end, has arrived
            self.assertTrue(alive(pid), "the producer died with the thread that made its loader")
            labels = [int(label) for _, labels in loader for label in labels]
            self.assertEqual(24, len(labels))
            # And a producer restarted from another short-lived thread lives on too (epoch 3, where
            # the running producer went on into epoch 1).
            loader.set_epoch(3)
            thread = threading.Thread(target=lambda: next(iter(loader)))
            thread.start()
            thread.join()
            restarted = _aids.producer_process(loader).pid
            self.assertNotEqual(pid, restarted)
            time.sleep(0.5)
            self.assertTrue(alive(restarted), "the restarted producer died with the thread that started it")
            self.assertEqual(5, sum(1 for _ in loader))

    @unittest.skipIf(MISSING, f"stoke needs numpy: {MISSING}")
    def test_stoke_tune_dies_with_the_process_that_runs_it(self):
        # stoke tune has no --parent-pid: the kernel's signal alone ends it.
        parent = self.start_parent("""
            import sys, stoke
            stoke.tune(sys.argv[1], sys.argv[2], step_ms=1, batch_sizes=(4,), seconds_per_point=120)
            """, str(DATA), str(TMP / "tune"))
        deadline = time.monotonic() + 60
        # Its children: the tuner, and the producer `import stoke` started (stoke/_prestart.py).
        while not tuners_of(parent.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        (tuner,) = tuners_of(parent.pid)
        self.addCleanup(lambda: alive(tuner) and os.kill(tuner, signal.SIGKILL))
        java_of(tuner)
        parent.kill()
        parent.wait()
        self.assertIsNotNone(wait_gone(tuner, GONE_WITHIN_S), f"stoke tune outlived its parent by {GONE_WITHIN_S} s")

    def test_stoke_serve_stops_when_its_parent_pid_dies_during_a_slow_remote_open(self):
        # The JVM's own watch, alone: this producer has no parent-death signal, and its --parent-pid
        # names another process than its parent (as the soak's and a script's do).
        parent = subprocess.Popen(["sleep", "600"])
        self.addCleanup(lambda: (parent.kill(), parent.wait()))
        ring = f"/dev/shm/stoke-py-test-lifetimes-{os.getpid()}"
        serve = subprocess.Popen([LAUNCHER, "serve", self.server.url + "/shard-{0..3}.tar", "--ring", ring,
                                  "--parent-pid", str(parent.pid), "--status-interval", "0"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (serve.kill(), serve.wait(), serve.stderr.close()))
        self.assertTrue(self.server.asked.wait(90), "no request reached the server")
        java_of(serve.pid)
        parent.kill()
        parent.wait()
        try:
            serve.wait(GONE_WITHIN_S)
        except subprocess.TimeoutExpired:
            self.fail(f"stoke serve outlived its parent {parent.pid} by {GONE_WITHIN_S} s")
        self.assertEqual(1, serve.returncode)
        said = serve.stderr.read()
        self.assertEqual(1, said.count(f"stoke serve: the parent process {parent.pid} is gone; stopping"), said)
        self.assertFalse(os.path.exists(ring))

    def test_stoke_serve_refuses_a_parent_pid_that_is_not_running(self):
        gone = subprocess.Popen(["true"])
        gone.wait()
        done = subprocess.run([LAUNCHER, "serve", self.server.url + "/shard-{0..3}.tar", "--ring",
                               f"/dev/shm/stoke-py-test-lifetimes-{os.getpid()}", "--parent-pid", str(gone.pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(1, done.returncode, done.stderr)
        self.assertIn(f"the parent process {gone.pid} is not running", done.stderr)
        self.assertFalse(self.server.asked.is_set(), "the dataset was opened for a parent already gone")


@unittest.skipIf(MISSING, f"stoke.DataLoader needs numpy and torch: {MISSING}")
class KillLoopTest(unittest.TestCase):
    """Producers killed with SIGKILL once they decode, again and again: nothing of theirs is left in
    the temporary folder (java.io.tmpdir, pointed at a fresh one), nor in /tmp/hsperfdata_<user>."""

    def kill_loop(self, cache_home, times):
        tmpdir = Path(tempfile.mkdtemp(prefix="stoke-py-test-lifetimes-tmpdir-"))
        self.addCleanup(shutil.rmtree, tmpdir, True)
        saved = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "STOKE_JAVA_OPTS")}
        os.environ["XDG_CACHE_HOME"] = str(cache_home)
        os.environ["STOKE_JAVA_OPTS"] = f"{saved['STOKE_JAVA_OPTS'] or ''} -Djava.io.tmpdir={tmpdir}"
        killed, said = [], []
        try:
            for _ in range(times):
                loader = stoke.DataLoader(DATA, batch_size=4, num_workers=1)
                try:
                    next(iter(loader))  # decoded and resized: the native libraries are open
                    killed.append(_aids.producer_process(loader).pid)
                    os.kill(_aids.producer_process(loader).pid, signal.SIGKILL)
                    _aids.producer_process(loader).wait()
                    loader._producer._reader.join(5)  # its last stderr lines read
                    said.append("\n".join(loader._producer._stderr))
                finally:
                    loader.close()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.assertEqual([], sorted(os.listdir(tmpdir)))
        left = [f"{d}/{pid}" for d in Path("/tmp").glob("hsperfdata_*") for pid in killed if (d / str(pid)).exists()]
        self.assertEqual([], left)
        return said

    @staticmethod
    def unbuilt(said):
        """Why no native library was extracted, where the build made none (no working gcc: design.md's
        way of hiding it from a whole run), else None: the cache's checks then have nothing to check."""
        for lines in said:
            if "native pixel library is not available: the build did not make it" in lines:
                return "the jar carries no native library (the build made none, as its warning says)"
        return None

    def test_a_kill_9_loop_leaves_nothing_in_the_temporary_folder(self):
        cache_home = TMP / "cache-home"
        said = self.kill_loop(cache_home, 3)
        if self.unbuilt(said):
            self.skipTest(self.unbuilt(said) + "; the temporary folder was checked empty")
        # The libraries were put once in the user's cache, content-addressed, and reused.
        native = cache_home / "stoke" / "native"
        folders = sorted(os.listdir(native))
        self.assertTrue(folders, "no library was put in the cache")
        for name in folders:
            self.assertRegex(name, r"^[0-9a-f]{64}$")
            self.assertEqual(0o700, (native / name).stat().st_mode & 0o7777)
            for lib in (native / name).iterdir():
                self.assertEqual(0o500, lib.stat().st_mode & 0o7777)
        self.assertEqual(0o700, native.stat().st_mode & 0o7777)

    def test_a_refused_cache_is_said_and_leaves_nothing_in_the_temporary_folder_either(self):
        # A link planted at stoke/native: refused, and each producer opens the libraries from a
        # private temporary folder deleted as soon as they are open.
        cache_home = TMP / "planted-home"
        elsewhere = TMP / "planted-target"
        elsewhere.mkdir()
        (cache_home / "stoke").mkdir(parents=True)
        (cache_home / "stoke" / "native").symlink_to(elsewhere)
        said = self.kill_loop(cache_home, 2)
        if self.unbuilt(said):
            self.skipTest(self.unbuilt(said) + "; the temporary folder was checked empty")
        for lines in said:
            self.assertEqual(1, lines.count("WARNING: Stoke's native libraries are not cached"), lines)
            self.assertIn(f"{cache_home}/stoke/native is a symbolic link", lines)
        self.assertEqual([], os.listdir(elsewhere))


class ParentDeathWrapperTest(unittest.TestCase):
    def run_wrapper(self, parent, *command):
        return subprocess.run([sys.executable, "-S", "-I", str(PARENT_DEATH), str(parent), "--", *command],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)

    def test_the_command_carries_the_death_signal_through_exec(self):
        # PR_GET_PDEATHSIG (2) from inside the exec'd program: SIGKILL.
        probe = ("import ctypes, signal; s = ctypes.c_int(); "
                 "ctypes.CDLL(None).prctl(2, ctypes.byref(s), 0, 0, 0); print(s.value == signal.SIGKILL)")
        done = self.run_wrapper(os.getpid(), sys.executable, "-c", probe)
        self.assertEqual((0, "True\n"), (done.returncode, done.stdout), done.stderr)

    def test_a_parent_gone_before_the_signal_was_set_starts_nothing(self):
        # As seen from the wrapper, a parent that died before its prctl: getppid() is another process.
        marker = TMP / "started"
        done = self.run_wrapper(os.getppid(), "/usr/bin/touch", str(marker))
        self.assertEqual(1, done.returncode)
        self.assertIn(f"the parent process {os.getppid()} was gone before its producer started", done.stderr)
        self.assertFalse(marker.exists())
        done = self.run_wrapper(os.getpid(), "/usr/bin/touch", str(marker))
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertTrue(marker.exists())

    def test_a_command_that_cannot_run_is_named(self):
        done = self.run_wrapper(os.getpid(), str(TMP / "no-such-program"))
        self.assertEqual(127, done.returncode)
        self.assertIn("cannot run", done.stderr)


if __name__ == "__main__":
    unittest.main()
