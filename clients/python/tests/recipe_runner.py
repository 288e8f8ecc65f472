"""Runs torchvision's own ``references/classification/train.py`` with torch's DataLoader
(loader ``torch``) or renamed as a user renames it (loader ``stoke``: ``import stoke`` and
``torch.utils.data.DataLoader(`` -> ``stoke.DataLoader(``, the training and the validation loader,
nothing else), once for each job of a plan, and writes what the model and the loss saw as JSON.

    python3 recipe_runner.py REFERENCES PLAN.json

PLAN.json is a list of jobs, ``{"loader": "torch" | "stoke", "out": "OUT.json", "args": [train.py's
flags]}``, run in turn in this one interpreter (its imports, and under torchrun its process group,
are paid once rather than once a job). Each job runs train.py's ``main`` afresh: train.py's text is
read, renamed (for ``stoke``) and executed again as the module ``train``, its arguments parsed
again, so that its model, loaders and optimiser are the job's own; the loaders of the job before
are collected first. REFERENCES is a folder holding ``references/classification`` (a torchvision
source tree). train.py is not edited on disk: it runs beside its own presets.py, utils.py,
sampler.py and transforms.py. What is installed from outside, once:

- a forward pre-hook on the model ``torchvision.models.get_model`` returns, which records each
  batch's shape, dtype, per-image per-channel mean and standard deviation, and per-image share of
  values exactly 0 (erased), for training and evaluation apart (``model.training``), into the
  running job's records;
- ``torch.nn.CrossEntropyLoss`` as a subclass that records the targets the loss gets;
- on ``--device cpu`` under torchrun, the four places where the recipe's distributed mode assumes
  CUDA: ``torch.cuda.set_device`` does nothing, ``init_process_group``'s ``nccl`` is ``gloo``,
  ``DistributedDataParallel`` is given no ``device_ids`` (a CPU module takes none), and utils.py's
  ``reduce_across_processes`` sums a CPU tensor rather than a ``"cuda"`` one. The process group is
  made by the first job; the later jobs' ``init_process_group`` finds it made and meets the other
  rank at a barrier instead.

Each job writes its ``out``, under torchrun with ``.rank<R>`` before its suffix: the records, or,
where train.py raised, ``{"error": its traceback}``. A single process goes on to the next job; a
rank stops there (exit status 1), since the other rank may be waiting in a collective of the
failed job, and torchrun then stops it (started without torchrun, the process group's timeout does).
"""

import builtins
import datetime
import gc
import json
import os
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any, Dict, List

import torch
import torchvision

TORCH_LOADER = "torch.utils.data.DataLoader("
STOKE_LOADER = "stoke.DataLoader("
# A rank whose partner stopped (started without torchrun, which would stop it) gives up after this
# rather than after gloo's 30 minutes; a job's collectives are a batch apart, seconds at most.
GROUP_TIMEOUT = datetime.timedelta(minutes=5)


def renamed(source: str) -> str:
    """train.py as a user renames it: its two loaders are Stoke's."""
    if source.count(TORCH_LOADER) != 2:
        raise SystemExit(f"recipe_runner: train.py calls {TORCH_LOADER} {source.count(TORCH_LOADER)} times, not 2 "
                         "(the training and the validation loader): is this torchvision's references/classification?")
    return "import stoke\n" + source.replace(TORCH_LOADER, STOKE_LOADER)


class Seen:
    """What the model's forward and the loss received, in the order they received it."""

    def __init__(self) -> None:
        self.batches: Dict[str, List[Dict[str, Any]]] = {"train": [], "val": []}
        self.targets: Dict[str, List[Dict[str, Any]]] = {"train": [], "val": []}
        self.phase = "train"

    def forward(self, module: torch.nn.Module, args: tuple) -> None:
        image = args[0]
        self.phase = "train" if module.training else "val"
        flat = image.detach().to(torch.float64).flatten(2)  # [n, c, h * w]
        self.batches[self.phase].append({
            "shape": list(image.shape), "dtype": str(image.dtype),
            "mean": flat.mean(dim=2).tolist(), "std": flat.std(dim=2).tolist(),
            # Normalised pixels are never exactly 0 (no uint8 over 255 equals ImageNet's mean):
            # the share of zeros is what RandomErasing's value 0 covered.
            "zeros": (flat == 0).to(torch.float64).mean(dim=(1, 2)).tolist()})

    def loss(self, target: torch.Tensor) -> None:
        self.targets[self.phase].append({"shape": list(target.shape), "dtype": str(target.dtype),
                                         "values": target.tolist()})


