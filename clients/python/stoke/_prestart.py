"""A producer started at ``import stoke``, before any loader asks for one.

A fresh producer spends about a quarter of a second before its ring is ready: the launcher, the
JVM's start, picocli's model of ``serve``. A training script imports its libraries, builds its
datasets and its model, and only then calls ``stoke.DataLoader()``; so ``import stoke`` starts a
producer at once (``stoke prestart``, see ``cli/.../Prestart.java``), whose start runs beside the
script's own, and the first loader of this process hands it its command instead of starting one.
Its first batch then comes that much sooner.

The prestarted producer is used only where it is the one the loader would have started: the same
command, the environment variables it reads (:data:`READ_BY_PRODUCER`) and the working directory
unchanged since the import, and the CPU decoding (``decode="gpu"`` narrows the producer's
environment). Otherwise it is stopped and the loader starts its own, as it would have. The loader's files (its ring, sample list, order feed)
are made after the import: the producer opens each through ``/proc/<this pid>/fd/N`` and answers
whether it could; where it could not (a ``/proc`` that hides them), the loader says so once and
starts its own.

Not started: with ``STOKE_PRESTART=0``; in a child of ``multiprocessing`` (which imports its
parent's modules, not its loaders); under ``python -m stoke``; where the Java side would first be
built, set up or have its AOT cache recorded (the loader's own start does that, and says so).
Unused for ``STOKE_PRESTART_IDLE`` seconds (120 by default) it exits; at this process's exit it is
stopped, and the kernel ends it with this process, as any producer (``_parent_death.py``).
"""

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence

__all__ = ["wanted", "command_suffix", "register", "take", "hand", "IDLE_SECONDS"]

