"""Stoke's producer as a child process: ``stoke serve`` started, supervised and stopped, its stderr
read by a thread, its sample list and its auto workers' log read, and the ring it writes attached.

The ring, the sample list and the auto workers' log are anonymous files (``memfd_create``) that this process
creates and the producer inherits as descriptors (``/dev/fd/N``): the ring needs no room in
``/dev/shm`` (a container's is 64 MB), and nothing outlives both processes, however either ends
(``kill -9`` included). The producer dies with this process: the kernel kills it
(``PR_SET_PDEATHSIG``, set by ``_parent_death.py`` before the JVM runs), and the JVM watches this
process too (``--parent-pid``) and stops within 100 ms of its exit. A dataset URL that carries a
credential (a presigned URL's query string) is passed as an inherited file too, never on the
command line, which every user of the machine can read.
"""

import collections
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from queue import SimpleQueue
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

from . import _options, _prestart
from .ring import ProducerGoneError, Ring, RingFormatError
from ._home import stoke_command
from ._settings import default_workers
from ._site import name_site_packages
from ._urls import redact

__all__ = ["Producer", "ProducerError", "anonymous_file", "option_arguments", "read_sample_list", "serve_arguments"]

#: Stderr lines of the producer kept for error messages.
STDERR_LINES = 40
#: How long an error waits for the ending producer's exit, then for its last stderr lines: it
#: returns as soon as both come, and a producer that hangs instead gets a message without them.
LAST_WORDS_TIMEOUT = 2.0


#: The exec wrapper that gives the producer its parent-death signal (run as a script, not imported).
PARENT_DEATH = Path(__file__).resolve().parent / "_parent_death.py"
_SAID_NO_PARENT_DEATH: List[bool] = []


class ProducerError(RuntimeError):
    """Stoke's producer process failed or is gone; the message ends with its last stderr lines."""


def parent_death_command() -> List[str]:
    """The command before a producer's that has the kernel kill it when this process dies.

    Returns:
        ``[python, -S, -I, _parent_death.py, PID, --]``, or ``[]``, said once, where this process's
        interpreter cannot be run (an embedded Python without ``sys.executable``): the producer then
        stops within 100 ms of this process's exit once its JVM runs (``--parent-pid``), not with it.
    """
    if sys.executable and os.access(sys.executable, os.X_OK):
        return [sys.executable, "-S", "-I", str(PARENT_DEATH), str(os.getpid()), "--"]
    if not _SAID_NO_PARENT_DEATH:
        _SAID_NO_PARENT_DEATH.append(True)
        print(f"stoke: WARNING: sys.executable ({sys.executable!r}) cannot be run, so the producer is started "
              "without the kernel's parent-death signal: it stops within 100 ms of this process's exit once "
              "its JVM runs, not with it", file=sys.stderr, flush=True)
    return []


class _Spawner:
    """One daemon thread, as long-lived as this process, that starts the producers that threads
    other than the main one ask for.

    The kernel's parent-death signal fires when the *thread* that forked the child ends. A loader
    iterated in a thread of a pool, or in a thread started per epoch, would lose its producer with
    that thread, while the loader lives on; this thread ends only with the process (it waits in a
    queue, holding no GIL, so Python's finalisation does not end it either).
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._requests: SimpleQueue = SimpleQueue()
        threading.Thread(target=self._run, name="stoke-spawner", daemon=True).start()

    def _run(self) -> None:
        while True:
            start, done = self._requests.get()
            try:
                done.set_result(start())
            except BaseException as e:  # handed to the caller, whatever it is
                done.set_exception(e)

    def call(self, start: Callable[[], Any]) -> Any:
        """``start()``, run on this thread; its result or its exception."""
        done: Future = Future()
        self._requests.put((start, done))
        return done.result()


_SPAWNER: Optional[_Spawner] = None
_SPAWNER_LOCK = threading.Lock()


def _forget_spawner() -> None:
    # A forked child has no thread but the one that forked: it makes its own spawner when it needs one.
    global _SPAWNER, _SPAWNER_LOCK
    _SPAWNER, _SPAWNER_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_spawner)


def popen(command: List[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(command, **kwargs)`` from a thread that lives as long as this process: the
    main thread when it is the caller, else :class:`_Spawner`'s (see there why)."""
    global _SPAWNER
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(command, **kwargs)
    with _SPAWNER_LOCK:
        if _SPAWNER is None or _SPAWNER.pid != os.getpid():
            _SPAWNER = _Spawner()
        spawner = _SPAWNER
    return spawner.call(lambda: subprocess.Popen(command, **kwargs))


