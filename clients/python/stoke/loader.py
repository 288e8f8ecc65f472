"""``stoke.DataLoader``: a drop-in for ``torch.utils.data.DataLoader`` over an ImageFolder tree.

Creating one starts Stoke's Java producer (``stoke serve``: the Java runtime bundled in the wheel, else
a checkout's ``./stoke``; see ``_home``) as a child process, decoding into a private ring in an
anonymous file (``memfd_create``) that this process creates and the producer inherits, which no
``/dev/shm`` size bounds; the batches' pixels are torch tensors that view the ring's memory. The
producer runs across epochs (like ``persistent_workers=True``) and stops when the loader is closed
or this process exits, however it exits: it watches this process, and the kernel frees the ring
with the last process that holds or maps it.

The slot under a batch goes back to the producer when the last Python object viewing its pixels
is freed (a finaliser on the buffer's owner), never earlier: a tensor kept across steps keeps its
bytes. Keep a batch longer than the ring allows by ``images.clone()``, or give it more ``slots``.
"""

import atexit
import collections
import collections.abc
import gc
import os
import re
import subprocess
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Callable, List, Optional, Sequence, Union

import numpy as np

from . import _home
from . import _torch_compat as _compat
from .ring import SAMPLE_FORMAT_NOT_DECODED, SAMPLE_STATUS, ProducerGoneError, Ring, RingFormatError, image_format

__all__ = ["DataLoader", "SampleError", "ProducerError", "SkippedSample", "Batch", "StokeWarning"]

#: How long creating a loader waits for the producer's ring (the first run may build Stoke).
START_TIMEOUT = 900.0
#: Stderr lines of the producer kept for error messages.
STDERR_LINES = 40


class SampleError(RuntimeError):
    """A batch held files that did not decode, under ``on_error="fail"``.

    ``samples`` lists them as :class:`SkippedSample`. The batch's slot is already given back, and
    iteration can go on with the next batch (call ``next()`` on the same iterator again).
    """

    def __init__(self, epoch, batch_index, samples):
        self.epoch, self.batch_index, self.samples = epoch, batch_index, samples
        lines = "\n".join(f"  {s.path}: {s.reason}" for s in samples)
        super().__init__(f"batch {batch_index} of epoch {epoch}: {len(samples)} file(s) did not decode:\n{lines}")


class ProducerError(RuntimeError):
    """Stoke's producer process failed or is gone; the message ends with its last stderr lines."""


SkippedSample = collections.namedtuple("SkippedSample", ["position", "index", "path", "reason"])
SkippedSample.__doc__ = ("A sample that did not decode: its position in the batch, its dataset index, its file, "
                         "and why.")


class Batch(tuple):
    """What the loader yields: ``(images, labels)``, or ``(images, labels, indices)``.

    A tuple, so ``images, labels = batch`` works, with the batch's ``epoch``, ``batch_index``,
    ``skipped`` (a list of :class:`SkippedSample`: under ``on_error="skip"`` the samples that did
    not decode; their images are zeros) and ``padded`` as attributes. ``padded`` is a bool tensor
    ``[n]``: True for the samples repeated so that every rank gets as many samples (with
    ``world_size > 1`` and ``shard_tail="pad"``, PyTorch's ``DistributedSampler`` padding), always
    the batch's last ones; another rank gets the same sample this epoch. An evaluation that must
    count each sample once leaves them out: ``correct += (pred == labels)[~batch.padded].sum()``.
    """

    def __new__(cls, items, epoch, batch_index, skipped, padded=None):
        self = super().__new__(cls, items)
        self.epoch, self.batch_index, self.skipped, self.padded = epoch, batch_index, skipped, padded
        return self


class _SlotLease:
    """Owns one batch's pixels: numpy and torch views of them keep this object alive, and when the
    last one goes, its finaliser gives the slot back to the producer.

    Exposes the pixels through ``__array_interface__``, so ``np.asarray(lease)`` is an array whose
    base is the lease; it holds the array that views the ring's mmap, which keeps the mapping.
    """

    __slots__ = ("_view", "__array_interface__", "__weakref__")

    def __init__(self, view):
        self._view = view
        self.__array_interface__ = view.__array_interface__


def _default_rank_and_world():
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def _default_workers():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))


_SAID = set()


def _say_once(key, message):
    """Tells the user something once per process (a PyTorch keyword that Stoke maps or ignores)."""
    if key not in _SAID:
        _SAID.add(key)
        warnings.warn(message, StokeWarning, stacklevel=4)


class StokeWarning(UserWarning):
    """What stoke.DataLoader says once about a PyTorch keyword it maps, costs or ignores."""


def _with_format(reason, path):
    """``reason`` naming the format of the file at ``path`` ("format not decoded: TIFF"), where it can be read."""
    try:
        with open(path, "rb") as f:
            found = image_format(f.read(12))
    except OSError:  # a tar shard's sample, or a file gone since
        found = None
    return f"{reason}: {found}" if found else reason


def _release_after_copies(loader_ref, raw):
    """A pinned batch's finaliser: its slot goes back after the GPU work queued so far (its copies)."""
    loader = loader_ref()
    if loader is None or loader._pinned is None:
        raw.release()
        return
    import torch
    event = torch.cuda.Event()
    event.record()
    loader._pending.append((event, raw))


def _is_default_collate(fn):
    try:
        from torch.utils.data import _utils
        from torch.utils.data import default_collate
    except ImportError:
        return False
    return fn is default_collate or fn is _utils.collate.default_collate


