"""``python -m stoke ARGS``: Stoke's command line (``stoke bench``, ``stoke gpu-check``,
``stoke make-dataset``, ...) from this package, the same program ``./stoke`` runs in a checkout.

From the self-contained wheel it runs the bundled Java runtime, so a machine with the wheel and
libturbojpeg0 alone (no JDK, no checkout) has the whole CLI; otherwise the checkout's ``./stoke``
that ``stoke.DataLoader`` would use. The process is replaced (``exec``), so its exit status is
the command's.
"""

import os
import sys

from ._home import StokeNotFoundError, stoke_command


def main(argv: "list[str]") -> None:
    """Replaces this process with ``stoke ARGV...``.

    Args:
        argv: the command's arguments, e.g. ``["gpu-check"]``.

    Raises:
        SystemExit: with status 2, saying what to do, when no Java side is found.
    """
    try:
        command = stoke_command()
    except StokeNotFoundError as e:
        print(f"python -m stoke: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    sys.stdout.flush()
    sys.stderr.flush()
    # This Python's site-packages, where a system or user install keeps torchvision's bundled
    # libnvjpeg (the GPU decode's, found by io.stoke.gpu.NvjpegLibrary), which no VIRTUAL_ENV names.
    os.environ.setdefault("STOKE_PYTHON_SITE_PACKAGES", os.pathsep.join(site_packages()))
    os.execv(command[0], command + list(argv))


def site_packages() -> "list[str]":
    """This Python's site-packages folders: the environment's, then the user's, each once.

    Returns:
        The folders that exist, in that order.
    """
    import site
    import sysconfig

    found = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    found += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    found += [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    return [d for i, d in enumerate(found) if d not in found[:i] and os.path.isdir(d)]


if __name__ == "__main__":
    main(sys.argv[1:])
