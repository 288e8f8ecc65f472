#!/usr/bin/env python3
"""A training-shaped consumer of ``stoke.DataLoader(decode="gpu"|"auto")`` on the CUDA and nvJPEG
test doubles, for a while, under seeded random settings: a wiring check of the device slots' release
path on a machine with no GPU, never a GPU verification.

What makes it training-shaped: each batch's step is queued on a stream of the double's that runs
its copies late (``stoke_double_set_copy_delay_us``), and most batches are freed on another thread
after a random lag, as autograd's device thread frees a saved input during the backward pass, while
the loop goes on to its next batch. The loop waits for that thread before it hands it another batch,
as ``backward()`` returns only once it is done.

It fails (exit 1) where a batch does not come within the loader's timeout, an epoch it read whole
does not hold each of its samples once, or the loader says a release was cut short by an interrupt
(none is sent here). Run from the checkout, with the doubles built (``mvn install`` builds them)::

    ./stoke make-dataset /tmp/tsd --images 1024 --seed 2 --classes 4
    for s in 1 2 3 4 5 6 7 8; do /usr/bin/python3 benchmarks/gpu/train_shaped_doubles.py /tmp/tsd --seconds 60 --seed $s; done
"""

import argparse
import ctypes
import os
import queue
import random
import sys
import threading
import time
import unittest.mock
import warnings
from pathlib import Path
from typing import List, Optional

CHECKOUT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(CHECKOUT / "clients" / "python"))
sys.path.insert(0, str(CHECKOUT / "clients" / "python" / "tests"))
os.environ.setdefault("STOKE_HOME", str(CHECKOUT))

import stoke  # noqa: E402
import test_gpu_decode as doubles  # noqa: E402  (the doubles' CUDA side, as the package's tests use it)
from stoke import _device_slots  # noqa: E402


def run(root: str, seconds: float, seed: int) -> int:
    """Reads ``root`` for ``seconds`` under settings drawn from ``seed``.

    Args:
        root: an ImageFolder tree (``./stoke make-dataset``).
        seconds: how long to read, whole epochs or not.
        seed: draws the settings, the lags, and the loader's own seed.

    Returns:
        0 when every check held, else 1 (said on stderr).
    """
    if doubles.double_missing():
        print(f"train_shaped_doubles: {doubles.double_missing()}", file=sys.stderr)
        return 1
    os.environ["STOKE_JAVA_OPTS"] = f"-Dstoke.cuda.path={doubles.DOUBLE} -Dstoke.nvjpeg.path={doubles.DOUBLE}"
    draw = random.Random(seed)
    double = ctypes.CDLL(str(doubles.DOUBLE))
    double.stoke_double_set_copy_delay_us.argtypes = [ctypes.c_long]
    double.stoke_double_set_copy_delay_us(draw.choice([0, 2000, 8000]))
    settings = dict(batch_size=draw.choice([8, 16, 32]), decode=draw.choice(["gpu", "gpu", "auto"]),
                    slots=draw.choice([3, 4]))
    side = doubles.LaggingStreamSide(double)
    autograd: "queue.Queue[Optional[List[object]]]" = queue.Queue(maxsize=1)

    def backward() -> None:
        while True:
            box = autograd.get()
            if box is None:
                return
            time.sleep(draw.random() * 0.03)
            box.clear()  # the batch's last view: its finaliser runs on this thread
            autograd.task_done()

    threading.Thread(target=backward, daemon=True).start()
    failures: List[str] = []
    batches = 0
    worst = 0.0
    epochs_whole = 0
    start = time.monotonic()
    with warnings.catch_warnings(record=True) as said, unittest.mock.patch.object(_device_slots, "cuda_side", side):
        warnings.simplefilter("always")
        loader = stoke.DataLoader(root, num_workers=2, shuffle=True, seed=seed, resize=64, crop=56,
                                  transform="train", output="float32", on_error="skip", timeout=40,
                                  drop_last=True, with_indices=True, **settings)
        try:
            per_epoch = len(loader) * settings["batch_size"]
            while time.monotonic() - start < seconds:
                seen: List[int] = []
                t = time.monotonic()
                for images, labels, indices in loader:
                    worst = max(worst, time.monotonic() - t)
                    batches += 1
                    seen += indices.tolist()
                    box = [images]
                    del images, labels, indices
                    if draw.random() < 0.7:
                        autograd.join()
                        autograd.put(box)
                    del box
                    time.sleep(draw.random() * 0.02)  # the step's host side
                    if time.monotonic() - start >= seconds:
                        break
                    t = time.monotonic()
                else:
                    epochs_whole += 1
                    if len(seen) != per_epoch or len(set(seen)) != per_epoch:
                        failures.append(f"an epoch held {len(seen)} samples, {len(set(seen))} of them distinct, "
                                        f"not {per_epoch} once each")
        except RuntimeError as e:  # a timeout, or every slot held
            failures.append(str(e).splitlines()[0])
        finally:
            autograd.join()
            loader.close()
            autograd.put(None)
    failures += [str(w.message) for w in said if "interrupt" in str(w.message)]
    print(f"seed {seed} ({settings}): {batches} batches, {epochs_whole} whole epochs, "
          f"longest wait {worst:.2f} s", flush=True)
    for f in failures:
        print(f"train_shaped_doubles: FAILED: {f}", file=sys.stderr)
    return 1 if failures else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", help="an ImageFolder tree")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    return run(args.root, args.seconds, args.seed)


if __name__ == "__main__":
    sys.exit(main())