def _torch_keywords(*, batch_size, sampler, batch_sampler, shuffle, seed, rank, world_size, shard_tail, num_workers,
                    collate_fn, pin_memory, timeout, worker_init_fn, multiprocessing_context, generator, prefetch_factor,
                    persistent_workers, pin_memory_device, in_order, slots, batch_transform, with_indices):
    """PyTorch DataLoader's keywords as Stoke's settings, refusing at construction what cannot be done
    (with PyTorch's own message where PyTorch refuses it too)."""
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
    out["seed"] = None if out["seed"] is None else int(out["seed"])  # None: drawn once the world size is known
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
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if prefetch_factor is not None:
        if slots is not None:
            raise ValueError("slots and prefetch_factor both size the ring: pass one")
        if int(prefetch_factor) < 1:
            raise ValueError(f"prefetch_factor must be positive, not {prefetch_factor}")
        workers = out["num_workers"]
        slots = max(2, (_default_workers() if workers == "auto" else workers) * int(prefetch_factor))
    out["slots"] = 4 if slots is None else int(slots)
    if worker_init_fn is not None:
        _say_once("worker-init", "stoke.DataLoader: worker_init_fn is ignored: Stoke decodes in Java threads, no "
                                 "Python runs in them (its transforms are the producer's own, seeded by seed)")
    if multiprocessing_context is not None:
        _say_once("mp-context", "stoke.DataLoader: multiprocessing_context is ignored: Stoke's producer is one Java "
                                "process, started with subprocess")
    if not isinstance(in_order, bool):
        raise ValueError(f"in_order must be True or False, not {in_order!r}")
    out["collate"] = None
    if collate_fn is not None and not _is_default_collate(collate_fn):
        if batch_transform is not None:
            raise ValueError("collate_fn and batch_transform both make the batch: pass one")
        if with_indices:
            raise ValueError("with_indices adds the indices to Stoke's batch; with a collate_fn the batch is what it "
                             "returns: pass one or the other")
        _say_once("collate", "stoke.DataLoader: collate_fn gets each batch as a list of (image, label) samples and "
                             "copies them into its batch, as with torch; batch_transform=fn(images, labels) does the same "
                             "on the whole batch without that copy (e.g. mixup/cutmix on the device)")
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
            _say_once("pin-no-cuda", "stoke.DataLoader: pin_memory has no effect without CUDA")
    elif device:
        _say_once("pin-device-unused", "stoke.DataLoader: pin_memory_device is set and pin_memory is not: nothing "
                                       "is pinned (as with torch)")
    return out


def _mib(n):
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def _anonymous_file(name):
    """An anonymous file (memfd_create) for the producer to read or write as /dev/fd/N: it lives in
    no mounted file system, so no /dev/shm size limits it and nothing is left on disk when either
    process dies; the kernel frees it with its last descriptor and mapping."""
    return os.memfd_create(f"{name}-{os.getpid()}", os.MFD_CLOEXEC)


class _UnlistedSamples(collections.abc.Sequence):
    """The samples of shards opened from their ``index.json``: how many there are is known, their
    names and labels are not read up front (each shard's are read when it is fetched for its first
    batch; listing them here would fetch every shard before the first batch)."""

    def __init__(self, n, root):
        self._n, self._root = n, root

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        raise LookupError(f"{self._root} was opened from its index.json, which holds each shard's sample count, "
                          "not each sample's name and label; batches carry their labels and dataset indices "
                          "(batch.labels, batch.indices)")


class _PathDataset:
    """``loader.dataset`` for a loader over a path: its size, samples and classes, as torchvision's
    ``ImageFolder`` has them (``classes``/``class_to_idx`` are None except for an ImageFolder tree).
    The images themselves come only from the loader."""

    def __init__(self, root, samples):
        self.root = root
        self.samples = samples if isinstance(samples, _UnlistedSamples) else list(samples)
        self.imgs = self.samples
        self.targets = self.samples if isinstance(samples, _UnlistedSamples) else [l for _, l in self.samples]
        self.classes = self.class_to_idx = None
        if os.path.isdir(root):
            classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
            if classes and not any(name.endswith(".tar") for name in os.listdir(root)):
                self.classes = classes
                self.class_to_idx = {c: i for i, c in enumerate(classes)}

    def __len__(self):
        return len(self.samples)

    def __repr__(self):
        return f"stoke dataset {self.root!r}: {len(self)} samples"


def _close_at_exit(ref):
    loader = ref()
    if loader is not None:
        loader.close()


