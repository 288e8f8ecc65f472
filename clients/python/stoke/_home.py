"""Where Stoke's Java side lives: the checkout that holds the ``./stoke`` launcher.

The launcher finds a JDK >= 25 and libturbojpeg, builds when sources changed, and runs the CLI;
the Python package starts it as ``<checkout>/stoke serve ...``. Looked for, in order:

1. ``$STOKE_HOME`` (a checkout: the folder holding ``./stoke``);
2. the checkout this package was installed from (pip records it in ``direct_url.json``, PEP 610);
3. the checkout this file lies in (``clients/python/stoke/`` on ``PYTHONPATH``).
"""

import json
import os
from pathlib import Path


class StokeNotFoundError(RuntimeError):
    """No ``./stoke`` launcher was found; the message says what to run."""


def _launcher_in(checkout):
    if checkout is None:
        return None
    launcher = Path(checkout) / "stoke"
    return launcher if launcher.is_file() and os.access(launcher, os.X_OK) else None


def _installed_from():
    """The checkout pip installed this package from, when it recorded a local directory."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution
    except ImportError:  # Python < 3.8
        return None
    try:
        text = distribution("stoke").read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    if not text:
        return None
    url = json.loads(text).get("url", "")
    if not url.startswith("file://"):
        return None
    # The package's project is clients/python inside the checkout.
    return Path(url[len("file://"):]).parent.parent


def launcher():
    """The path of ``./stoke`` to run; raises StokeNotFoundError saying what to do."""
    home = os.environ.get("STOKE_HOME")
    if home:
        found = _launcher_in(home)
        if found is None:
            raise StokeNotFoundError(
                f"STOKE_HOME={home} holds no executable ./stoke launcher. Point STOKE_HOME at a Stoke "
                "checkout (the folder with ./stoke and README.md), e.g. export STOKE_HOME=/path/to/stoke")
        return found
    for candidate in (_installed_from(), Path(__file__).resolve().parents[3]):
        found = _launcher_in(candidate)
        if found is not None:
            return found
    raise StokeNotFoundError(
        "Stoke's Java side was not found: stoke.DataLoader runs `<checkout>/stoke serve`. Set STOKE_HOME to "
        "a Stoke checkout, e.g.\n  export STOKE_HOME=/path/to/stoke\nor install this package from one: "
        "pip install --no-build-isolation /path/to/stoke/clients/python")
