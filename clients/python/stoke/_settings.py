"""``stoke.DataLoader``'s arguments as the producer's settings: PyTorch's keywords and a dataset's
transform translated, Stoke's own checked, all before anything is created.

:func:`resolve` is the whole of it: it raises ValueError or TypeError naming the first argument it
refuses (UnsupportedError, a ValueError, for a transform or sampler Stoke cannot do exactly), and
returns a :class:`Settings` that the loader adopts. It makes no file and starts no process; torch
is imported only where an argument needs it.
"""

import dataclasses
import numbers
import operator
import os
import re
import warnings
from typing import Any, Callable, List, Optional, Sequence, Set, Tuple, Union

from . import _home
from . import _torch_compat as _compat

__all__ = ["Settings", "StokeWarning", "default_workers", "resolve", "say_once"]


class StokeWarning(UserWarning):
    """What stoke.DataLoader says once about a PyTorch keyword it maps, costs or ignores."""


#: The keys of what has been said once in this process.
SAID: Set[str] = set()


def say_once(key: str, message: str, stacklevel: int = 2) -> None:
    """Warns with ``message`` (a :class:`StokeWarning`) the first time ``key`` is said in this process.

    Args:
        key: what is said (one key per PyTorch keyword that Stoke maps or ignores).
        message: the warning.
        stacklevel: as ``warnings.warn``'s, counted from the caller of this function.
    """
    if key not in SAID:
        SAID.add(key)
        warnings.warn(message, StokeWarning, stacklevel=stacklevel + 1)


def default_rank_and_world() -> Tuple[int, int]:
    """``torch.distributed``'s rank and world size where it is initialised, else torchrun's
    ``RANK`` and ``WORLD_SIZE``, else 0 and 1."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def default_workers() -> int:
    """The most decoding threads a producer runs: this process's cores shared by the node's ranks
    (``LOCAL_WORLD_SIZE``)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))


def _is_default_collate(fn: Any) -> bool:
    try:
        from torch.utils.data import _utils
        from torch.utils.data import default_collate
    except ImportError:
        return False
    return fn is default_collate or fn is _utils.collate.default_collate


def _integer(name: str, value: Any) -> int:
    """``value`` as an int (anything with ``__index__``, a numpy or one-element torch integer included;
    an integral float as before these checks), or a TypeError naming the argument."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{name} must be an integer, not {value!r}")


def _number(name: str, value: Any) -> float:
    """``value`` as a float, or a TypeError naming the argument."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"{name} must be a number, not {value!r}")