#: How long a prestarted producer waits for its command before it exits, unless STOKE_PRESTART_IDLE says.
IDLE_SECONDS = 120
#: How long a loader waits for the prestarted producer's answer (it has opened the loader's files).
ANSWER_TIMEOUT = 10.0
#: The environment variables a producer reads, by prefix: the launcher's and Stoke's own (STOKE_, PATH,
#: XDG_CACHE_HOME, HOME), the JVM's and its runtime's (JAVA_, JDK_, _JAVA_, TZ, LANG, LC_), the C
#: libraries' (LD_, MALLOC_, GLIBC_TUNABLES, libjpeg-turbo's JSIMD_ and JPEGMEM), the AWS SDK's
#: (AWS_) and the proxies'. A prestarted producer holds their values from the import; one of them
#: changed since (AWS_PROFILE set by the script) and the loader starts its own. Others, such as
#: those torch sets when imported (TORCHINDUCTOR_CACHE_DIR) or when it starts CUDA
#: (CUDA_MODULE_LOADING), nothing of a producer decoding on the CPU reads.
READ_BY_PRODUCER = ("STOKE_", "PATH", "HOME", "XDG_", "TMPDIR", "JAVA_", "JDK_", "_JAVA_", "TZ", "LANG", "LC_",
                    "LD_", "MALLOC_", "GLIBC_", "JSIMD_", "JPEGMEM", "AWS_", "HTTP_PROXY", "HTTPS_PROXY",
                    "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


def _read_by_producer(environ: Dict[str, str]) -> Dict[str, str]:
    return {k: v for k, v in environ.items() if k.startswith(READ_BY_PRODUCER)}


class _Prestarted:
    """The prestarted producer and what it was started with."""

    def __init__(self, proc: subprocess.Popen, command: List[str], environ: Dict[str, str], cwd: str) -> None:
        self.proc = proc
        self.command = command
        self.environ = environ
        self.cwd = cwd
        self.pid = os.getpid()  # the process that started it: the only one that may use it


_PRESTARTED: Optional[_Prestarted] = None
_LOCK = threading.Lock()
_SAID: List[bool] = []


def _wanted() -> bool:
    if os.environ.get("STOKE_PRESTART", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    mp = sys.modules.get("multiprocessing")
    if mp is not None and mp.parent_process() is not None:
        return False  # a multiprocessing child re-imports its parent's modules; its parent has the loaders
    argv = getattr(sys, "orig_argv", [])
    if "-m" in argv and argv.index("-m") + 1 < len(argv) and argv[argv.index("-m") + 1] == "stoke":
        return False  # `python -m stoke`: the CLI starts its own JVM
    return True


def _idle_seconds() -> int:
    try:
        return max(1, int(os.environ.get("STOKE_PRESTART_IDLE", IDLE_SECONDS)))
    except ValueError:
        return IDLE_SECONDS


def wanted() -> bool:
    """Whether this process starts a producer at import (see the module's docstring)."""
    return _PRESTARTED is None and _wanted()


def command_suffix() -> List[str]:
    """What follows the command that starts Stoke (``_home.stoke_command``) for a prestarted producer."""
    return ["prestart", str(_idle_seconds())]


def register(proc: subprocess.Popen, command: List[str]) -> None:
    """Keeps ``proc``, just started with ``command`` + :func:`command_suffix`, for this process's first loader.

    Its stdin, stdout and stderr are pipes (text); this process's environment and working directory
    are taken as it was started with them.
    """
    global _PRESTARTED
    _PRESTARTED = _Prestarted(proc, list(command), _read_by_producer(os.environ), os.getcwd())
    atexit.register(_stop_unused)


def _stop(prestarted: _Prestarted) -> None:
    """Ends a prestarted producer that no loader took, and reaps it: killed, since it holds nothing
    yet (no file of a loader's), and a loader waiting to start its own should not wait for a JVM's exit."""
    proc = prestarted.proc
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    proc.kill()
    proc.wait()


def _stop_unused() -> None:
    global _PRESTARTED
    with _LOCK:
        prestarted, _PRESTARTED = _PRESTARTED, None
    if prestarted is not None and prestarted.pid == os.getpid():
        _stop(prestarted)


def _forget() -> None:
    # A forked child has its parent's producer in its memory, not as its own: it starts its loaders' producers.
    global _PRESTARTED, _LOCK
    _PRESTARTED, _LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget)


def take(command: Sequence[str], environment: Optional[Dict[str, str]]) -> Optional[subprocess.Popen]:
    """This process's prestarted producer, for a loader that would start ``command``, where it may.

    Args:
        command: the command before ``serve ...`` the loader would run.
        environment: the environment the loader would start it with (None: this process's).

    Returns:
        The producer's process, now the caller's to :func:`hand` its command to; or None (none was
        started, another loader took it, or it is not the one the loader would start: stopped).
    """
    global _PRESTARTED
    with _LOCK:
        prestarted = _PRESTARTED
        if prestarted is None or prestarted.pid != os.getpid():
            return None
        _PRESTARTED = None
    if (prestarted.proc.poll() is not None or list(command) != prestarted.command or environment is not None
            or _read_by_producer(os.environ) != prestarted.environ or os.getcwd() != prestarted.cwd):
        _stop(prestarted)
        return None
    return prestarted.proc


def _read_answer(proc: subprocess.Popen, timeout: float) -> str:
    """The producer's answer on stdout, ``ok`` or ``no: WHY``, or "" where it closed stdout or did not
    answer in time. Other lines before it are the JVM's own (its unified log writes to stdout, where a
    producer started by a loader has /dev/null) and are passed over."""
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    got = b""
    while True:
        while b"\n" in got:
            line, got = got.split(b"\n", 1)
            text = line.decode("utf-8", "replace").strip()
            if text == "ok" or text.startswith("no: "):
                return text
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return ""
        chunk = os.read(fd, 4096)
        if not chunk:
            return ""
        got += chunk


def hand(proc: subprocess.Popen, args: List[str]) -> bool:
    """Gives the prestarted producer ``proc`` (from :func:`take`) its command.

    Args:
        proc: the producer.
        args: ``serve ...``, as the loader would have started it with (files named ``/dev/fd/N``).

    Returns:
        True where the producer runs it; False where it could not (said once, loudly, unless it had
        just ended unused), the producer then stopped: the caller starts its own.
    """
    try:
        proc.stdin.write(json.dumps({"pid": os.getpid(), "args": list(args)}) + "\n")
        proc.stdin.close()
        answer = _read_answer(proc, ANSWER_TIMEOUT)
    except OSError:
        answer = ""
    try:
        proc.stdout.close()
    except OSError:
        pass
    if answer == "ok":
        return True
    if not answer:
        try:
            proc.wait(timeout=2)
            answer = f"it exited with status {proc.returncode}"
        except subprocess.TimeoutExpired:
            answer = f"it did not answer within {ANSWER_TIMEOUT:.0f} s"
    proc.kill()
    proc.wait()
    proc.stderr.close()
    if proc.returncode == 0:
        return False  # it had reached its idle limit as the loader came: nothing went wrong
    if not _SAID:
        _SAID.append(True)
        print(f"stoke: WARNING: the producer started at `import stoke` could not take this loader's command "
              f"({answer.removeprefix('no: ')}); starting one now, so its first batch comes as late as without "
              "it (STOKE_PRESTART=0 turns it off)", file=sys.stderr, flush=True)
    return False
