"""``stoke.DataLoader``'s arguments as the producer's settings: PyTorch's keywords and a dataset's
transform translated, every option of the table (``_options``) checked from its entry, all before
anything is created.

:func:`resolve` is the whole of it: it raises ValueError or TypeError naming the first argument it
refuses (UnsupportedError, a ValueError, for a transform or sampler Stoke cannot do exactly), and
returns the :class:`Settings` that the loader holds. It makes no file and starts no process; torch
is imported only where an argument needs it. What is written here by hand is what the table cannot
say: PyTorch's keywords translated (the sampler, ``num_workers``, ``prefetch_factor``,
``pin_memory``, a dataset's transform) and the relations between options.
"""

import dataclasses
import inspect
import json
import numbers
import operator
import os
import re
import types
import warnings
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import _hf_datasets as _hf
from . import _home, _options
from . import _torch_compat as _compat

__all__ = ["KEYWORDS", "START_TIMEOUT", "Settings", "StokeWarning", "default_workers", "resolve", "say_once"]

#: How long creating a loader waits for the producer's ring (the first run may build Stoke).
START_TIMEOUT = 900.0


class StokeWarning(UserWarning):
    """What stoke.DataLoader says once about a PyTorch keyword it maps, costs or ignores."""


# The keys of what has been said once in this process.
_said: Set[str] = set()


def say_once(key: str, message: str, stacklevel: int = 2) -> None:
    """Warns with ``message`` (a :class:`StokeWarning`) the first time ``key`` is said in this process.

    Args:
        key: what is said (one key per PyTorch keyword that Stoke maps or ignores).
        message: the warning.
        stacklevel: as ``warnings.warn``'s, counted from the caller of this function.
    """
    if key not in _said:
        _said.add(key)
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


#: A size as Java's ByteSize reads it: bytes, or a number with K, M, G or T (binary).
_SIZE = re.compile(r"\d+\s*(?:[KMGT](?:I?B)?|B)?", re.IGNORECASE)


def _boolean(name: str, value: Any) -> bool:
    """``value`` as a bool (True, False, or an integer 0 or 1), or a TypeError naming the argument."""
    if isinstance(value, bool):
        return value
    try:
        if operator.index(value) in (0, 1):
            return bool(value)
    except TypeError:
        pass
    raise TypeError(f"{name} must be True or False, not {value!r}")


def _choices(values: Tuple[str, ...]) -> str:
    quoted = [repr(v) for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def check_option(option: "_options.Option", value: Any) -> Any:
    """``value`` of the table's ``option`` checked against its entry (type, bounds, choices, count), as
    the Python value the settings hold; None stays None (the option not given, and no default).

    Raises:
        TypeError: a value of another type, naming the keyword.
        ValueError: out of its bounds, not one of its choices, or not its count of numbers.
    """
    if value is None:
        return None
    name, kind = option.python or option.name, option.type
    if kind in ("int", "long"):
        value = _integer(name, value)
    elif kind == "float":
        value = _number(name, value)
    elif kind == "bool":
        value = _boolean(name, value)
    elif kind == "workers":
        value = value if value == "auto" else _integer(name, value)
    elif kind == "floats":
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != option.count:
            raise ValueError(f"{name} must be {option.count} numbers ({option.label}), not {value!r}")
        value = [_number(name, v) for v in value]
    elif kind == "choice":
        if value not in option.choices:
            raise ValueError(f"{name} must be {_choices(option.choices)}, not {value!r}")
    elif kind == "size":
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a size such as \"64G\", not a {type(value).__name__}")
        if not _SIZE.fullmatch(value.strip()):
            raise ValueError(f"{name}={value!r} is not a size: write bytes, or a number with K, M, G or T "
                             "(binary: \"64M\" is 64 MiB)")
    elif kind == "path":
        if not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"{name} must be a path, not a {type(value).__name__}")
    elif kind == "string":
        if not isinstance(value, str) or not value.strip():
            raise TypeError(f"{name} must be a non-empty string, not {value!r}")
    elif kind == "json":
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be plain values (JSON), not {value!r}") from None
    low, high = option.min, option.max
    if kind in ("int", "long", "float") or (kind == "workers" and value != "auto"):
        if low is not None and high is not None and not low <= value <= high:
            raise ValueError(f"{name} must be {low:g} to {high:g}, not {value}")
        if low is not None and value < low:
            raise ValueError(f"{name} must be at least {low:g}, not {value}")
        if high is not None and value > high:
            raise ValueError(f"{name} must be at most {high:g}, not {value}")
    return value


