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