class DataLoader:
    r"""Batches of a dataset of images decoded by Stoke, with PyTorch ``DataLoader``'s signature.

    Creating one starts Stoke's producer, a Java process that decodes with its own threads into a
    ring of batch slots in anonymous shared memory; the batches are torch tensors viewing it, without
    a copy. PyTorch's parameters come first, in PyTorch's order and with its defaults; Stoke's own
    are keyword-only after them. Every argument is checked before anything is created.

    Yields ``(images, labels)`` (``(images, labels, indices)`` with ``with_indices=True``) as a
    :class:`Batch`: ``images`` uint8 ``[n, crop, crop, 3]`` (``output="uint8"``; ``[n, 3, crop,
    crop]`` when a dataset's transform ends in ``PILToTensor()``) or float32 ``[n, 3, crop, crop]``
    normalised (``output="float32"``), viewing shared memory; ``labels`` and ``indices`` int64
    ``[n]``. Indices are positions in dataset order: torchvision's ``ImageFolder(root).samples``
    order, or for shards shard order then member order. ``loader.samples[i]`` is ``(name, label)``
    and ``loader.name(i)`` the name: the file's path, or ``<shard>/<key>`` for a sample in a tar shard.

    Each ``for`` over the loader delivers one epoch: the rest of it when an earlier ``for`` stopped
    early (no batch is lost or repeated), then the next epoch. ``set_epoch(e)`` moves to epoch
    ``e``. ``state_dict()``/``load_state_dict()`` resume mid-epoch exactly once (torchdata's
    ``StatefulDataLoader`` convention).

    Args:
        dataset (str, os.PathLike or Dataset): a torchvision ``ImageFolder``/``DatasetFolder`` (or any
            object with ``samples``, ``[(path, label), ...]``), whose ``transform`` (v1 or v2) is
            translated exactly into Stoke's settings or refused here; or a path: an ImageFolder tree
            (``root/<class>/<image>.jpg``), a list file of ``<path> <label>`` lines, or WebDataset tar
            shards (one ``.tar``, a brace pattern ``"train-{000000..000127}.tar"``, a folder of
            ``.tar`` files, or the same at ``s3://`` or ``http(s)://`` URLs).
        batch_size (int, optional): samples per batch (default: ``1``, as PyTorch). ``None``,
            PyTorch's unbatched mode, is refused: Stoke's producer always batches.
        shuffle (bool, optional): a new permutation each epoch, drawn from ``seed`` and the epoch
            (default: ``False``).
        sampler (Sampler, optional): ``RandomSampler`` (without replacement), ``SequentialSampler``
            or ``DistributedSampler``, whose order Stoke's producer draws itself (its ``set_epoch`` is
            read at each ``iter()``); any other sampler is refused.
        batch_sampler (Sampler, optional): refused: batches are drawn by the producer.
        num_workers (int or "auto", optional): Stoke's decoding threads, in its producer process.
            ``0`` (PyTorch's default, where it means no worker processes) and ``"auto"`` let Stoke
            choose while it runs: as many as your loop needs, at most the cores divided by
            ``LOCAL_WORLD_SIZE`` (``loader.tuning()`` says each change and why); ``N`` runs exactly
            ``N``. Nothing is ever decoded in this process.
        collate_fn (Callable, optional): PyTorch's meaning: a list of ``(image, label)`` in, the batch
            out (a copy it makes); ``default_collate`` costs nothing. ``batch_transform`` does the
            same on the whole batch without the copy.
        pin_memory (bool, optional): registers the ring with CUDA once (page-locked), so that
            ``.to(device, non_blocking=True)`` of a batch is an asynchronous copy; a slot goes back
            only after the GPU work queued before its batch was freed. No effect without CUDA.
        drop_last (bool, optional): drop each rank's last partial batch, as PyTorch.
        timeout (float, optional): seconds to wait for a batch before ``RuntimeError`` (0: forever).
        worker_init_fn (Callable, optional): ignored, said once: no Python runs in Stoke's threads.
        multiprocessing_context (optional): ignored, said once: the producer is one process.
        generator (torch.Generator, optional): its ``initial_seed()`` is the seed.
        prefetch_factor (int, optional): ``slots = max(2, num_workers * prefetch_factor)``.
        persistent_workers (bool, optional): the producer always persists across epochs.
        pin_memory_device (str, optional): ``""`` or a CUDA device (``"cuda"``, ``"cuda:N"``); any
            other device is refused (Stoke pins for CUDA only).
        in_order (bool, optional): batches always come in order, which ``in_order=False`` allows.

    Stoke's own, keyword-only:
        seed (int): the order's and every random choice's seed (default: the sampler's or the
            generator's; else, as torch without a generator, drawn from torch's global generator, so
            ``torch.manual_seed(s)`` repeats a run; 0 with ``world_size > 1``, as
            ``DistributedSampler``'s, since ranks must share one permutation).
        transform ("eval" or "train"), resize (int), crop (int), output ("uint8" or "float32"),
            mean and std (three floats each): the transform when the dataset is a path:
            ``Resize(resize)`` + ``CenterCrop(crop)`` (defaults 256, 224), or ``"train"``'s
            ``RandomResizedCrop(crop)`` + ``RandomHorizontalFlip()``; float32 is ``(x / 255 - mean)
            / std``, ImageNet's mean and std by default.
        batch_transform (Callable): ``fn(images, labels)`` applied to each batch, without a copy.
        with_indices (bool): yield each sample's dataset index too.
        on_error ("fail" or "skip"): a batch with files that did not decode raises
            :class:`SampleError` naming them, or (``"skip"``) comes with them zeroed and listed in
            ``batch.skipped``.
        rank, world_size (int): this process's shard; default ``torch.distributed``'s when it is
            initialised, else ``RANK``/``WORLD_SIZE`` (torchrun), else 0/1. Every rank gets as many
            samples, as with ``DistributedSampler``: ``shard_tail="pad"`` (the default) gives each
            ``ceil(N/world_size)``, repeating samples from the start of the epoch's permutation
            (marked by ``batch.padded``); ``"drop"`` gives each ``floor(N/world_size)``.
        slots (int): the ring's size in batches: decoded ahead plus held by your code (default 4).
        dct_scaling ("none", "pow2" or "all"): let libjpeg-turbo decode at a smaller scale where
            the resize allows (default "pow2" for a path, "none" for a translated transform).
        shuffle_window (int), shard_cache (str), shard_cache_dir (path): over shards, shuffle within
            windows of that many shards (the default for remote shards, whose cache holds a window:
            8), and bound and place the cache of whole remote shards (``"4G"``).
        worker_nice (int): the decoding threads' nice value, 0 to 19 (default 19): your loop's threads
            run first, and the workers decode on the CPU they leave.
        start_timeout (float): seconds to wait for the producer's ring (the first run may build Stoke).
    """

    def __init__(
        self,
        dataset: Union[str, "os.PathLike[str]", Any],
        batch_size: Optional[int] = 1,
        shuffle: Optional[bool] = None,
        sampler: Optional[Any] = None,
        batch_sampler: Optional[Any] = None,
        num_workers: Union[int, str] = 0,
        collate_fn: Optional[Callable[[List[Any]], Any]] = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Optional[Callable[[int], None]] = None,
        multiprocessing_context: Optional[Any] = None,
        generator: Optional[Any] = None,
        *,
        prefetch_factor: Optional[int] = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        batch_transform: Optional[Callable[[Any, Any], Any]] = None,
        seed: Optional[int] = None,
        resize: Optional[int] = None,
        crop: Optional[int] = None,
        output: Optional[str] = None,
        on_error: str = "fail",
        with_indices: bool = False,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        transform: Optional[str] = None,
        dct_scaling: Optional[str] = None,
        slots: Optional[int] = None,
        shuffle_window: Optional[int] = None,
        shard_cache: Optional[str] = None,
        shard_cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
        worker_nice: int = 19,
        shard_tail: Optional[str] = None,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        # Nothing exists yet that close() must undo: every argument is checked first.
        self._closed = True
        self._proc = self._ring = None
        self._list_fd = None
        self._fds = {}
        self._ring_path = self._index_path = self._tuning_path = None
        torch_settings = _torch_keywords(batch_size=batch_size, sampler=sampler, batch_sampler=batch_sampler,
                                         shuffle=shuffle, seed=seed, rank=rank, world_size=world_size,
                                         shard_tail=shard_tail, num_workers=num_workers, collate_fn=collate_fn,
                                         pin_memory=pin_memory, timeout=timeout, worker_init_fn=worker_init_fn,
                                         multiprocessing_context=multiprocessing_context, generator=generator,
                                         prefetch_factor=prefetch_factor, persistent_workers=persistent_workers,
                                         pin_memory_device=pin_memory_device, in_order=in_order, slots=slots,
                                         batch_transform=batch_transform, with_indices=with_indices)
        shuffle, seed, rank, world_size, shard_tail = (torch_settings[k] for k in
                                                       ("shuffle", "seed", "rank", "world_size", "shard_tail"))
        num_workers, slots = torch_settings["num_workers"], torch_settings["slots"]
        self.dataset = dataset if _compat.is_dataset(dataset) else None
        if self.dataset is None and not isinstance(dataset, (str, bytes, os.PathLike)):
            raise TypeError(f"stoke.DataLoader takes a path or a dataset with samples, a list of (path, label) (a "
                            f"torchvision ImageFolder or DatasetFolder), not a {type(dataset).__name__}: Stoke reads "
                            "the files itself. Use torch.utils.data.DataLoader for this dataset.")
        given = {k: v for k, v in (("resize", resize), ("crop", crop), ("output", output), ("transform", transform),
                                   ("mean", mean), ("std", std)) if v is not None}
        chw = False
        translated = None
        if self.dataset is not None and getattr(self.dataset, "transform", None) is not None:
            if given:
                raise ValueError(f"{', '.join(given)} given, and the dataset has a transform that already decides "
                                 f"{'it' if len(given) == 1 else 'them'}: pass one or the other")
            translated = _compat.translate_transform(self.dataset.transform)
            transform, resize, crop = translated["transform"], translated["resize"], translated["crop"]
            output, mean, std, chw = translated["output"], translated["mean"], translated["std"], translated["chw"]
        transform = "eval" if transform is None else transform
        resize = 256 if resize is None else int(resize)
        crop = 224 if crop is None else int(crop)
        output = "uint8" if output is None else output
        # A torchvision transform is translated exactly: no DCT scaling unless asked for.
        dct_scaling = ("none" if translated else "pow2") if dct_scaling is None else dct_scaling
        if output not in ("uint8", "float32"):
            raise ValueError(f"output must be 'uint8' or 'float32', not {output!r}")
        if on_error not in ("fail", "skip"):
            raise ValueError(f"on_error must be 'fail' or 'skip', not {on_error!r}")
        if shard_tail not in ("pad", "drop"):
            raise ValueError(f"shard_tail must be 'pad' or 'drop', not {shard_tail!r}")
        if transform not in ("eval", "train"):
            raise ValueError(f"transform must be 'eval' or 'train', not {transform!r}")
        if dct_scaling not in ("none", "pow2", "all"):
            raise ValueError(f"dct_scaling must be 'none', 'pow2' or 'all', not {dct_scaling!r}")
        if (mean is None) != (std is None) or (mean is not None and (len(mean) != 3 or len(std) != 3)):
            raise ValueError("mean and std go together, three numbers each (RGB, on a 0-1 scale)")
        if mean is not None and output != "float32":
            raise ValueError("mean and std normalise output='float32'; the uint8 output is not normalised")
        if slots < 1:
            raise ValueError(f"slots must be positive, not {slots}")
        if resize < 1 or crop < 1:
            raise ValueError(f"resize and crop must be positive, not {resize} and {crop}")
        if not 0 <= int(worker_nice) <= 19:
            raise ValueError(f"worker_nice must be 0 to 19, not {worker_nice}")
        if shuffle_window is not None and int(shuffle_window) < 0:
            raise ValueError(f"shuffle_window must not be negative: {shuffle_window}")
        default_rank, default_world = _default_rank_and_world()
        rank = default_rank if rank is None else int(rank)
        world_size = default_world if world_size is None else int(world_size)
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, world_size): rank {rank} of {world_size}")
        seed_drawn = seed is None
        if seed_drawn:
            # As torch's RandomSampler and workers without a generator: from torch's global generator,
            # so that torch.manual_seed(s) repeats a run and an unseeded run does not. Ranks must
            # share one permutation: with world_size > 1 it is DistributedSampler's default, 0.
            import torch
            seed = 0 if world_size > 1 else int(torch.empty((), dtype=torch.int64).random_().item())
        samples = _compat.dataset_samples(self.dataset) if self.dataset is not None else None
        stoke = _home.stoke_command()  # the bundled runtime's java ... -jar stoke.jar, else ./stoke

        # PyTorch's attributes, as torch.utils.data.DataLoader has them.
        self._passed_sampler = sampler
        self.batch_size, self.drop_last = int(batch_size), bool(drop_last)
        self.num_workers = num_workers
        self.collate_fn, self._collate = collate_fn, torch_settings["collate"]
        self.pin_memory, self._pin = bool(pin_memory), torch_settings["pin"]
        self.pin_memory_device, self.in_order = pin_memory_device, bool(in_order)
        self.timeout, self.generator, self.prefetch_factor = float(timeout), generator, prefetch_factor
        self.persistent_workers, self.worker_init_fn = persistent_workers, worker_init_fn
        self.multiprocessing_context, self.batch_sampler = multiprocessing_context, None
        # Stoke's settings.
        self.batch_transform = batch_transform
        self.shuffle, self.seed, self._seed_drawn = bool(shuffle), int(seed), seed_drawn
        self.rank, self.world_size, self.shard_tail = rank, world_size, shard_tail
        self.worker_nice = int(worker_nice)
        self.resize, self.crop, self.output, self.on_error = resize, crop, output, on_error
        self.mean = None if mean is None else [float(v) for v in mean]
        self.std = None if std is None else [float(v) for v in std]
        self.with_indices, self.transform, self.dct_scaling, self.slots = with_indices, transform, dct_scaling, slots
        self.scale = translated and translated["scale"]
        self.ratio = translated and translated["ratio"]
        self.flip = translated and translated["flip"]
        self.shuffle_window = None if shuffle_window is None else int(shuffle_window)
        self.shard_cache, self.shard_cache_dir = shard_cache, shard_cache_dir
        self._chw = chw
        self._start_timeout = start_timeout
        self._stoke = stoke
        self._pinned = None  # (pointer, cudart) of the ring registered with CUDA
        self._pending = collections.deque()  # (event, raw batch): slots released once the GPU copies are done
        self._tuning = []  # the auto workers' changes read so far (see tuning())
        self._stderr = collections.deque(maxlen=STDERR_LINES)
        self._epoch = 0
        self._batch = 0
        self._producer_next = None  # (epoch, batch) the ring hands out next
        self._said_ring = False
        self.samples = None

        # Everything checked: from here on close() undoes what is made.
        self._closed = False
        try:
            if samples is not None:
                # The dataset's list lives in an anonymous file that the producer reads as /dev/fd/N:
                # nothing on disk to leave behind, however this process ends.
                self._list_fd = _anonymous_file("stoke-list")
                _compat.write_list_file(samples, self._list_fd)
                self.root = f"/dev/fd/{self._list_fd}"
            else:
                self.root = os.fspath(dataset)
            self._start_producer(0, 0)
            if self.dataset is None:
                self.dataset = _PathDataset(self.root, self.samples)
            self.sampler = self._make_sampler()
        except BaseException:
            self.close()
            raise
        self._seen_sampler_epoch = getattr(self.sampler, "epoch", None)
        atexit.register(_close_at_exit, weakref.ref(self))

    def _make_sampler(self):
        """The sampler passed (checked against the dataset's size), else torch's sampler that stands for
        Stoke's order: ``loader.sampler`` as PyTorch's DataLoader has one (its ``set_epoch`` works; its
        own iteration is torch's order, not Stoke's, which the Java producer draws)."""
        from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler
        n = len(self.samples)
        sampler = self._passed_sampler
        if sampler is not None:
            size = len(getattr(sampler, "dataset", None) or getattr(sampler, "data_source", None) or ())
            if size != n:
                raise ValueError(f"the sampler is over {size} samples, the dataset has {n}")
            return sampler
        if self.world_size > 1:
            return DistributedSampler(self.dataset, num_replicas=self.world_size, rank=self.rank,
                                      shuffle=self.shuffle, seed=self.seed, drop_last=self.shard_tail == "drop")
        return RandomSampler(self.dataset) if self.shuffle else SequentialSampler(self.dataset)

    # ---- sizes and position ----

    def _samples_per_rank(self):
        """Samples of each rank's epoch, padding included: ceil(N/W) (pad) or floor(N/W) (drop), as Java's Sampler."""
        n, w = len(self.samples), self.world_size
        return (n + w - 1) // w if self.shard_tail == "pad" else n // w

    def __len__(self):
        """Batches per epoch for this rank, the same on every rank (``ceil(N/W)`` or ``floor(N/W)`` samples)."""
        shard = self._samples_per_rank()
        per_epoch = shard - shard % self.batch_size if self.drop_last else shard
        return (per_epoch + self.batch_size - 1) // self.batch_size

    def _padding(self, batch_index, size):
        """Which samples of batch ``batch_index`` (``size`` of them) are padding: position p of the
        rank's epoch is padding when ``rank + p * world_size >= N`` (a suffix of the epoch)."""
        first = batch_index * self.batch_size
        return (self.rank + (np.arange(first, first + size, dtype=np.int64) * self.world_size)) >= len(self.samples)

    def name(self, index):
        """Sample ``index``'s name: its file's path, or ``<shard>/<key>`` in a tar shard."""
        return self.samples[index][0]

    def set_epoch(self, epoch):
        """The next ``for`` delivers epoch ``epoch`` (from where it stopped, when it is the current one)."""
        if epoch < 0:
            raise ValueError(f"epoch must not be negative: {epoch}")
        if epoch != self._epoch:
            self._epoch, self._batch = int(epoch), 0
        if hasattr(self.sampler, "epoch"):
            self.sampler.epoch = self._seen_sampler_epoch = int(epoch)

    def state_dict(self):
        """Where the loader is: after ``batch`` batches of ``epoch``, with the settings that fix the order."""
        return {"epoch": self._epoch, "batch": self._batch, "seed": self.seed, "shuffle": self.shuffle,
                "batch_size": self.batch_size, "drop_last": bool(self.drop_last), "rank": self.rank,
                "world_size": self.world_size, "dataset_size": len(self.samples), "transform": self.transform,
                "shuffle_window": self.shuffle_window, "shard_tail": self.shard_tail}

    def load_state_dict(self, state):
        """Resumes at the state's position: the rest of that epoch comes in the uninterrupted run's order.
        A seed this loader drew itself (none given) gives way to the state's, as torchdata's
        ``StatefulDataLoader`` restores its sampler's generator; a seed given must match."""
        mine = self.state_dict()
        if self._seed_drawn and "seed" in state and int(state["seed"]) != self.seed:
            self.seed = mine["seed"] = int(state["seed"])
            self._producer_next = None  # the producer draws with the old seed: start another
        for key in ("seed", "shuffle", "batch_size", "drop_last", "rank", "world_size", "dataset_size", "transform",
                    "shuffle_window", "shard_tail"):
            if key in state and state[key] != mine[key]:
                raise ValueError(f"state_dict was saved with {key}={state[key]!r}, this loader has {mine[key]!r}: "
                                 "resuming would not give the same order")
        epoch, batch = int(state["epoch"]), int(state["batch"])
        if batch >= len(self):
            epoch, batch = epoch + 1, 0
        self._epoch, self._batch = epoch, batch

    # ---- iteration ----

    def __iter__(self):
        if self._closed:
            raise ValueError("the loader is closed")
        # A DistributedSampler's set_epoch(e) (the passed one, or loader.sampler): epoch e comes next.
        epoch = getattr(self.sampler, "epoch", None)
        if epoch is not None and epoch != self._seen_sampler_epoch:
            self.set_epoch(int(epoch))
        return _EpochIterator(self)

    def _next(self):
        """The batch at the current position, or None at the end of its epoch (which moves on)."""
        if self._batch >= len(self):
            self._epoch, self._batch = self._epoch + 1, 0
            return None
        if self._producer_next != (self._epoch, self._batch):
            self._restart_producer(self._epoch, self._batch)
        raw = self._take()
        if (raw.epoch, raw.batch_index) != (self._epoch, self._batch):
            raw.release()
            raise RuntimeError(f"the ring handed out batch {raw.batch_index} of epoch {raw.epoch} where batch "
                               f"{self._batch} of epoch {self._epoch} was due")
        self._batch += 1
        k = self._batch
        self._producer_next = (self._epoch, k) if k < len(self) else (self._epoch + 1, 0)
        batch = self._wrap(raw)
        if self._collate is not None:
            images, labels = batch[0], batch[1]
            # PyTorch's meaning: a list of (image, label) samples in, the batch out (a copy it makes).
            return self._collate(list(zip(images.unbind(0), labels.tolist())))
        if self.batch_transform is not None:
            out = self.batch_transform(batch[0], batch[1])
            if isinstance(out, tuple):
                out = Batch(out + tuple(batch[2:]), batch.epoch, batch.batch_index, batch.skipped, batch.padded)
            return out
        return batch

    def _take(self):
        ring = self._ring
        deadline = time.monotonic() + self.timeout if self.timeout > 0 else None
        while True:
            self._release_copied(wait=ring.held >= ring.slot_count)
            if ring.held >= ring.slot_count:
                gc.collect()  # a reference cycle may be all that holds a batch
                self._release_copied(wait=True)
                if ring.held >= ring.slot_count:
                    raise RuntimeError(
                        f"all {ring.slot_count} ring slots are held by batches your code still references, so no "
                        "new batch can be decoded. Keep what you need with images.clone() (or .to(device)) and "
                        "drop the batch, or create the loader with more slots (slots=N).")
            try:
                raw = ring.next(timeout=0.25)
            except ProducerGoneError as e:
                raise self._producer_error(str(e)) from None
            except TimeoutError:
                if self._proc.poll() is not None:
                    raise self._producer_error(f"the producer exited with status {self._proc.returncode}") from None
                if deadline is not None and time.monotonic() > deadline:
                    raise RuntimeError(f"DataLoader timed out after {self.timeout:g} seconds") from None
                continue
            if raw is None:
                raise self._producer_error("the producer ended its stream early")
            return raw

    def _wrap(self, raw):
        import torch

        skipped = []
        if (raw.status != 0).any():
            for position in np.flatnonzero(raw.status):
                index = int(raw.indices[position])
                status = int(raw.status[position])
                reason = SAMPLE_STATUS.get(status, f"status {status}")
                path = self.samples[index][0]
                if status == SAMPLE_FORMAT_NOT_DECODED:
                    reason = _with_format(reason, path)
                skipped.append(SkippedSample(int(position), index, path, reason))
        labels = torch.from_numpy(raw.labels.astype(np.int64))
        indices = torch.from_numpy(raw.indices.astype(np.int64))
        if raw.failed:
            epoch, batch_index = raw.epoch, raw.batch_index
            raw.release()
            raise SampleError(epoch, batch_index, skipped)
        lease = _SlotLease(raw.pixels)
        if self._pinned:
            weakref.finalize(lease, _release_after_copies, weakref.ref(self), raw)
        else:
            weakref.finalize(lease, raw.release)
        images = torch.from_numpy(np.asarray(lease))
        del lease
        if self._chw:
            images = images.permute(0, 3, 1, 2)  # PILToTensor's [n, 3, H, W]: a view of the HWC slot, no copy
        items = (images, labels, indices) if self.with_indices else (images, labels)
        padded = torch.from_numpy(self._padding(raw.batch_index, len(raw.labels)))
        return Batch(items, raw.epoch, raw.batch_index, skipped, padded)

    # ---- the producer ----

    def _command(self, epoch, batch, ring_path, index_path):
        cmd = [*self._stoke, "serve", self.root, "--ring", ring_path, "--index-out", index_path,
               "--parent-pid", str(os.getpid()), "--status-interval", "0", "--epochs", "0",
               "--start-epoch", str(epoch), "--start-batch", str(batch), "--batch-size", str(self.batch_size),
               "--workers", str(self.num_workers), "--max-workers", str(_default_workers()), "--slots", str(self.slots), "--seed", str(self.seed),
               "--rank", str(self.rank), "--world-size", str(self.world_size), "--shard-tail", self.shard_tail,
               "--resize", str(self.resize),
               "--crop", str(self.crop), "--output", self.output, "--on-error", self.on_error,
               "--transform", self.transform, "--dct-scaling", self.dct_scaling, "--worker-nice", str(self.worker_nice)]
        if self.num_workers == "auto":
            cmd += ["--tuning-out", self._tuning_path]
        if self.mean is not None:
            cmd += ["--mean", ",".join(repr(v) for v in self.mean), "--std", ",".join(repr(v) for v in self.std)]
        if self.scale is not None:
            cmd += ["--scale", ",".join(repr(v) for v in self.scale), "--ratio", ",".join(repr(v) for v in self.ratio),
                    "--flip", repr(self.flip)]
        if self.shuffle:
            cmd.append("--shuffle")
        if self.drop_last:
            cmd.append("--drop-last")
        if self.shuffle_window is not None:
            cmd += ["--shuffle-window", str(self.shuffle_window)]
        if self.shard_cache is not None:
            cmd += ["--shard-cache", str(self.shard_cache)]
        if self.shard_cache_dir is not None:
            cmd += ["--shard-cache-dir", os.fspath(self.shard_cache_dir)]
        return cmd

    def _start_producer(self, epoch, batch):
        # The ring, the index and the tuning log are anonymous files that the producer inherits as
        # descriptors (/dev/fd/N): the ring needs no room in /dev/shm (a container's is 64 MB), and
        # nothing outlives both processes, however either ends (kill -9 included).
        # One at a time into self._fds, so that close() closes those made before a failure.
        for name in ("ring", "index") + (("tuning",) if self.num_workers == "auto" else ()):
            self._fds[name] = _anonymous_file(f"stoke-{name}")
        self._ring_path = f"/dev/fd/{self._fds['ring']}"
        self._index_path = f"/dev/fd/{self._fds['index']}"
        self._tuning_path = f"/dev/fd/{self._fds['tuning']}" if "tuning" in self._fds else None
        self._tuning_read = 0
        self._stderr.clear()
        inherited = list(self._fds.values()) + ([self._list_fd] if self._list_fd is not None else [])
        self._proc = subprocess.Popen(self._command(epoch, batch, self._ring_path, self._index_path),
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True, errors="replace", pass_fds=inherited)
        threading.Thread(target=self._drain_stderr, args=(self._proc,), name="stoke-producer-stderr",
                         daemon=True).start()
        deadline = time.monotonic() + self._start_timeout
        while True:
            if self._proc.poll() is not None:
                self._proc.wait()
                time.sleep(0.05)  # let the reader thread take the last lines
                raise self._producer_error(f"the producer exited with status {self._proc.returncode} before its "
                                           "ring was ready")
            try:
                # A batch takes the producer tens of milliseconds or more: back off to 2 ms sleeps
                # while waiting, so that polling does not take a core from the decoding threads.
                self._ring = Ring(self._ring_path, release_on_next=False, spin=0.0002, max_poll_sleep=0.002)
                break
            except (RingFormatError, ProducerGoneError):
                pass  # not laid out yet (empty, or its magic not written), or its pid not yet set
            if time.monotonic() > deadline:
                self._stop_producer()
                raise ProducerError(f"the producer's ring was not ready within {self._start_timeout:.0f} s")
            time.sleep(0.01)
        if self.samples is None:
            self.samples = self._read_index()
        if not self._said_ring:
            # Once per loader: users under a memory limit (a container, a cgroup) need the figure.
            self._said_ring = True
            g = self._ring._g
            print(f"stoke.DataLoader: ring of {g.slot_count} slots of {_mib(g.slot_stride)} ({_mib(g.total_length)}) "
                  "in anonymous shared memory (not /dev/shm), counted against this job's memory limit",
                  file=sys.stderr, flush=True)
        if self._pin:
            self._pin_ring()
        self._producer_next = (epoch, batch)

    def _read_index(self):
        import json

        samples = []
        with open(self._index_path, encoding="utf-8") as f:
            header = json.loads(f.readline())  # {"samples": N, "listed": bool}
            if not header["listed"]:
                return _UnlistedSamples(header["samples"], self.root)
            for line in f:
                if line.strip():
                    path, label = json.loads(line)
                    samples.append((path, label))
        return samples

    def _drain_stderr(self, proc):
        import sys

        with proc.stderr:
            for line in proc.stderr:
                line = line.rstrip("\n")
                self._stderr.append(line)
                # The producer's warnings (a fallback, a build) reach the user's terminal, once each.
                if "WARNING" in line or line.startswith("stoke: building") or line.startswith("stoke: recording"):
                    print(line, file=sys.stderr, flush=True)

    def _producer_error(self, what):
        time.sleep(0.05)  # the producer's last words may still be in the pipe
        tail = "\n".join(self._stderr) or "(nothing)"
        return ProducerError(f"{what}. Its last stderr lines:\n{tail}")

    def _restart_producer(self, epoch, batch):
        self._stop_producer()
        self._start_producer(epoch, batch)

    def _pin_ring(self):
        """Registers the ring's mapping with CUDA once per producer (page-locked), so that
        ``.to(device, non_blocking=True)`` of a batch is an asynchronous DMA from the slot."""
        import torch
        mm = self._ring._mm
        pointer = np.frombuffer(mm, dtype=np.uint8).ctypes.data
        cudart = torch.cuda.cudart()
        status = cudart.cudaHostRegister(pointer, len(mm), 0)
        if int(getattr(status, "value", status)) != 0:
            _say_once("pin-failed", f"stoke.DataLoader: pin_memory: cudaHostRegister of the ring failed ({status}); "
                                    "batches stay pageable and copies to the GPU synchronous")
            return
        self._pinned = (pointer, cudart)

    def _release_copied(self, wait=False):
        """Gives back the slots whose batches were freed, once the GPU work queued before then is done
        (a pinned slot may still be the source of a non_blocking copy). ``wait``: wait for the oldest."""
        while self._pending:
            event, raw = self._pending[0]
            if not event.query():
                if not wait:
                    return
                event.synchronize()
                wait = False
            self._pending.popleft()
            raw.release()

    def _unpin(self):
        pinned, self._pinned = self._pinned, None
        if pinned is not None:
            while self._pending:
                event, raw = self._pending.popleft()
                event.synchronize()
                raw.release()
            pointer, cudart = pinned
            cudart.cudaHostUnregister(pointer)

    def _stop_producer(self):
        self._unpin()
        ring, self._ring = self._ring, None
        if ring is not None:
            ring.close()
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()  # its shutdown hook stops the workers
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._tuning_path:
            self.tuning()  # keep this producer's changes past its file
        fds, self._fds = self._fds, {}
        self._tuning_path = None
        for fd in fds.values():
            os.close(fd)  # the kernel frees each file once the producer's descriptors and mappings go too
        self._producer_next = None

    # ---- auto workers ----

    def tuning(self):
        """With ``num_workers="auto"``: every change the producer made to its active decoding threads,
        oldest first, as dicts ``{"at_s", "from_workers", "to_workers", "reason"}`` (``at_s`` counts
        from that producer's start; a resumed or restarted producer starts again). Empty otherwise."""
        import json

        path = getattr(self, "_tuning_path", None)
        if path:
            try:
                with open(path, encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except FileNotFoundError:
                lines = []
            for line in lines[self._tuning_read:]:
                if line.endswith("}"):  # a line being appended is read next time
                    self._tuning.append(json.loads(line))
                    self._tuning_read += 1
                else:
                    break
        return list(self._tuning)

    @property
    def active_workers(self):
        """Decoding threads taking samples now: ``num_workers``, or, with ``"auto"``, the producer's last choice."""
        if self.num_workers != "auto":
            return self.num_workers
        changes = self.tuning()
        return changes[-1]["to_workers"] if changes else _default_workers()

    # ---- closing ----

    def close(self):
        """Stops the producer and removes its files. Tensors already handed out stay valid. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop_producer()
        self._remove_list()

    def _remove_list(self):
        fd, self._list_fd = self._list_fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class _EpochIterator:
    """One epoch of a :class:`DataLoader`. After an exception (a :class:`SampleError`), ``next()``
    goes on with the following batch."""

    def __init__(self, loader):
        self._loader = loader
        self._done = False

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        batch = self._loader._next()
        if batch is None:
            self._done = True
            raise StopIteration
        return batch

    def __len__(self):
        return len(self._loader)
