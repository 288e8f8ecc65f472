"""``stoke.DataLoader``: a drop-in for ``torch.utils.data.DataLoader`` over an ImageFolder tree.

Creating one starts Stoke's Java producer (``stoke serve``: the Java runtime bundled in the wheel, else
a checkout's ``./stoke``; see ``_home``) as a child process, decoding into a
private ring in ``/dev/shm``; the batches' pixels are torch tensors that view the ring's memory.
The producer runs across epochs (like ``persistent_workers=True``) and stops, removing its files,
when the loader is closed or this process exits, however it exits: it watches this process.

The slot under a batch goes back to the producer when the last Python object viewing its pixels
is freed (a finaliser on the buffer's owner), never earlier: a tensor kept across steps keeps its
bytes. Keep a batch longer than the ring allows by ``images.clone()``, or give it more ``slots``.
"""

import atexit
import collections
import collections.abc
import gc
import os
import secrets
import subprocess
import tempfile
import threading
import time
import warnings
import weakref

import numpy as np

from . import _home
from . import _torch_compat as _compat
from .ring import SAMPLE_STATUS, ProducerGoneError, Ring, RingFormatError

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


def _torch_keywords(*, sampler, batch_sampler, shuffle, seed, rank, world_size, shard_tail, num_workers, collate_fn,
                    pin_memory, timeout, worker_init_fn, multiprocessing_context, generator, prefetch_factor, slots,
                    batch_transform, with_indices):
    """PyTorch DataLoader's keywords as Stoke's settings, refusing at construction what cannot be done."""
    out = {"shuffle": bool(shuffle), "seed": seed, "rank": rank, "world_size": world_size, "shard_tail": shard_tail}

    def agree(key, value, source):
        if out[key] is not None and out[key] != value:
            raise ValueError(f"{key}={out[key]!r} given, and {source} says {value!r}: pass one or the other")
        out[key] = value

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
    out["seed"] = 0 if out["seed"] is None else int(out["seed"])
    out["shard_tail"] = "pad" if out["shard_tail"] is None else out["shard_tail"]
    if num_workers == "auto":
        out["num_workers"] = "auto"
    elif num_workers is not None and int(num_workers) < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    elif num_workers is not None and int(num_workers) == 0:
        _say_once("workers-0", "stoke.DataLoader: num_workers=0 runs one decoding thread in Stoke's producer (a Java "
                               "process); nothing is decoded in this process")
        num_workers = 1
    if num_workers != "auto":
        out["num_workers"] = None if num_workers is None else int(num_workers)
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if prefetch_factor is not None:
        if slots is not None:
            raise ValueError("slots and prefetch_factor both size the ring: pass one")
        if int(prefetch_factor) < 1:
            raise ValueError(f"prefetch_factor must be positive, not {prefetch_factor}")
        workers = out["num_workers"]
        slots = max(2, (_default_workers() if workers in (None, "auto") else workers) * int(prefetch_factor))
    out["slots"] = 4 if slots is None else int(slots)
    if worker_init_fn is not None:
        _say_once("worker-init", "stoke.DataLoader: worker_init_fn is ignored: Stoke decodes in Java threads, no "
                                 "Python runs in them (its transforms are the producer's own, seeded by seed)")
    if multiprocessing_context is not None:
        _say_once("mp-context", "stoke.DataLoader: multiprocessing_context is ignored: Stoke's producer is one Java "
                                "process, started with subprocess")
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
    out["pin"] = False
    if pin_memory:
        import torch
        if torch.cuda.is_available():
            out["pin"] = True
        else:
            _say_once("pin-no-cuda", "stoke.DataLoader: pin_memory has no effect without CUDA")
    return out


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
    """Batches of ``root`` decoded by Stoke. ``root`` is a torchvision ``ImageFolder``/``DatasetFolder``
    (or any object with ``samples``, ``[(path, label), ...]``), whose ``transform`` is translated
    exactly into the settings below or refused at construction (see the package README), or an ImageFolder tree
    (``root/<class>/<image>.jpg``), a list file of ``<path> <label>`` lines, or WebDataset tar
    shards: one ``.tar``, a brace pattern (``"train-{000000..000127}.tar"``), a folder of ``.tar``
    files, or the same at ``s3://`` or ``http(s)://`` URLs: ``Resize(resize)`` + ``CenterCrop(crop)``, or with
    ``transform="train"`` ``RandomResizedCrop(crop)`` + ``RandomHorizontalFlip()``.

    Yields ``(images, labels)`` of torch tensors (``(images, labels, indices)`` with
    ``with_indices=True``): ``images`` uint8 ``[n, crop, crop, 3]`` (``output="uint8"``) or float32
    ``[n, 3, crop, crop]`` normalised with ImageNet's mean and std (``output="float32"``), viewing
    shared memory; ``labels`` and ``indices`` int64 ``[n]``. Indices are positions in dataset order:
    torchvision's ``ImageFolder(root).samples`` order, or for shards shard order then member order.
    ``loader.samples[i]`` is ``(name, label)`` and ``loader.name(i)`` the name: the file's path, or
    ``<shard>/<key>`` for a sample in a tar shard. Over shards, ``shuffle_window=W`` shuffles
    within windows of ``W`` shards (the default for remote shards, whose cache holds a window), 0
    over every sample (the default for local shards). ``shard_cache`` (``"4G"``) and
    ``shard_cache_dir`` bound and place the cache of whole remote shards (``--shard-cache``).

    Each ``for`` over the loader delivers one epoch: the rest of it when an earlier ``for`` stopped
    early (no batch is lost or repeated), then the next epoch. ``set_epoch(e)`` moves to epoch
    ``e``. ``state_dict()``/``load_state_dict()`` resume mid-epoch exactly once (torchdata's
    ``StatefulDataLoader`` convention).

    ``rank``/``world_size`` default to ``torch.distributed``'s when it is initialised, else to
    ``RANK``/``WORLD_SIZE`` (torchrun), else 0/1. Every rank gets the same number of samples, as
    with PyTorch's ``DistributedSampler``: ``shard_tail="pad"`` (the default) gives each
    ``ceil(N/world_size)``, repeating samples from the start of the epoch's permutation (marked by
    ``batch.padded``); ``"drop"`` gives each ``floor(N/world_size)``, leaving up to
    ``world_size - 1`` out. ``drop_last`` drops each rank's last partial batch, as in PyTorch. ``num_workers`` (decoding threads in the producer) defaults to ``"auto"``:
    as many as your loop needs, at most the cores divided by ``LOCAL_WORLD_SIZE``, chosen while it
    runs from how long it waits for batches (``loader.tuning()`` says each change and why,
    ``loader.active_workers`` how many now); a number runs exactly that many. ``slots`` is the ring's size: batches decoded ahead plus the
    batches your code still holds.

    PyTorch's keywords mean what they mean there: ``sampler`` (Random-, Sequential- or
    DistributedSampler, whose ``set_epoch`` is read at each ``iter()``), ``generator`` (its
    ``initial_seed()``), ``collate_fn`` (a list of ``(image, label)`` in, the batch out;
    ``default_collate`` is free), ``pin_memory``, ``timeout``, ``prefetch_factor`` (``slots =
    max(2, num_workers * prefetch_factor)``), ``num_workers=0`` (one thread), ``persistent_workers``;
    ``worker_init_fn`` and ``multiprocessing_context`` are ignored and ``batch_sampler`` and other
    samplers refused. ``batch_transform=fn`` applies ``fn(images, labels)`` to each batch without a
    copy. ``loader.dataset``, ``loader.sampler``, ``len(loader)`` are PyTorch's.

    ``worker_nice`` (0 to 19, default 19) is the decoding threads' nice value: your loop's threads
    (a model on the CPU, the Python thread that launches GPU work) run first, and the workers decode
    on the CPU they leave. When nothing else wants the cores the workers get all of them; 0 gives
    them the same priority as your loop.
    """

    def __init__(self, root, batch_size=256, *, shuffle=None, sampler=None, batch_sampler=None, num_workers=None,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, prefetch_factor=None, persistent_workers=False,
                 batch_transform=None, seed=None, resize=None, crop=None, output=None, on_error="fail",
                 with_indices=False, rank=None, world_size=None, transform=None, dct_scaling=None, slots=None,
                 shuffle_window=None, shard_cache=None, shard_cache_dir=None, worker_nice=19, shard_tail=None,
                 mean=None, std=None, start_timeout=START_TIMEOUT):
        # PyTorch's keywords first: what they fix, what Stoke refuses (before anything starts).
        torch_settings = _torch_keywords(sampler=sampler, batch_sampler=batch_sampler, shuffle=shuffle, seed=seed,
                                         rank=rank, world_size=world_size, shard_tail=shard_tail,
                                         num_workers=num_workers, collate_fn=collate_fn, pin_memory=pin_memory,
                                         timeout=timeout, worker_init_fn=worker_init_fn,
                                         multiprocessing_context=multiprocessing_context, generator=generator,
                                         prefetch_factor=prefetch_factor, slots=slots,
                                         batch_transform=batch_transform, with_indices=with_indices)
        shuffle, seed, rank, world_size, shard_tail = (torch_settings[k] for k in
                                                       ("shuffle", "seed", "rank", "world_size", "shard_tail"))
        num_workers, slots = torch_settings["num_workers"], torch_settings["slots"]
        self._passed_sampler = sampler
        self.collate_fn, self._collate = collate_fn, torch_settings["collate"]
        self.batch_transform = batch_transform
        self.pin_memory, self._pin = bool(pin_memory), torch_settings["pin"]
        self.timeout, self.generator, self.prefetch_factor = float(timeout), generator, prefetch_factor
        self.persistent_workers, self.worker_init_fn = persistent_workers, worker_init_fn
        self.multiprocessing_context, self.batch_sampler = multiprocessing_context, None
        self._pinned = None  # (pointer, cudart) of the ring registered with CUDA
        self._pending = collections.deque()  # (event, raw batch): slots released once the GPU copies are done
        self.dataset = root if _compat.is_dataset(root) else None
        if self.dataset is None and not isinstance(root, (str, bytes, os.PathLike)):
            raise TypeError(f"stoke.DataLoader takes a path or a dataset with samples, a list of (path, label) (a "
                            f"torchvision ImageFolder or DatasetFolder), not a {type(root).__name__}: Stoke reads the "
                            "files itself. Use torch.utils.data.DataLoader for this dataset.")
        given = {k: v for k, v in (("resize", resize), ("crop", crop), ("output", output), ("transform", transform),
                                   ("mean", mean), ("std", std)) if v is not None}
        self._chw = False
        translated = None
        if self.dataset is not None and getattr(self.dataset, "transform", None) is not None:
            if given:
                raise ValueError(f"{', '.join(given)} given, and the dataset has a transform that already decides "
                                 f"{'it' if len(given) == 1 else 'them'}: pass one or the other")
            translated = _compat.translate_transform(self.dataset.transform)
            transform, resize, crop = translated["transform"], translated["resize"], translated["crop"]
            output, mean, std, self._chw = translated["output"], translated["mean"], translated["std"], translated["chw"]
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
        if (mean is None) != (std is None) or (mean is not None and (len(mean) != 3 or len(std) != 3)):
            raise ValueError("mean and std go together, three numbers each (RGB, on a 0-1 scale)")
        if mean is not None and output != "float32":
            raise ValueError("mean and std normalise output='float32'; the uint8 output is not normalised")
        if batch_size < 1 or slots < 1:
            raise ValueError("batch_size and slots must be positive")
        if not 0 <= int(worker_nice) <= 19:
            raise ValueError(f"worker_nice must be 0 to 19, not {worker_nice}")
        self.worker_nice = int(worker_nice)
        self.shard_tail = shard_tail
        default_rank, default_world = _default_rank_and_world()
        self.rank = default_rank if rank is None else int(rank)
        self.world_size = default_world if world_size is None else int(world_size)
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank must be in [0, world_size): rank {self.rank} of {self.world_size}")
        self._list_path = None
        if self.dataset is not None:
            samples = _compat.dataset_samples(self.dataset)
            fd, self._list_path = tempfile.mkstemp(prefix=f"stoke-py-list-{os.getpid()}-", suffix=".txt")
            os.close(fd)
            _compat.write_list_file(samples, self._list_path)
            self.root = self._list_path
        else:
            self.root = os.fspath(root)
        self.batch_size, self.shuffle, self.seed, self.drop_last = int(batch_size), bool(shuffle), int(seed), bool(drop_last)
        if num_workers is None:
            self.num_workers = "auto"
        else:
            self.num_workers = "auto" if num_workers == "auto" else int(num_workers)
        self._tuning = []  # the auto workers' changes read so far (see tuning())
        self.resize, self.crop, self.output, self.on_error = resize, crop, output, on_error
        self.mean = None if mean is None else [float(v) for v in mean]
        self.std = None if std is None else [float(v) for v in std]
        self.with_indices, self.transform, self.dct_scaling, self.slots = with_indices, transform, dct_scaling, slots
        self.scale = translated and translated["scale"]
        self.ratio = translated and translated["ratio"]
        self.flip = translated and translated["flip"]
        self.shuffle_window = None if shuffle_window is None else int(shuffle_window)
        if self.shuffle_window is not None and self.shuffle_window < 0:
            raise ValueError(f"shuffle_window must not be negative: {shuffle_window}")
        self.shard_cache, self.shard_cache_dir = shard_cache, shard_cache_dir
        self._start_timeout = start_timeout
        self._stoke = _home.stoke_command()  # the bundled runtime's java ... -jar stoke.jar, else ./stoke
        self._proc = None
        self._ring = None
        self._stderr = collections.deque(maxlen=STDERR_LINES)
        self._closed = False
        self._epoch = 0
        self._batch = 0
        self._producer_next = None  # (epoch, batch) the ring hands out next
        self.samples = None
        try:
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
        """Resumes at the state's position: the rest of that epoch comes in the uninterrupted run's order."""
        mine = self.state_dict()
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
                reason = SAMPLE_STATUS.get(int(raw.status[position]), f"status {int(raw.status[position])}")
                skipped.append(SkippedSample(int(position), index, self.samples[index][0], reason))
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
        name = f"stoke-py-{os.getpid()}-{secrets.token_hex(6)}"
        self._ring_path = f"/dev/shm/{name}"
        self._index_path = f"/dev/shm/{name}.index.json"
        self._tuning_path = f"/dev/shm/{name}.tuning.jsonl"
        self._tuning_read = 0
        self._stderr.clear()
        self._proc = subprocess.Popen(self._command(epoch, batch, self._ring_path, self._index_path),
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True, errors="replace")
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
            except (FileNotFoundError, RingFormatError, ProducerGoneError):
                pass  # not created yet, or still being written
            if time.monotonic() > deadline:
                self._stop_producer()
                raise ProducerError(f"the producer's ring was not ready within {self._start_timeout:.0f} s")
            time.sleep(0.01)
        if self.samples is None:
            self.samples = self._read_index()
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
            proc.terminate()  # the producer's shutdown hook removes its files
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.num_workers == "auto" and getattr(self, "_tuning_path", None):
            self.tuning()  # keep this producer's changes past its file
        for path in (getattr(self, "_ring_path", None), getattr(self, "_index_path", None),
                     getattr(self, "_tuning_path", None)):
            if path:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        self._producer_next = None

    # ---- auto workers ----

    def tuning(self):
        """With ``num_workers="auto"``: every change the producer made to its active decoding threads,
        oldest first, as dicts ``{"at_s", "from_workers", "to_workers", "reason"}`` (``at_s`` counts
        from that producer's start; a resumed or restarted producer starts again). Empty otherwise."""
        import json

        path = getattr(self, "_tuning_path", None)
        if self.num_workers == "auto" and path:
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
        path, self._list_path = getattr(self, "_list_path", None), None
        if path:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

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