def _torch_keywords(*, batch_size, sampler, batch_sampler, shuffle, seed, rank, world_size, shard_tail, num_workers,
                    collate_fn, pin_memory, timeout, worker_init_fn, multiprocessing_context, generator, prefetch_factor,
                    persistent_workers, pin_memory_device, in_order, slots, batch_transform, with_indices):
    """PyTorch DataLoader's keywords as Stoke's settings, refusing what cannot be done (with
    PyTorch's own message where PyTorch refuses it too). A dict of the settings they decide."""
    out = {"shuffle": bool(shuffle), "seed": seed, "rank": rank, "world_size": world_size, "shard_tail": shard_tail}

    def agree(key, value, source):
        if out[key] is not None and out[key] != value:
            raise ValueError(f"{key}={out[key]!r} given, and {source} says {value!r}: pass one or the other")
        out[key] = value

    if batch_size is None:
        raise ValueError("stoke.DataLoader always batches: batch_size=None (PyTorch's unbatched mode, one sample "
                         "at a time) is not supported; pass batch_size=1 for batches of one sample")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
    if batch_sampler is not None:
        raise ValueError("stoke.DataLoader does not take batch_sampler: its batches are drawn by the Java producer "
                         "(batch_size, drop_last, sampler=RandomSampler/SequentialSampler/DistributedSampler). Use "
                         "torch.utils.data.DataLoader for a batch sampler of your own.")
    if sampler is not None:
        if shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler
        kind = type(sampler)
        if kind is RandomSampler:
            # torch keeps num_samples private; reading it is the only way to tell a resampling sampler.
            if sampler.replacement or sampler._num_samples is not None:
                raise ValueError("stoke.DataLoader takes RandomSampler without replacement and num_samples (a "
                                 "permutation of the dataset each epoch); use torch.utils.data.DataLoader for this one")
            out["shuffle"] = True
            if sampler.generator is not None:
                agree("seed", int(sampler.generator.initial_seed()), "the RandomSampler's generator")
        elif kind is SequentialSampler:
            out["shuffle"] = False
        if kind in (RandomSampler, SequentialSampler):
            # As with torch: every sample on this process, even under torchrun (no DistributedSampler).
            agree("rank", 0, f"the {kind.__name__} (the whole dataset on every process)")
            agree("world_size", 1, f"the {kind.__name__} (the whole dataset on every process)")
        elif kind is DistributedSampler:
            out["shuffle"] = bool(sampler.shuffle)
            agree("seed", int(sampler.seed), "the DistributedSampler")
            agree("rank", int(sampler.rank), "the DistributedSampler")
            agree("world_size", int(sampler.num_replicas), "the DistributedSampler")
            agree("shard_tail", "drop" if sampler.drop_last else "pad", "the DistributedSampler's drop_last")
        else:
            raise ValueError(f"stoke.DataLoader cannot draw the order of {kind.__name__}: it takes RandomSampler, "
                             "SequentialSampler or DistributedSampler (or shuffle=, seed=, rank=, world_size=), whose "
                             "orders its Java producer draws itself. Use torch.utils.data.DataLoader for a sampler of "
                             "your own.")
    if generator is not None:
        agree("seed", int(generator.initial_seed()), "the generator's initial_seed()")
    out["seed"] = None if out["seed"] is None else _integer("seed", out["seed"])  # None: drawn once the world is known
    out["shard_tail"] = "pad" if out["shard_tail"] is None else out["shard_tail"]
    # PyTorch's 0 is "no worker processes"; Stoke never decodes in this process, so 0 (the default)
    # leaves the number of decoding threads to the producer, as "auto" does.
    if num_workers is None or num_workers == "auto":
        out["num_workers"] = "auto"
    elif isinstance(num_workers, bool) or not isinstance(num_workers, int):
        raise ValueError(f"num_workers must be a non-negative int or 'auto', not {num_workers!r}")
    elif num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    else:
        out["num_workers"] = "auto" if num_workers == 0 else num_workers
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if _number("timeout", timeout) < 0:
        raise ValueError("timeout option should be non-negative")
    if prefetch_factor is not None:
        if slots is not None:
            raise ValueError("slots and prefetch_factor both size the ring: pass one")
        if _integer("prefetch_factor", prefetch_factor) < 1:
            raise ValueError(f"prefetch_factor must be positive, not {prefetch_factor}")
        workers = out["num_workers"]
        slots = max(2, (default_workers() if workers == "auto" else workers) * int(prefetch_factor))
    out["slots"] = 4 if slots is None else _integer("slots", slots)
    if worker_init_fn is not None:
        say_once("worker-init", "stoke.DataLoader: worker_init_fn is ignored: Stoke decodes in Java threads, no "
                                "Python runs in them (its transforms are the producer's own, seeded by seed)",
                 stacklevel=4)
    if multiprocessing_context is not None:
        say_once("mp-context", "stoke.DataLoader: multiprocessing_context is ignored: Stoke's producer is one Java "
                               "process, started with subprocess", stacklevel=4)
    if not isinstance(in_order, bool):
        raise ValueError(f"in_order must be True or False, not {in_order!r}")
    out["collate"] = None
    if collate_fn is not None and not _is_default_collate(collate_fn):
        if batch_transform is not None:
            raise ValueError("collate_fn and batch_transform both make the batch: pass one")
        if with_indices:
            raise ValueError("with_indices adds the indices to Stoke's batch; with a collate_fn the batch is what it "
                             "returns: pass one or the other")
        say_once("collate", "stoke.DataLoader: collate_fn gets each batch as a list of (image, label) samples and "
                            "copies them into its batch, as with torch; batch_transform=fn(images, labels) does the same "
                            "on the whole batch without that copy (e.g. mixup/cutmix on the device)", stacklevel=4)
        out["collate"] = collate_fn
    device = str(pin_memory_device)
    if device and device != "cuda" and not re.fullmatch(r"cuda:\d+", device):
        raise ValueError(f"stoke.DataLoader pins memory for CUDA only: pin_memory_device={pin_memory_device!r} is "
                         "not a CUDA device ('', 'cuda' or 'cuda:N'); use torch.utils.data.DataLoader for this device")
    out["pin"] = False
    if pin_memory:
        import torch
        if torch.cuda.is_available():
            out["pin"] = True
        else:
            say_once("pin-no-cuda", "stoke.DataLoader: pin_memory has no effect without CUDA", stacklevel=4)
    elif device:
        say_once("pin-device-unused", "stoke.DataLoader: pin_memory_device is set and pin_memory is not: nothing "
                                      "is pinned (as with torch)", stacklevel=4)
    return out