def prestart() -> None:
    """Starts this process's producer before any loader asks for one, where it is wanted (``_prestart``).

    Never raises: whatever keeps it from starting leaves the loaders to start their own, as they say.
    """
    if not _prestart.wanted():
        return
    try:
        command = stoke_command(record=False)
        if command is None:
            return  # the bundled runtime's AOT cache is due: the first loader records it
        proc = popen(parent_death_command() + command + _prestart.command_suffix(), stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    except Exception:  # no Java side found, no fork: the first loader says what is wrong
        return
    _prestart.register(proc, command)


def anonymous_file(name: str) -> int:
    """An anonymous file (``memfd_create``) for the producer to read or write as ``/dev/fd/N``.

    It lives in no mounted file system, so no ``/dev/shm`` size limits it and nothing is left on
    disk when either process dies; the kernel frees it with its last descriptor and mapping.

    Args:
        name: what ``/proc/PID/fd`` shows, before this process's pid.

    Returns:
        The file's descriptor (close-on-exec: the producer gets it through ``pass_fds``).
    """
    return os.memfd_create(f"{name}-{os.getpid()}", os.MFD_CLOEXEC)


def option_arguments(option: "_options.Option", value: Any) -> List[str]:
    """The table's ``option`` with ``value`` on ``stoke serve``'s command line: its flag and the value
    in the flag's syntax (a bool's flag alone, where True; nothing where the value is None)."""
    if value is None or value is False:
        return []
    if value is True:
        return [option.cli]
    kind = option.type
    if kind == "float":
        text = repr(float(value))
    elif kind == "floats":
        text = ",".join(repr(float(v)) for v in value)
    elif kind == "path":
        text = os.fspath(value)
    elif kind == "json":
        text = json.dumps(value, separators=(",", ":"))
    else:
        text = str(value)
    return [option.cli, text]


# The lines of a producer started with decode="gpu" or "auto": where it decodes, or why the CPU does.
DECODE_LINES = ("stoke serve: decoding on CUDA device ", "stoke serve: --decode ")
# The producer's stall report (no batch for a while, the consumer waiting): every line, for a bug report.
STALL_LINES = "stoke serve: stall: "


def producer_environment(settings: Any) -> Optional[Dict[str, str]]:
    """The producer's environment: this process's, with more for ``decode="gpu"`` or ``"auto"``.

    Where the producer may decode on the GPU, it is told this Python's site-packages (where
    torchvision's CUDA wheel bundles libnvjpeg; see ``_site``), and it decodes on its CUDA device 0:
    ``CUDA_VISIBLE_DEVICES`` is set to the one device torch uses here (``torch.cuda.current_device()``,
    through this process's own ``CUDA_VISIBLE_DEVICES``), so each torchrun rank decodes on its own GPU.

    Args:
        settings: the loader's settings; its ``decode`` is read.

    Returns:
        The environment to start the producer with, or None to inherit this process's (decoding on
        the CPU). Without CUDA in torch here the producer still looks for nvJPEG and says in one line
        why it decodes on the CPU.
    """
    if getattr(settings, "decode", "cpu") in (None, "cpu"):
        return None
    env = name_site_packages(dict(os.environ))
    try:
        import torch
    except ImportError:
        return env
    if not torch.cuda.is_available():
        return env
    index = torch.cuda.current_device()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        env["CUDA_VISIBLE_DEVICES"] = str(index)
    else:
        ids = [d.strip() for d in visible.split(",") if d.strip()]
        if index < len(ids):
            env["CUDA_VISIBLE_DEVICES"] = ids[index]
    return env


def stall_report_seconds(timeout: float) -> int:
    """Seconds without a batch before the producer's stall report, for a loader's ``timeout`` (> 0):
    half of it, whole seconds, from 1 to ``serve``'s own 60."""
    return max(1, min(60, int(timeout // 2)))


def serve_arguments(settings: Any, root: str, epoch: int, batch: int, ring: str, sample_list: str,
                    auto_workers_log: Optional[str], cuts: Sequence[Dict[str, Any]] = (),
                    data: Optional[str] = None, order_feed: Optional[str] = None,
                    restart_cache_log: Optional[str] = None, device_slots: Optional[str] = None) -> List[str]:
    """``stoke serve``'s arguments for a loader's settings, from batch ``batch`` of epoch ``epoch``.

    Every option of the table with a Python keyword is passed by its flag, from the settings; the
    serving protocol's own flags are written here.

    Args:
        settings: each option of the table as its attribute by name: the loader's settings
            (``_settings.Settings``), or the loader, which reads them through.
        root: the dataset: its path, or the list file of a dataset object's samples.
        epoch, batch: where the producer's stream starts.
        ring, sample_list, auto_workers_log: the paths it writes the ring, the dataset's sample list
            and (with ``num_workers="auto"``) its auto workers' log to.
        cuts: what earlier worlds took of epoch ``epoch`` (resumed from their states; see
            ``_resume``), oldest first; empty for a whole epoch.
        data: an argument file (picocli's ``@``-file) that holds the dataset, given instead of
            ``root`` itself; see :func:`dataset_argument_file`.
        order_feed: the pipe each epoch's order is written to (:meth:`Producer.feed`), where a
            sampler of the user's gives it; None where the producer draws its own.
        restart_cache_log: where the producer appends each epoch's restart-cache counts (with
            ``restart_cache_dir``); None for none.
        device_slots: where the producer describes its device slots, so that the pixels stay on the
            GPU (``decode="gpu"`` or ``"auto"`` with CUDA here; see ``_device_slots``); None: in the ring.

    Returns:
        The arguments after the command that starts Stoke.
    """
    args = ["serve", root if data is None else "@" + data, "--ring", ring, "--sample-list-out", sample_list,
            "--parent-pid", str(os.getpid()), "--status-interval", "0", "--epochs", "0",
            "--start-epoch", str(epoch), "--start-batch", str(batch), "--max-workers", str(default_workers())]
    if auto_workers_log is not None:
        args += ["--auto-workers-log", auto_workers_log]
    if cuts:
        args += ["--start-cuts", json.dumps(list(cuts), separators=(",", ":"))]
    if order_feed is not None:
        args += ["--order-feed", order_feed]
    if restart_cache_log is not None:
        args += ["--restart-cache-log", restart_cache_log]
    timeout = getattr(settings, "timeout", 0)
    if timeout > 0:
        # A batch awaited past ``timeout`` raises; the producer's stall report (every thread's stack)
        # comes first, at half of it, so that the error has its cause beside it.
        args += ["--stall-report", str(stall_report_seconds(timeout))]
    if device_slots is not None:
        args += ["--device-slots-out", device_slots]
    for option in _options.OPTIONS:
        if option.python is not None:
            args += option_arguments(option, getattr(settings, option.name))
    return args


#: How the producer's line per epoch about its restart cache starts (forwarded to the user's stderr).
RESTART_CACHE_LINE = "stoke serve: restart cache after epoch "


def _read_new_lines(path: str, into: List[Dict[str, Any]]) -> None:
    """Appends to ``into`` the JSON lines of ``path`` past the ``len(into)`` already read; a line
    still being appended (no closing brace yet) is left for the next call."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines[len(into):]:
        if not line.endswith("}"):
            break
        into.append(json.loads(line))


def dataset_argument_file(root: str) -> Optional[int]:
    """The dataset as an argument file for ``stoke serve``, where its URL carries a credential.

    A presigned or SAS URL's query string is a credential, and a process's command line is
    readable by every user of the machine (``ps``, ``/proc/PID/cmdline``); so such a URL reaches
    the producer through an inherited anonymous file, ``@/dev/fd/N``, which picocli reads as the
    argument it holds.

    Args:
        root: the dataset as the loader was given it.

    Returns:
        The file's descriptor (close-on-exec), or None where ``root`` carries no credential.
    """
    if redact(root) == root:
        return None
    fd = anonymous_file("stoke-data")
    os.write(fd, f'"{root}"\n'.encode())  # quoted: a URL holds no '"', and '#' is a comment outside quotes
    return fd


# The sample list's format is specified once, in docs/shared-memory.md ("The sample list"); its
# writer is io.stoke.serve.SampleList.
def read_sample_list(path: str) -> Tuple[bool, Any]:
    """The dataset's samples as a producer listed them (``--sample-list-out``).

    Args:
        path: the sample list: a header line ``{"samples": N, "listed": bool}``, then, where listed,
            one ``[name, label]`` line per sample.

    Returns:
        ``(True, [(name, label), ...])``, or ``(False, N)`` where the producer opened shards from
        their shard catalog (``index.json``), which counts each shard's samples and does not name them.
    """
    samples = []
    with open(path, encoding="utf-8") as f:
        header = json.loads(f.readline())
        if not header["listed"]:
            return False, header["samples"]
        for line in f:
            if line.strip():
                name, label = json.loads(line)
                samples.append((name, label))
    return True, samples


def sample_list_agrees(path: str, samples: Sequence[Tuple[str, int]]) -> bool:
    """Whether a producer's sample list names ``samples``, the list this process wrote for it, read
    without parsing every line: its header's count, and its first and last lines.

    A dataset object's samples are written by this process (``_torch_compat.write_list_file``) as
    absolute, normalised paths, which the producer lists as they are, in their order; parsing them
    back took 0.9 us a sample (1.1 s of ImageNet's 1.28 million) on the way out of
    ``stoke.DataLoader()``. Where the ends differ the caller reads the whole list.

    Args:
        path: the sample list (see :func:`read_sample_list`).
        samples: ``(path, label)`` pairs, as written to the producer's list file.
    """
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        if not header.get("listed") or header.get("samples") != len(samples) or not samples:
            return False
        lines = f.tell()
        first = f.readline()
        f.seek(max(lines, os.fstat(f.fileno()).st_size - 65536))
        last = f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]  # a line longer than the window: not JSON
    try:
        return json.loads(first) == list(samples[0]) and json.loads(last) == list(samples[-1])
    except ValueError:
        return False


class Producer:
    """One ``stoke serve`` child process and the ring it writes, attached.

    Creating one starts the process and waits for its ring; :meth:`stop` ends both and closes the
    anonymous files. What failed to start is stopped before the error is raised.

    Args:
        stoke: the command before ``serve ...`` (see ``_home.stoke_command``).
        settings: the loader's settings, read by :func:`serve_arguments`.
        root: the dataset's path, or the list file of a dataset object's samples.
        epoch, batch: where the stream starts.
        cuts: what earlier worlds took of epoch ``epoch`` (see :func:`serve_arguments`).
        inherited: descriptors the producer reads besides its own files (the dataset's list file).
        start_timeout: seconds to wait for the ring (the first run may build Stoke).
        order_feed: whether each epoch's order is given (:meth:`feed`) instead of drawn by the producer.
        device_slots: whether the producer is asked to keep the pixels on the GPU (:meth:`device_slots_description`).

    Raises:
        ProducerError: the producer exited before its ring was ready, or it was not ready in time.
    """

    def __init__(self, stoke: List[str], settings: Any, root: str, epoch: int, batch: int, *,
                 cuts: Sequence[Dict[str, Any]] = (), inherited: Sequence[int] = (), start_timeout: float,
                 order_feed: bool = False, device_slots: bool = False) -> None:
        self.ring: Optional[Ring] = None
        self.proc: Optional[subprocess.Popen] = None
        self._pid = os.getpid()  # the process that started the producer: the only one that stops it
        self._stderr: Deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._reader: Optional[threading.Thread] = None
        self._fds: Dict[str, int] = {}
        self._auto_workers: List[Dict[str, Any]] = []
        self._sample_list_path: Optional[str] = None
        self._auto_workers_path: Optional[str] = None
        self._restart_cache: List[Dict[str, Any]] = []
        self._restart_cache_path: Optional[str] = None
        self._device_slots_path: Optional[str] = None
        self._feed: Optional[int] = None  # the order feed's write end
        self._fed_next = epoch  # the epoch whose order the producer reads next
        try:
            # One at a time into self._fds, so that stop() closes those made before a failure.
            auto = settings.workers == "auto"
            cached = getattr(settings, "restart_cache_dir", None) is not None
            for name in ("ring", "sample-list") + (("auto-workers",) if auto else ()) + (
                    ("restart-cache",) if cached else ()) + (("device-slots",) if device_slots else ()):
                self._fds[name] = anonymous_file(f"stoke-{name}")
            data = dataset_argument_file(root)
            if data is not None:
                self._fds["data"] = data
            if order_feed:
                # A pipe, not a file: the producer reads each epoch's record as it comes, and a
                # writer whose reader is gone gets EPIPE, not a file that grows unread.
                self._fds["order-feed"], self._feed = os.pipe2(os.O_CLOEXEC)
                self._fds["order-feed-writer"] = self._feed  # closed with the others, once the producer stopped
            theirs = {name: fd for name, fd in self._fds.items() if name != "order-feed-writer"}
            paths = {name: f"/dev/fd/{fd}" for name, fd in theirs.items()}
            self._sample_list_path, self._auto_workers_path = paths["sample-list"], paths.get("auto-workers")
            self._restart_cache_path = paths.get("restart-cache")
            self._device_slots_path = paths.get("device-slots")
            args = serve_arguments(
                settings, root, epoch, batch, paths["ring"], paths["sample-list"], paths.get("auto-workers"), cuts,
                paths.get("data"), paths.get("order-feed"), paths.get("restart-cache"), paths.get("device-slots"))
            environment = producer_environment(settings)
            # The producer started at `import stoke`, where it is the one this would start (see _prestart).
            prestarted = _prestart.take(stoke, environment)
            if prestarted is not None and _prestart.hand(prestarted, args):
                self.proc = prestarted
            else:
                self.proc = popen(parent_death_command() + stoke + args, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                                  pass_fds=[*theirs.values(), *inherited], env=environment)
            if order_feed:
                os.close(self._fds.pop("order-feed"))  # the producer's end is its alone: its exit is EPIPE here
            self._reader = threading.Thread(target=self._read_stderr, name="stoke-producer-stderr", daemon=True)
            self._reader.start()
            self.ring = self._attach(paths["ring"], start_timeout)
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        """The producer's process id."""
        return self.proc.pid

    def _attach(self, path: str, timeout: float) -> Ring:
        """The producer's ring, once it is laid out; an error if the producer exits first."""
        def laid_out() -> Optional[Ring]:
            try:
                # A batch takes the producer tens of milliseconds or more: back off to 2 ms sleeps
                # while waiting, so that polling does not take a core from the decoding threads.
                return Ring(path, release_on_next=False, spin=0.0002, max_poll_sleep=0.002)
            except (RingFormatError, ProducerGoneError):
                return None  # not laid out yet (empty, or its magic not written), or its pid not yet set
        return self._wait_for(laid_out, "ring", timeout, poll=0.01)

    def _wait_for(self, probe: Callable[[], Any], what: str, timeout: float, poll: float) -> Any:
        """``probe()``'s first value that is not None, tried every ``poll`` seconds for up to ``timeout``.

        Nothing signals across the processes when the producer has written ``what``: the wait for its
        exit paces the tries, and ends the wait at once if it exits first.

        Raises:
            ProducerError: the producer exited first, or ``what`` was not ready in time.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if value is not None:
                return value
            if time.monotonic() > deadline:
                raise ProducerError(f"the producer's {what} was not ready within {timeout:.0f} s")
            try:
                self.proc.wait(timeout=poll)
            except subprocess.TimeoutExpired:
                continue
            raise self.error(f"the producer exited with status {self.proc.returncode} before its {what} was ready")

    def _read_stderr(self) -> None:
        """The reader thread: keeps the producer's last lines until its stderr ends (the process's exit)."""
        with self.proc.stderr as stderr:
            for line in stderr:
                line = line.rstrip("\n")
                self._stderr.append(line)
                # The producer's warnings (a fallback, a build), where it decodes with decode="gpu" (or
                # why the CPU does), its restart cache's line per epoch and its stall report reach the
                # user's terminal, once each.
                if ("WARNING" in line or line.startswith("stoke: building") or line.startswith("stoke: recording")
                        or line.startswith(RESTART_CACHE_LINE) or line.startswith(DECODE_LINES)
                        or line.startswith(STALL_LINES)):
                    print(line, file=sys.stderr, flush=True)

    # The order feed's format is specified once, in docs/shared-memory.md ("The order feed"); its
    # reader is io.stoke.loader.sample.OrderFeed.
    def feed(self, epoch: int, batch_sizes: Sequence[int], indices: Any) -> None:
        """Hands the producer epoch ``epoch``'s order: the next epoch it reads (epochs come in order).

        Args:
            epoch: the epoch; the producer's start epoch first, then each next one.
            batch_sizes: each batch's number of samples, in order.
            indices: the epoch's dataset indices, in order (``sum(batch_sizes)`` of them).

        Raises:
            ProducerError: the producer is gone (its end of the pipe closed).
        """
        import numpy as np
        if epoch != self._fed_next:
            raise ValueError(f"the producer reads epoch {self._fed_next}'s order next, not epoch {epoch}'s")
        sizes = np.asarray(batch_sizes, dtype="<i8")
        record = np.concatenate([np.array([epoch, len(sizes), int(sizes.sum())], dtype="<i8"), sizes,
                                 np.asarray(indices, dtype="<i8")])
        view = memoryview(record.tobytes())
        try:
            while view:
                view = view[os.write(self._feed, view):]
        except BrokenPipeError:
            raise self.error(f"the producer exited before it read epoch {epoch}'s order") from None
        self._fed_next = epoch + 1

    @property
    def fed_next(self) -> int:
        """The epoch whose order this producer reads next (with an order feed)."""
        return self._fed_next

    def exit_status(self) -> Optional[int]:
        """The producer's exit status, or None while it runs."""
        return self.proc.poll()

    def error(self, what: str) -> ProducerError:
        """A :class:`ProducerError` saying ``what``, with the producer's last stderr lines.

        Called when the producer is ending (gone, failed, or its stream ended): its last lines are
        in the pipe until it exits, so this waits for its exit and for the reader thread to reach
        the pipe's end, each for at most ``LAST_WORDS_TIMEOUT`` seconds.
        """
        if self.proc is not None:
            try:
                self.proc.wait(timeout=LAST_WORDS_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass  # still running: what it has said so far
            else:
                self._reader.join(timeout=LAST_WORDS_TIMEOUT)
        tail = "\n".join(self._stderr) or "(nothing)"
        return ProducerError(f"{what}. Its last stderr lines:\n{tail}")

    def read_sample_list(self) -> Tuple[bool, Any]:
        """The dataset's samples as this producer listed them (see :func:`read_sample_list`)."""
        return read_sample_list(self._sample_list_path)

    def sample_list_agrees(self, samples: Sequence[Tuple[str, int]]) -> bool:
        """Whether this producer's sample list names ``samples`` (see :func:`sample_list_agrees`)."""
        return sample_list_agrees(self._sample_list_path, samples)

    def sample_list_header(self) -> Dict[str, Any]:
        """The header of the producer's sample list: ``samples``, ``listed``, ``dataset`` (Java's
        ``Dataset.fingerprint()``: its files' names and labels, or its shards' names and sizes) and
        ``shuffle_window`` (the one in effect, 0 for a global shuffle)."""
        with open(self._sample_list_path, encoding="utf-8") as f:
            return json.loads(f.readline())

    # The auto-workers log's format is specified once, in docs/shared-memory.md ("The auto-workers
    # log"); its writer is io.stoke.serve.AutoWorkersLogFile.
    def auto_workers_log(self) -> List[Dict[str, Any]]:
        """With ``num_workers="auto"``: the producer's changes to its decoding threads so far, oldest
        first (see ``DataLoader.auto_workers_log``); after :meth:`stop`, all of them. Empty otherwise."""
        if self._auto_workers_path is not None and "auto-workers" in self._fds:
            _read_new_lines(self._auto_workers_path, self._auto_workers)
        return list(self._auto_workers)

    # The restart-cache log's format is specified once, in docs/shared-memory.md ("The
    # restart-cache log"); its writer is io.stoke.serve.RestartCacheLogFile.
    def restart_cache_log(self) -> List[Dict[str, Any]]:
        """With ``restart_cache_dir``: the restart cache's counts for each epoch the producer has
        published, oldest first (see ``DataLoader.restart_cache_stats``); after :meth:`stop`, all of
        them. Empty otherwise."""
        if self._restart_cache_path is not None and "restart-cache" in self._fds:
            _read_new_lines(self._restart_cache_path, self._restart_cache)
        return list(self._restart_cache)

    # The device slots' format is specified once, in docs/shared-memory.md ("Device slots"); its
    # writer is io.stoke.serve.DeviceSlotsFile.
    def device_slots_description(self, timeout: float) -> Dict[str, Any]:
        """Where the producer keeps each slot's pixels on the GPU, or that it decodes on the CPU after
        all (``on_device`` false), as it described them before its first batch: waited for, up to
        ``timeout`` seconds (the GPU stage opens after the ring). Only with ``device_slots``.

        Raises:
            ProducerError: the producer exited first, or said nothing in time.
        """
        from ._device_slots import read_description
        return self._wait_for(lambda: read_description(self._device_slots_path), "device slots' description",
                              timeout, poll=0.005)

    def stop(self) -> None:
        """Detaches from the ring, stops the process (terminate, then kill after 10 s) and closes the
        anonymous files; the kernel frees each once the producer's descriptors and mappings go too.
        Idempotent.

        In a forked child of the process that started the producer, it closes the child's copies
        (the ring's mapping, the files' descriptors) and nothing else: the producer is the parent's,
        and neither a signal nor a detach reaches it from here.
        """
        ring, self.ring = self.ring, None
        if ring is not None:
            ring.close()  # in a child, unmaps the child's copy alone (Ring._forked)

        if os.getpid() != self._pid:
            self.proc = None
            fds, self._fds = self._fds, {}
            for fd in fds.values():
                os.close(fd)
            return
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()  # its shutdown hook stops the workers
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if "auto-workers" in self._fds:
            self.auto_workers_log()  # the last changes, before their file goes
        if "restart-cache" in self._fds:
            self.restart_cache_log()  # the last epochs, before their file goes
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)