def is_drawn_by_stoke(sampler: Any) -> bool:
    """Whether Stoke's producer draws ``sampler``'s order itself: exactly torch's ``SequentialSampler``,
    ``RandomSampler`` without replacement or ``num_samples``, or ``DistributedSampler`` (not a subclass,
    whose order may be its own). Any other sampler's order is given: drawn from it at each ``iter()``."""
    from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler
    kind = type(sampler)
    if kind is RandomSampler:
        # torch keeps num_samples private; reading it is the only way to tell a resampling sampler.
        return not sampler.replacement and sampler._num_samples is None
    return kind in (SequentialSampler, DistributedSampler)


def _torch_keywords(*, batch_size, sampler, batch_sampler, shuffle, seed, rank, world_size, partition_tail, num_workers,
                    collate_fn, pin_memory, timeout, worker_init_fn, multiprocessing_context, generator, prefetch_factor,
                    persistent_workers, pin_memory_device, in_order, slots, batch_transform, with_indices, drop_last):
    """PyTorch DataLoader's keywords as Stoke's settings, refusing what cannot be done (with
    PyTorch's own message where PyTorch refuses it too). A dict of the settings they decide, by the
    table's names (``workers`` for ``num_workers``), and ``collate``, ``pin`` and ``given`` (``"sampler"``
    or ``"batch_sampler"`` where the order is the object's own, given at each epoch; else None)."""
    out = {"shuffle": shuffle, "seed": seed, "rank": rank, "world_size": world_size, "partition_tail": partition_tail,
           "given": None}

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
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                             "drop_last")
        # Each epoch's batches are the object's, given to the producer at iter() (docs/design.md,
        # "A sampler's own order").
        out["given"] = "batch_sampler"
    elif sampler is not None and not is_drawn_by_stoke(sampler):
        if shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        out["given"] = "sampler"
    elif sampler is not None:
        if shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler
        kind = type(sampler)
        if kind is RandomSampler:
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
            agree("partition_tail", "drop" if sampler.drop_last else "pad", "the DistributedSampler's drop_last")
    if generator is not None:
        agree("seed", int(generator.initial_seed()), "the generator's initial_seed()")
    out["seed"] = None if out["seed"] is None else _integer("seed", out["seed"])  # None: drawn once the world is known
    # PyTorch's 0 is "no worker processes"; Stoke never decodes in this process, so 0 (the default)
    # leaves the number of decoding threads to the producer, as "auto" does.
    if num_workers is None or num_workers == "auto":
        out["workers"] = "auto"
    elif isinstance(num_workers, bool) or not isinstance(num_workers, int):
        raise ValueError(f"num_workers must be a non-negative int or 'auto', not {num_workers!r}")
    elif num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    else:
        out["workers"] = "auto" if num_workers == 0 else num_workers
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
        workers = out["workers"]
        slots = max(2, (default_workers() if workers == "auto" else workers) * int(prefetch_factor))
    out["slots"] = slots
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


#: The table's options that a dataset's transform decides, where it has one.
_TRANSFORM_OPTIONS = ("transform", "resize", "crop", "scale", "ratio", "flip", "augment", "output", "mean", "std",
                      "interpolation", "erase", "erase_scale", "erase_ratio", "erase_value")


def _translate_transform(dataset: Any, values: Dict[str, Any], whose: str = "the dataset has a transform") -> bool:
    """Puts a dataset's transform, translated, into ``values`` (by the table's names), refusing one that
    keywords decide too (``whose`` names the transform in that refusal). Returns whether its uint8
    batches are ``[n, 3, H, W]`` (PILToTensor's layout)."""
    if dataset is None or getattr(dataset, "transform", None) is None:
        return False
    given = [k for k in _TRANSFORM_OPTIONS if values[k] is not None]
    if given:
        raise ValueError(f"{', '.join(given)} given, and {whose} that already decides "
                         f"{'it' if len(given) == 1 else 'them'}: pass one or the other")
    translated = _compat.translate_transform(dataset.transform)
    chw = bool(translated.pop("chw"))
    values.update(translated)
    if values["dct_scaling"] is None:
        values["dct_scaling"] = "none"  # a torchvision transform is translated exactly: no DCT scaling unless asked
    return chw