def _transform_settings(dataset, *, transform, resize, crop, output, mean, std, dct_scaling):
    """The producer's transform: the dataset's own translated, else Stoke's keywords with their
    defaults. A dict of transform, resize, crop, output, mean, std, chw, scale, ratio, flip and
    dct_scaling."""
    given = {k: v for k, v in (("resize", resize), ("crop", crop), ("output", output), ("transform", transform),
                               ("mean", mean), ("std", std)) if v is not None}
    out = {"transform": transform, "resize": resize, "crop": crop, "output": output, "mean": mean, "std": std,
           "chw": False, "scale": None, "ratio": None, "flip": None}
    translated = dataset is not None and getattr(dataset, "transform", None) is not None
    if translated:
        if given:
            raise ValueError(f"{', '.join(given)} given, and the dataset has a transform that already decides "
                             f"{'it' if len(given) == 1 else 'them'}: pass one or the other")
        out.update(_compat.translate_transform(dataset.transform))
    out["transform"] = "eval" if out["transform"] is None else out["transform"]
    out["resize"] = 256 if out["resize"] is None else _integer("resize", out["resize"])
    out["crop"] = 224 if out["crop"] is None else _integer("crop", out["crop"])
    out["output"] = "uint8" if out["output"] is None else out["output"]
    # A torchvision transform is translated exactly: no DCT scaling unless asked for.
    out["dct_scaling"] = ("none" if translated else "pow2") if dct_scaling is None else dct_scaling
    if out["output"] not in ("uint8", "float32"):
        raise ValueError(f"output must be 'uint8' or 'float32', not {out['output']!r}")
    if out["transform"] not in ("eval", "train"):
        raise ValueError(f"transform must be 'eval' or 'train', not {out['transform']!r}")
    if out["dct_scaling"] not in ("none", "pow2", "all"):
        raise ValueError(f"dct_scaling must be 'none', 'pow2' or 'all', not {out['dct_scaling']!r}")
    mean, std = out["mean"], out["std"]
    if (mean is None) != (std is None) or (mean is not None and (
            not hasattr(mean, "__len__") or not hasattr(std, "__len__") or len(mean) != 3 or len(std) != 3)):
        raise ValueError("mean and std go together, three numbers each (RGB, on a 0-1 scale)")
    if mean is not None and out["output"] != "float32":
        raise ValueError("mean and std normalise output='float32'; the uint8 output is not normalised")
    out["mean"] = None if mean is None else [_number("mean", v) for v in mean]
    out["std"] = None if std is None else [_number("std", v) for v in std]
    if out["resize"] < 1 or out["crop"] < 1:
        raise ValueError(f"resize and crop must be positive, not {out['resize']} and {out['crop']}")
    return out


@dataclasses.dataclass
class Settings:
    """Every argument of a ``stoke.DataLoader``, checked, with the defaults and translations applied."""

    # What to read: a dataset object (or None for a path), its samples (None for a path), the path.
    dataset: Any
    samples: Optional[List[Tuple[str, int]]]
    path: Optional[str]
    stoke: List[str]  # the command before ``serve ...``
    # PyTorch's keywords as they were passed, kept as torch's DataLoader keeps them.
    sampler: Any
    collate_fn: Optional[Callable]
    pin_memory: bool
    pin_memory_device: str
    timeout: float
    worker_init_fn: Optional[Callable]
    multiprocessing_context: Any
    generator: Any
    prefetch_factor: Optional[int]
    persistent_workers: bool
    in_order: bool
    # Stoke's settings.
    batch_size: int
    drop_last: bool
    shuffle: bool
    seed: int
    seed_drawn: bool
    rank: int
    world_size: int
    shard_tail: str
    num_workers: Union[int, str]
    slots: int
    collate: Optional[Callable]  # collate_fn, unless it is torch's default_collate
    pin: bool  # pin_memory where CUDA is available
    batch_transform: Optional[Callable]
    with_indices: bool
    on_error: str
    transform: str
    resize: int
    crop: int
    output: str
    mean: Optional[List[float]]
    std: Optional[List[float]]
    chw: bool
    scale: Optional[List[float]]
    ratio: Optional[List[float]]
    flip: Optional[float]
    dct_scaling: str
    shuffle_window: Optional[int]
    shard_cache: Optional[str]
    shard_cache_dir: Optional[Union[str, "os.PathLike[str]"]]
    cache_dir: Optional[Union[str, "os.PathLike[str]"]]
    cache_size: Optional[str]
    cache_shared_with: Optional[str]
    image_column: Optional[str]
    label_column: Optional[str]
    key_column: Optional[str]
    worker_nice: int
    start_timeout: float


