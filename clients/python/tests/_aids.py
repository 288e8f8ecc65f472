"""What the tests reach inside a ``stoke.DataLoader`` that users never need: kept here, under tests/,
so that the package carries no test aid (the wheel holds no tests/ file)."""

import subprocess
from typing import Any, Optional


def forget_what_was_said() -> None:
    """Lets every once-said StokeWarning be said again in this process, as in a fresh one."""
    from stoke import _settings
    _settings._said.clear()


def producer_process(loader: Any) -> Optional[subprocess.Popen]:
    """The loader's running producer process (``stoke serve``), or None between producers."""
    producer = loader._producer
    return None if producer is None else producer.proc


def producer_ring(loader: Any) -> Any:
    """The ring (``stoke.Ring``) the loader's running producer writes, or None between producers."""
    producer = loader._producer
    return None if producer is None else producer.ring