def _renamed(old: str, new: str) -> str:
    return f"stoke.DataLoader: {old} is deprecated: it is {new} now (the old keyword goes in the next release)"


def _table_keywords(keywords: Dict[str, Any]) -> Dict[str, Any]:
    """The table's keywords as given, by the options' names (None: not given); a deprecated keyword
    is taken for its new one, said once.

    Raises:
        TypeError: a keyword the table does not hold (as Python's own), or a deprecated keyword and
            its new one both given.
    """
    values = {o.name: None for o in _options.OPTIONS if o.python is not None}
    keyword_of = {o.python: o for o in _options.OPTIONS if o.python is not None}
    deprecated_of = {o.deprecated_python: o for o in _options.OPTIONS if o.python and o.deprecated_python}
    for keyword, value in keywords.items():
        if keyword in keyword_of:
            values[keyword_of[keyword].name] = value
        elif keyword not in deprecated_of:
            raise TypeError(f"DataLoader.__init__() got an unexpected keyword argument {keyword!r}")
    for keyword, option in deprecated_of.items():
        value = keywords.get(keyword)
        if value is None:
            continue
        if values[option.name] is not None:
            raise TypeError(f"{keyword} and {option.python} given: {keyword} is {option.python}'s deprecated "
                            f"spelling, pass {option.python} alone")
        say_once(f"deprecated-{keyword}", _renamed(f"{keyword}=", f"{option.python}="), stacklevel=4)
        values[option.name] = value
    return values


@dataclasses.dataclass
class Settings:
    """Every argument of a ``stoke.DataLoader``, checked, with the defaults and translations applied.

    PyTorch's keywords are kept as torch's DataLoader keeps them, with Stoke's own that the table
    does not hold; every option of the table is in ``options`` by its name, and reads as an
    attribute by its name (``settings.partition_tail``), by its keyword (``settings.num_workers``,
    the option ``workers``) or by its deprecated keyword (``settings.shard_tail``, said once).
    """

    # What to read: a dataset object (or None for a path), its samples (None for a path), the path.
    dataset: Any
    samples: Optional[List[Tuple[str, int]]]
    path: Optional[str]
    hf: Optional["_hf.HfSource"]  # a datasets.Dataset's Arrow files and rows (its spec is the path)
    stoke: List[str]  # the command before ``serve ...``
    # PyTorch's keywords that the table does not hold, as they were passed.
    sampler: Any
    batch_sampler: Any
    # "sampler" or "batch_sampler": each epoch's order is that object's, given to the producer at
    # iter(); None: the producer draws it (shuffle, seed, rank, world_size).
    given: Optional[str]
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
    # Stoke's own that the table does not hold: they act in this process.
    batch_transform: Optional[Callable]
    with_indices: bool
    start_timeout: float
    # What the translations decided.
    seed_drawn: bool  # no seed given: drawn here, and a resumed state's takes its place
    collate: Optional[Callable]  # collate_fn, unless it is torch's default_collate
    pin: bool  # pin_memory where CUDA is available
    chw: bool  # uint8 batches as [n, 3, H, W], a dataset transform's PILToTensor()
    # Every option of the table with a keyword, by name: checked, defaults applied (None: none).
    options: Dict[str, Any]

    def option(self, name: str) -> Any:
        """The table's option ``name``: by its name, its keyword or its deprecated keyword (said once).

        Raises:
            AttributeError: the table has no such option.
        """
        options = self.__dict__.get("options")
        if options is not None:
            if name in options:
                return options[name]
            for option in _options.OPTIONS:
                if option.name in options and name == option.python:
                    return options[option.name]
                if option.name in options and name == option.deprecated_python:
                    # Said at the line that reads loader.<old name> (DataLoader.__getattr__ calls this).
                    say_once(f"deprecated-{name}", _renamed(name, option.python), stacklevel=3)
                    return options[option.name]
        raise AttributeError(f"no option {name!r} in the options table")

    def __getattr__(self, name: str) -> Any:
        try:
            return self.option(name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}") from None


