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
from ._site import name_site_packages


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
    name_site_packages(os.environ)  # where torchvision's bundled libnvjpeg may be (see _site)
    os.execv(command[0], command + list(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
