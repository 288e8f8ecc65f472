"""Runs torchvision's own ``references/classification/train.py`` with torch's DataLoader
(``--loader torch``) or renamed as a user renames it (``--loader stoke``: ``import stoke`` and
``torch.utils.data.DataLoader(`` -> ``stoke.DataLoader(``, the training and the validation loader,
nothing else), and writes what the model and the loss saw as JSON.

    python3 recipe_runner.py REFERENCES OUT.json --loader stoke -- --data-path DATA --model ... [train.py's flags]

REFERENCES is a folder holding ``references/classification`` (a torchvision source tree). train.py
is not edited on disk: its text is read, renamed (for ``--loader stoke``) and run as the module
``train``, beside its own presets.py, utils.py, sampler.py and transforms.py. What is installed
from outside, before its ``main`` runs:

- a forward pre-hook on the model ``torchvision.models.get_model`` returns, which records each
  batch's shape, dtype, per-image per-channel mean and standard deviation, and per-image share of
  values exactly 0 (erased), for training and evaluation apart (``model.training``);
- ``torch.nn.CrossEntropyLoss`` as a subclass that records the targets the loss gets;
- on ``--device cpu`` under torchrun, the four places where the recipe's distributed mode assumes
  CUDA: ``torch.cuda.set_device`` does nothing, ``init_process_group``'s ``nccl`` is ``gloo``,
  ``DistributedDataParallel`` is given no ``device_ids`` (a CPU module takes none), and utils.py's
  ``reduce_across_processes`` sums a CPU tensor rather than a ``"cuda"`` one.

Under torchrun each rank writes ``OUT`` with ``.rank<R>`` before its suffix.
"""

import argparse
import json
import os
import sys
import types
from pathlib import Path
from typing import Any, Dict, List

import torch
import torchvision

TORCH_LOADER = "torch.utils.data.DataLoader("
STOKE_LOADER = "stoke.DataLoader("


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


def install_hooks(seen: Seen, cpu: bool) -> None:
    get_model = torchvision.models.get_model

    def recorded_model(*args: Any, **kwargs: Any) -> torch.nn.Module:
        model = get_model(*args, **kwargs)
        model.register_forward_pre_hook(seen.forward)
        return model

    torchvision.models.get_model = recorded_model

    class RecordedCrossEntropyLoss(torch.nn.CrossEntropyLoss):
        def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            seen.loss(target)
            return super().forward(input, target)

    torch.nn.CrossEntropyLoss = RecordedCrossEntropyLoss

    if cpu and "RANK" in os.environ:
        torch.cuda.set_device = lambda device: None
        init_process_group = torch.distributed.init_process_group

        def gloo(backend: Any = None, *args: Any, **kwargs: Any) -> None:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("references", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--loader", choices=("torch", "stoke"), required=True)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    ours = parser.parse_args(argv[:split])
    train_args = argv[split + 1:]
    folder = ours.references / "references" / "classification"
    train_py = folder / "train.py"
    if not train_py.is_file():
        raise SystemExit(f"recipe_runner: {train_py} is missing")
    sys.path.insert(0, str(folder))
    source = train_py.read_text()
    if ours.loader == "stoke":
        source = renamed(source)
    train = types.ModuleType("train")
    train.__file__ = str(train_py)
    sys.modules["train"] = train
    exec(compile(source, str(train_py), "exec"), train.__dict__)

    args = train.get_args_parser().parse_args(train_args)
    seen = Seen()
    install_hooks(seen, args.device == "cpu")
    train.main(args)
    out = ours.out
    if "RANK" in os.environ:
        out = out.with_name(f"{out.stem}.rank{os.environ['RANK']}{out.suffix}")
    out.write_text(json.dumps({"batches": seen.batches, "targets": seen.targets,
                               "torch": torch.__version__, "torchvision": torchvision.__version__}))
    if torch.distributed.is_initialized():
        # Both ranks have written their records before either leaves: a rank destroying its group
        # while the other still talks to it hung once on Debian 13's torch 2.6.
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
