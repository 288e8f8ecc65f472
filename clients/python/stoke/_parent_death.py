"""Runs a command that the kernel kills when its parent dies:
``python -S -I _parent_death.py PARENT_PID -- COMMAND [ARG...]``.

How ``stoke.DataLoader`` starts its producer (see ``_producer.py``). This process sets
``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on itself, checks that its parent is still ``PARENT_PID`` (a
parent that died before the ``prctl`` sends no signal, and this process would already belong to
another), and ``exec``s ``COMMAND``: the signal survives ``execve`` (of anything but a set-user-ID
or privileged program), so ``./stoke``'s bash, the ``java`` it ``exec``s, or the wheel's bundled
``java`` carry it from their first instruction. A fresh interpreter does this, not a
``preexec_fn``: that runs between ``fork`` and ``exec`` in a copy of a process with threads
(torch's, the loader's), where a lock another thread held stays held for ever, and it rules out
``vfork``. It runs with ``-S -I`` and imports nothing of Stoke's, so it costs about 20 ms once per
producer.

SIGKILL rather than SIGTERM: everything a ``stoke.DataLoader``'s producer has is an anonymous file
that the kernel frees however it ends, so a SIGTERM would have nothing more to clean, and it could be
held up by a shutdown that waits on a stalled read. The JVM also watches ``--parent-pid`` itself.

The kernel sends the signal when the *thread* that started this process ends, not the process:
``_producer`` therefore starts producers from the main thread, or from one thread of its own that
lives as long as the process (see ``_producer.popen``).
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list) -> None:
    """Sets the death signal, checks the parent, and ``exec``s the command; returns only on usage errors.

    Args:
        argv: ``[script, PARENT_PID, "--", COMMAND, ARG...]``.
    """
    if len(argv) < 4 or argv[2] != "--" or not argv[1].isdigit():
        sys.exit(f"usage: {argv[0]} PARENT_PID -- COMMAND [ARG...]")
    parent, command = int(argv[1]), argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)) != 0:
        # Not Linux, or a kernel that refuses it: the JVM's own watch (--parent-pid) is left.
        print(f"stoke: WARNING: prctl(PR_SET_PDEATHSIG) failed ({os.strerror(ctypes.get_errno())}): the producer "
              f"stops within 100 ms of its parent's exit once its JVM runs, not with it", file=sys.stderr, flush=True)
    elif os.getppid() != parent:
        print(f"stoke: the parent process {parent} was gone before its producer started; not starting it",
              file=sys.stderr, flush=True)
        os._exit(1)
    try:
        os.execv(command[0], command)
    except OSError as e:
        print(f"stoke: cannot run {command[0]}: {e.strerror}", file=sys.stderr, flush=True)
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv)