class Recorder:
    """The running job's Seen, which the hooks (installed once) record into."""

    def __init__(self) -> None:
        self.seen = Seen()


def install_hooks(recorder: Recorder, cpu: bool) -> None:
    get_model = torchvision.models.get_model

    def recorded_model(*args: Any, **kwargs: Any) -> torch.nn.Module:
        model = get_model(*args, **kwargs)
        model.register_forward_pre_hook(lambda module, args: recorder.seen.forward(module, args))
        return model

    torchvision.models.get_model = recorded_model

    class RecordedCrossEntropyLoss(torch.nn.CrossEntropyLoss):
        def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            recorder.seen.loss(target)
            return super().forward(input, target)

    torch.nn.CrossEntropyLoss = RecordedCrossEntropyLoss

    if cpu and "RANK" in os.environ:
        torch.cuda.set_device = lambda device: None
        init_process_group = torch.distributed.init_process_group

        def gloo(backend: Any = None, *args: Any, **kwargs: Any) -> None:
            if torch.distributed.is_initialized():  # made by the first job
                torch.distributed.barrier()
                return
            kwargs.setdefault("timeout", GROUP_TIMEOUT)
            init_process_group("gloo" if backend == "nccl" else backend, *args, **kwargs)

        torch.distributed.init_process_group = gloo
        ddp = torch.nn.parallel.DistributedDataParallel

        class CpuDistributedDataParallel(ddp):
            def __init__(self, module: torch.nn.Module, device_ids: Any = None, **kwargs: Any) -> None:
                super().__init__(module, **kwargs)

        torch.nn.parallel.DistributedDataParallel = CpuDistributedDataParallel
        utils = sys.modules["utils"]  # the recipe's own, imported by train.py

        def reduce_across_processes(val: Any) -> torch.Tensor:
            t = torch.tensor(val)
            torch.distributed.barrier()
            torch.distributed.all_reduce(t)
            return t

        utils.reduce_across_processes = reduce_across_processes


def load_train(train_py: Path, loader: str) -> types.ModuleType:
    """train.py, renamed for Stoke's loader, executed afresh as the module ``train``."""
    source = train_py.read_text()
    if loader == "stoke":
        source = renamed(source)
    train = types.ModuleType("train")
    train.__file__ = str(train_py)
    sys.modules["train"] = train
    exec(compile(source, str(train_py), "exec"), train.__dict__)
    return train


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: recipe_runner.py REFERENCES PLAN.json")
    folder = Path(sys.argv[1]) / "references" / "classification"
    jobs = json.loads(Path(sys.argv[2]).read_text())
    train_py = folder / "train.py"
    if not train_py.is_file():
        raise SystemExit(f"recipe_runner: {train_py} is missing")
    sys.path.insert(0, str(folder))
    rank = os.environ.get("RANK")
    recorder = Recorder()
    hooked = False
    plain_print = builtins.print
    for job in jobs:
        started = time.monotonic()
        out = Path(job["out"])
        if rank is not None:
            out = out.with_name(f"{out.stem}.rank{rank}{out.suffix}")
        recorder.seen = seen = Seen()
        try:
            train = load_train(train_py, job["loader"])
            args = train.get_args_parser().parse_args(job["args"])
            if not hooked:  # after train.py's first import of the recipe's utils.py
                install_hooks(recorder, args.device == "cpu")
                hooked = True
            train.main(args)
            record = {"batches": seen.batches, "targets": seen.targets,
                      "torch": torch.__version__, "torchvision": torchvision.__version__}
        except BaseException:  # noqa: B036 (train.py's argparse exits; a refusal raises)
            record = {"error": traceback.format_exc()}
        finally:
            builtins.print = plain_print  # utils.setup_for_distributed wraps print each job
            train = args = None
            gc.collect()  # the job's loaders close before the next job's start
        out.write_text(json.dumps(record))
        print(f"[recipe_runner] {Path(job['out']).stem}: "
              f"{'failed' if 'error' in record else 'done'} in {time.monotonic() - started:.1f} s", file=sys.stderr)
        if "error" in record:
            print(record["error"], file=sys.stderr)
            if rank is not None:
                sys.stderr.flush()
                os._exit(1)  # the other rank may wait in a collective: no barrier, no teardown
    if torch.distributed.is_initialized():
        # Both ranks have written their records before either leaves: a rank destroying its group
        # while the other still talks to it hung once on Debian 13's torch 2.6.
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