def resolve(dataset: Any, *, sampler: Any = None, batch_sampler: Any = None, collate_fn: Optional[Callable] = None,
            pin_memory: bool = False, timeout: float = 0, worker_init_fn: Optional[Callable] = None,
            multiprocessing_context: Any = None, generator: Any = None, prefetch_factor: Optional[int] = None,
            persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True,
            batch_transform: Optional[Callable] = None, with_indices: bool = False,
            start_timeout: float = START_TIMEOUT, **keywords: Any) -> Settings:
    """Checks and translates ``stoke.DataLoader``'s arguments (see its docstring for each).

    Args:
        dataset: the dataset or its path.
        sampler ... start_timeout: the keywords the table does not hold, PyTorch's and Stoke's.
        **keywords: the table's keywords (``batch_size=``, ``partition_tail=``, ...), each checked from
            its entry; a deprecated spelling (``shard_tail=``) works, said once.

    Returns:
        The settings, with every default and translation applied.

    Raises:
        ValueError: an argument Stoke refuses, named in the message (an UnsupportedError for a
            dataset's transform, loader or samples that Stoke cannot do exactly).
        TypeError: an argument of the wrong type, or a keyword that none is, named in the message.
        StokeNotFoundError: no Java side to start the producer with.
    """
    by_name = {o.name: o for o in _options.OPTIONS}
    values = _table_keywords(keywords)
    batch_size = keywords["batch_size"] if "batch_size" in keywords else by_name["batch_size"].python_value()
    translated = _torch_keywords(
        batch_size=batch_size, sampler=sampler, batch_sampler=batch_sampler, shuffle=values["shuffle"],
        seed=values["seed"], rank=values["rank"], world_size=values["world_size"],
        partition_tail=values["partition_tail"], num_workers=values["workers"], collate_fn=collate_fn,
        pin_memory=pin_memory, timeout=timeout, worker_init_fn=worker_init_fn,
        multiprocessing_context=multiprocessing_context, generator=generator, prefetch_factor=prefetch_factor,
        persistent_workers=persistent_workers, pin_memory_device=pin_memory_device, in_order=in_order,
        slots=values["slots"], batch_transform=batch_transform, with_indices=with_indices,
        drop_last=values["drop_last"])
    collate, pin, order_given = translated.pop("collate"), translated.pop("pin"), translated.pop("given")
    if order_given == "batch_sampler":
        # A ring slot holds the largest batch: the BatchSampler's batch_size where it says one, else
        # one sample until an epoch's batches say more (the loader then lays out a larger ring).
        batch_size = _integer("the batch_sampler's batch_size", getattr(batch_sampler, "batch_size", None) or 1)
    values.update(translated, batch_size=batch_size)
    hf = None
    if _hf.is_hf_dataset(dataset):
        # transform= is the dataset's transform here (a torchvision object), translated as an ImageFolder's;
        # a string stays Stoke's own --transform.
        transform = values["transform"] if not isinstance(values["transform"], (str, type(None))) else None
        if transform is not None:
            values["transform"] = None
        hf = _hf.source(dataset, transform, values["image_column"], values["label_column"])
        values["image_column"], values["label_column"] = hf.image_column, hf.label_column
    is_dataset = _compat.is_dataset(dataset)
    if hf is None and not is_dataset and not isinstance(dataset, (str, bytes, os.PathLike)):
        raise TypeError(f"stoke.DataLoader takes a path or a dataset with samples, a list of (path, label) (a "
                        f"torchvision ImageFolder or DatasetFolder), not a {type(dataset).__name__}: Stoke reads "
                        "the files itself. Use torch.utils.data.DataLoader for this dataset.")
    if hf is None and not is_dataset and not isinstance(values["transform"], (str, type(None))):
        # transform= with a path: a torchvision transform, translated as it would be on a torchvision
        # ImageFolder of that path (the same files, the same order); a string stays Stoke's own --transform.
        of_path = types.SimpleNamespace(transform=values["transform"])
        values["transform"] = None
        chw = _translate_transform(of_path, values, "transform= is a torchvision transform")
    else:
        chw = _translate_transform(hf if hf is not None else dataset if is_dataset else None, values)
    given = {name for name, value in values.items() if value is not None}
    default_rank, default_world = default_rank_and_world()
    values["rank"] = default_rank if values["rank"] is None else values["rank"]
    values["world_size"] = default_world if values["world_size"] is None else values["world_size"]
    # Every option of the table from its entry: a value not given takes its default.
    for name, value in values.items():
        if name != "seed" or value is not None:  # no seed: drawn below, once the world is known
            values[name] = check_option(by_name[name], by_name[name].python_value() if value is None else value)
    # The relations between options, which no single entry says.
    if not values["rank"] < values["world_size"]:
        raise ValueError(f"rank must be in [0, world_size): rank {values['rank']} of {values['world_size']}")
    if ("mean" in given) != ("std" in given):
        raise ValueError("mean and std go together, three numbers each (RGB, on a 0-1 scale)")
    if "mean" in given and values["output"] != "float32":
        raise ValueError("mean and std normalise output='float32'; the uint8 output is not normalised")
    if "restart_cache_size" in given and values["restart_cache_dir"] is None:
        # Without a folder there is no cache: the size would be dropped without a word.
        raise ValueError(f"restart_cache_size={values['restart_cache_size']!r} needs restart_cache_dir, the folder "
                         "it bounds")
    group = values["cache_shared_with"]
    if group is not None:
        if any(c in group for c in "/:"):
            raise TypeError(f"cache_shared_with must be a group's name, not {group!r}")
        if values["restart_cache_dir"] is None and values["shard_cache_dir"] is None:
            # Nothing to share: the group would be dropped without a word.
            raise ValueError(f"cache_shared_with={group!r} needs restart_cache_dir or shard_cache_dir, the "
                             "folder it shares")
    for name in ("table_version", "as_of"):
        if values[name] is not None and is_dataset:
            raise ValueError(f"{name} names a Delta Lake or Iceberg table's snapshot, and the dataset is a "
                             f"{type(dataset).__name__}: pass the table's path")
    for name in ("image_column", "label_column", "key_column"):
        if values[name] is not None and is_dataset:
            raise ValueError(f"{name} names a Parquet column, and the dataset is a {type(dataset).__name__}: pass "
                             "the Parquet files' path")
    start_timeout = _number("start_timeout", start_timeout)
    seed_drawn = values["seed"] is None
    if seed_drawn:
        # As torch's RandomSampler and workers without a generator: from torch's global generator,
        # so that torch.manual_seed(s) repeats a run and an unseeded run does not. Ranks must
        # share one permutation: with world_size > 1 it is DistributedSampler's default, 0.
        import torch
        values["seed"] = 0 if values["world_size"] > 1 else int(torch.empty((), dtype=torch.int64).random_().item())
    samples = _compat.dataset_samples(dataset) if is_dataset else None
    if sampler is not None and order_given is None and samples is not None:
        # A path's size is known once the producer has listed it; the loader checks it then.
        check_sampler_size(sampler, len(samples))
    return Settings(
        dataset=dataset if is_dataset else None, samples=samples, hf=hf,
        path=hf.spec(None) if hf is not None else None if is_dataset else os.fspath(dataset),
        stoke=_home.stoke_command(), sampler=sampler, batch_sampler=batch_sampler, given=order_given,
        collate_fn=collate_fn, pin_memory=bool(pin_memory),
        pin_memory_device=pin_memory_device, timeout=float(timeout), worker_init_fn=worker_init_fn,
        multiprocessing_context=multiprocessing_context, generator=generator, prefetch_factor=prefetch_factor,
        persistent_workers=persistent_workers, in_order=bool(in_order), batch_transform=batch_transform,
        with_indices=with_indices, start_timeout=start_timeout, seed_drawn=seed_drawn, collate=collate, pin=pin,
        chw=chw, options=values)


#: The keywords of ``stoke.DataLoader`` that the table does not hold: PyTorch's and Stoke's Python-only.
KEYWORDS = tuple(p.name for p in inspect.signature(resolve).parameters.values() if p.kind is p.KEYWORD_ONLY)


def check_sampler_size(sampler: Any, n: int) -> None:
    """Refuses a sampler over another number of samples than the dataset's ``n``.

    Raises:
        ValueError: the sizes differ.
    """
    size = len(getattr(sampler, "dataset", None) or getattr(sampler, "data_source", None) or ())
    if size != n:
        raise ValueError(f"the sampler is over {size} samples, the dataset has {n}")
