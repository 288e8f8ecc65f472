"""``stoke.tune``: the batch size and workers that feed a step fastest, from Python.

The search is Stoke's Java tuner (``io.stoke.tune``, what ``stoke tune`` runs); this module starts
it through the same Java side as :class:`stoke.DataLoader` and returns its report.
"""

import json
import os
import subprocess
from typing import Any, Dict, Optional, Sequence

from ._home import stoke_command
from ._producer import parent_death_command

__all__ = ["tune", "TuneError"]


class TuneError(RuntimeError):
    """``stoke tune`` failed; the message holds what it said."""


def tune(
    data: str,
    out: str,
    *,
    step_ms: Optional[float] = None,
    step_ms_per_image: Optional[float] = None,
    model: Optional[str] = None,
    batch_sizes: Sequence[int] = (32, 64, 128, 256),
    max_workers: Optional[int] = None,
    seconds_per_point: float = 3.0,
    candidates: int = 3,
    exhaustive: bool = False,
) -> Dict[str, Any]:
    r"""Finds the batch size and number of workers that feed a step fastest on this machine.

    The step is a sleep (a model on an accelerator, which leaves the cores to the workers) or an
    ONNX model run on the CPU. The tuner measures decoding and the step, predicts every point with
    a cost model, runs the best few predictions for real and recommends the best measured one.

    Args:
        data: the dataset: an ImageFolder directory, a list file, a tar shard, a brace pattern of
            shards or a folder of them.
        out: a folder for the report (``tune.json``) and its plot (``tune.png``); created when missing.
        step_ms: the step sleeps this many milliseconds per batch.
        step_ms_per_image: the step sleeps this many milliseconds per image of the batch (with
            ``step_ms``, their sum).
        model: an ONNX model run as the step instead of a sleep (needs a build with ONNX Runtime:
            a checkout's, not the wheel's).
        batch_sizes: the batch sizes to try.
        max_workers: consider 1 to this many workers (default: twice the cores).
        seconds_per_point: each measured point's timed window.
        candidates: at most this many predicted points are run for real.
        exhaustive: run every point instead (to check the tuner against a full sweep).

    Returns:
        ``tune.json`` as a dict; ``report["recommendation"]`` holds the batch size and workers.

    Raises:
        ValueError: no step, or two of them, or an argument out of range.
        TuneError: the tuner failed (a dataset that does not open, a model that does not load);
            the message is what it said.
        StokeNotFoundError: no Java side was found.

    Example::

        report = stoke.tune("/data/imagenet/val", "/tmp/tune", step_ms=40)
        best = report["recommendation"]
        loader = stoke.DataLoader("/data/imagenet/val", batch_size=best["batch_size"],
                                  num_workers=best["workers"])
    """
    if model is None and step_ms is None and step_ms_per_image is None:
        raise ValueError("tune needs a step: step_ms, step_ms_per_image or model")
    if model is not None and (step_ms is not None or step_ms_per_image is not None):
        raise ValueError("tune's step is either a model or a sleep (step_ms, step_ms_per_image), not both")
    for name, value in (("step_ms", step_ms), ("step_ms_per_image", step_ms_per_image)):
        if value is not None and value < 0:
            raise ValueError(f"{name} must not be negative, not {value}")
    sizes = [int(b) for b in batch_sizes]
    if not sizes or any(b < 1 for b in sizes):
        raise ValueError(f"batch_sizes must be positive, not {list(batch_sizes)}")
    if max_workers is not None and max_workers < 1:
        raise ValueError(f"max_workers must be positive, not {max_workers}")
    if seconds_per_point <= 0 or candidates < 1:
        raise ValueError("seconds_per_point and candidates must be positive")
    args = ["tune", os.fspath(data), "--out", os.fspath(out), "--batch-sizes", ",".join(map(str, sizes)),
            "--seconds-per-point", repr(float(seconds_per_point)), "--candidates", str(int(candidates))]
    if step_ms is not None:
        args += ["--step-ms", repr(float(step_ms))]
    if step_ms_per_image is not None:
        args += ["--step-ms-per-image", repr(float(step_ms_per_image))]
    if model is not None:
        args += ["--model", os.fspath(model)]
    if max_workers is not None:
        args += ["--max-workers", str(int(max_workers))]
    if exhaustive:
        args.append("--exhaustive")
    # The tuner's progress goes to stderr, which is left to the caller's terminal; its table to stdout.
    # It decodes for minutes: like a loader's producer, it dies with this process (_parent_death.py;
    # this thread waits for it, so the thread that started it outlives it).
    done = subprocess.run(parent_death_command() + stoke_command() + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise TuneError(f"stoke tune exited with {done.returncode}: " + (said[-1] if said else "no message"))
    with open(os.path.join(os.fspath(out), "tune.json"), encoding="utf-8") as f:
        return json.load(f)