def resolve(dataset: Any, *, batch_size: Optional[int], shuffle: Optional[bool], sampler: Any, batch_sampler: Any,
            num_workers: Union[int, str, None], collate_fn: Optional[Callable], pin_memory: bool, drop_last: bool,
            timeout: float, worker_init_fn: Optional[Callable], multiprocessing_context: Any, generator: Any,
            prefetch_factor: Optional[int], persistent_workers: bool, pin_memory_device: str, in_order: bool,
            batch_transform: Optional[Callable], seed: Optional[int], resize: Optional[int], crop: Optional[int],
            output: Optional[str], on_error: str, with_indices: bool, rank: Optional[int], world_size: Optional[int],
            transform: Optional[str], dct_scaling: Optional[str], slots: Optional[int], shuffle_window: Optional[int],
            shard_cache: Optional[str], shard_cache_dir: Optional[Union[str, "os.PathLike[str]"]],
            cache_dir: Optional[Union[str, "os.PathLike[str]"]], cache_size: Optional[str],
            cache_shared_with: Optional[str], image_column: Optional[str], label_column: Optional[str], key_column: Optional[str], worker_nice: int,
            shard_tail: Optional[str], mean: Optional[Sequence[float]], std: Optional[Sequence[float]],
            start_timeout: float) -> Settings:
    """Checks and translates ``stoke.DataLoader``'s arguments (see its docstring for each).

    Returns:
        The settings, with every default and translation applied.

    Raises:
        ValueError: an argument Stoke refuses, named in the message (an UnsupportedError for a
            dataset's transform, loader or samples that Stoke cannot do exactly).
        TypeError: an argument of the wrong type, named in the message.
        StokeNotFoundError: no Java side to start the producer with.
    """
    torch_settings = _torch_keywords(batch_size=batch_size, sampler=sampler, batch_sampler=batch_sampler,
                                     shuffle=shuffle, seed=seed, rank=rank, world_size=world_size,
                                     shard_tail=shard_tail, num_workers=num_workers, collate_fn=collate_fn,
                                     pin_memory=pin_memory, timeout=timeout, worker_init_fn=worker_init_fn,
                                     multiprocessing_context=multiprocessing_context, generator=generator,
                                     prefetch_factor=prefetch_factor, persistent_workers=persistent_workers,
                                     pin_memory_device=pin_memory_device, in_order=in_order, slots=slots,
                                     batch_transform=batch_transform, with_indices=with_indices)
    is_dataset = _compat.is_dataset(dataset)
    if not is_dataset and not isinstance(dataset, (str, bytes, os.PathLike)):
        raise TypeError(f"stoke.DataLoader takes a path or a dataset with samples, a list of (path, label) (a "
                        f"torchvision ImageFolder or DatasetFolder), not a {type(dataset).__name__}: Stoke reads "
                        "the files itself. Use torch.utils.data.DataLoader for this dataset.")
    transform_settings = _transform_settings(dataset if is_dataset else None, transform=transform, resize=resize,
                                             crop=crop, output=output, mean=mean, std=std, dct_scaling=dct_scaling)
    if on_error not in ("fail", "skip"):
        raise ValueError(f"on_error must be 'fail' or 'skip', not {on_error!r}")
    shard_tail = torch_settings["shard_tail"]
    if shard_tail not in ("pad", "drop"):
        raise ValueError(f"shard_tail must be 'pad' or 'drop', not {shard_tail!r}")
    slots = torch_settings["slots"]
    if slots < 1:
        raise ValueError(f"slots must be positive, not {slots}")
    worker_nice = _integer("worker_nice", worker_nice)
    if not 0 <= worker_nice <= 19:
        raise ValueError(f"worker_nice must be 0 to 19, not {worker_nice}")
    shuffle_window = None if shuffle_window is None else _integer("shuffle_window", shuffle_window)
    if shuffle_window is not None and shuffle_window < 0:
        raise ValueError(f"shuffle_window must not be negative: {shuffle_window}")
    if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
        raise TypeError(f"cache_dir must be a path, not a {type(cache_dir).__name__}")
    if cache_size is not None:
        if not isinstance(cache_size, str):
            raise TypeError(f"cache_size must be a size such as \"64G\", not a {type(cache_size).__name__}")
        if cache_dir is None:
            # Without a folder there is no cache: the size would be dropped without a word.
            raise ValueError(f"cache_size={cache_size!r} needs cache_dir, the folder it bounds")
    if cache_shared_with is not None:
        if not isinstance(cache_shared_with, str) or not cache_shared_with.strip() or any(
                c in cache_shared_with for c in "/:"):
            raise TypeError(f"cache_shared_with must be a group's name, not {cache_shared_with!r}")
        if cache_dir is None and shard_cache_dir is None:
            # Nothing to share: the group would be dropped without a word.
            raise ValueError(f"cache_shared_with={cache_shared_with!r} needs cache_dir or shard_cache_dir, the "
                             "folder it shares")
    for name, column in (("image_column", image_column), ("label_column", label_column), ("key_column", key_column)):
        if column is not None and (not isinstance(column, str) or not column.strip()):
            raise TypeError(f"{name} must be a column name, not {column!r}")
        if column is not None and is_dataset:
            raise ValueError(f"{name} names a Parquet column, and the dataset is a {type(dataset).__name__}: pass "
                             "the Parquet files' path")
    default_rank, default_world = default_rank_and_world()
    rank = default_rank if torch_settings["rank"] is None else _integer("rank", torch_settings["rank"])
    world_size = (default_world if torch_settings["world_size"] is None
                  else _integer("world_size", torch_settings["world_size"]))
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size): rank {rank} of {world_size}")
    start_timeout = _number("start_timeout", start_timeout)
    seed = torch_settings["seed"]
    seed_drawn = seed is None
    if seed_drawn:
        # As torch's RandomSampler and workers without a generator: from torch's global generator,
        # so that torch.manual_seed(s) repeats a run and an unseeded run does not. Ranks must
        # share one permutation: with world_size > 1 it is DistributedSampler's default, 0.
        import torch
        seed = 0 if world_size > 1 else int(torch.empty((), dtype=torch.int64).random_().item())
    samples = _compat.dataset_samples(dataset) if is_dataset else None
    if sampler is not None and samples is not None:
        # A path's size is known once the producer has listed it; the loader checks it then.
        check_sampler_size(sampler, len(samples))
    return Settings(
        dataset=dataset if is_dataset else None, samples=samples, path=None if is_dataset else os.fspath(dataset),
        stoke=_home.stoke_command(), sampler=sampler, collate_fn=collate_fn, pin_memory=bool(pin_memory),
        pin_memory_device=pin_memory_device, timeout=float(timeout), worker_init_fn=worker_init_fn,
        multiprocessing_context=multiprocessing_context, generator=generator, prefetch_factor=prefetch_factor,
        persistent_workers=persistent_workers, in_order=bool(in_order), batch_size=int(batch_size),
        drop_last=bool(drop_last), shuffle=torch_settings["shuffle"], seed=int(seed), seed_drawn=seed_drawn,
        rank=rank, world_size=world_size, shard_tail=shard_tail, num_workers=torch_settings["num_workers"],
        slots=slots, collate=torch_settings["collate"], pin=torch_settings["pin"], batch_transform=batch_transform,
        with_indices=with_indices, on_error=on_error, **transform_settings, shuffle_window=shuffle_window,
        shard_cache=shard_cache, shard_cache_dir=shard_cache_dir, cache_dir=cache_dir, cache_size=cache_size,
        cache_shared_with=cache_shared_with, image_column=image_column,
        label_column=label_column, key_column=key_column, worker_nice=worker_nice, start_timeout=start_timeout)


def check_sampler_size(sampler: Any, n: int) -> None:
    """Refuses a sampler over another number of samples than the dataset's ``n``.

    Raises:
        ValueError: the sizes differ.
    """
    size = len(getattr(sampler, "dataset", None) or getattr(sampler, "data_source", None) or ())
    if size != n:
        raise ValueError(f"the sampler is over {size} samples, the dataset has {n}")
