"""What the tests reach inside a ``stoke.DataLoader`` that users never need: kept here, under tests/,
so that the package carries no test aid (the wheel holds no tests/ file)."""

import subprocess
import time
import warnings
from typing import Any, List, Optional


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


def absent(*names: str) -> Optional[str]:
    """Why a test that needs the modules ``names`` cannot run here: the first one missing ("numpy is not
    installed"), or None where all import."""
    import importlib
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            return f"{name} is not installed"
    return None


def import_library(name: str) -> Any:
    """Imports the optional library ``name`` (timm, open_clip, lightning, datasets, onnxruntime...),
    or raises ``unittest.SkipTest`` saying it is absent.

    On a stack that promises the libraries (``STOKE_TEST_LIBRARIES=required``, which the torch 2.14.1
    stack sets), an absent one fails instead: a broken install must not turn into skipped tests.
    """
    import importlib
    import os
    import unittest
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if os.environ.get("STOKE_TEST_LIBRARIES") == "required":
            raise AssertionError(f"{name} cannot be imported on a stack that requires it: {e}") from e
        raise unittest.SkipTest(f"NOT CHECKED: {name} is not installed here ({e}); the torch 2.14.1 "
                                f"stack (clients/python/stacks/torch214.sh) has it")


def look_for_orphans_once_freed(loader: Any, raw: Any, looks: int = 3) -> List[str]:
    """Waits until ``raw``'s views are gone (its finaliser has begun), then lets the loader look
    ``looks`` times, 20 ms apart, for batches whose release never came (a batch is taken for one at
    two looks in a row).

    Returns:
        What the loader said meanwhile.

    Raises:
        AssertionError: the batch's views were not gone within 10 s.
    """
    deadline = time.monotonic() + 10
    while raw.owner() is not None:
        if time.monotonic() > deadline:
            raise AssertionError("the batch's finaliser never ran")
        time.sleep(0.001)
    time.sleep(0.05)  # well into the finaliser, where the test holds it
    ring = producer_ring(loader)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for _ in range(looks):
            loader._release_orphans(ring)
            time.sleep(0.02)
    return [str(w.message) for w in said]
