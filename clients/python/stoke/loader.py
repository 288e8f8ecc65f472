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

This module is the loader's position, iteration and batches; its arguments are checked and
translated in ``_settings``, the producer process is ``_producer``, and ``pin_memory`` is ``_pinning``.
"""

import atexit
import collections
import collections.abc
import gc
import os
import sys
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

import numpy as np

from . import _device_slots, _resume, _settings
from ._given import GivenOrder
from . import _torch_compat as _compat
from ._closing import Closeable
from ._pinning import Pinning
from ._producer import Producer, ProducerError, anonymous_file
from ._settings import START_TIMEOUT, StokeWarning, default_workers
from ._urls import redact as _redact
from .ring import RingBatch
from .ring import SAMPLE_FORMAT_NOT_DECODED, SAMPLE_STATUS, ProducerGoneError, image_format

__all__ = ["DataLoader", "SampleError", "ProducerError", "SkippedSample", "Batch", "StokeWarning"]

class SampleError(RuntimeError):
    """A batch held files that did not decode, under ``on_error="fail"``.

    The batch's slot is already given back, and iteration can go on with the next batch (call
    ``next()`` on the same iterator again).

    Args:
        epoch (int): the batch's epoch.
        batch_index (int): the batch's index in its epoch.
        samples (list of SkippedSample): the samples that did not decode, kept as ``samples``.

    Example::

        it = iter(loader)
        while True:
            try:
                images, labels = next(it)
            except stoke.SampleError as e:
                print(e.samples)
                continue
            except StopIteration:
                break
    """

    def __init__(self, epoch: int, batch_index: int, samples: List["SkippedSample"]) -> None:
        self.epoch, self.batch_index, self.samples = epoch, batch_index, samples
        lines = "\n".join(f"  {s.path}: {s.reason}" for s in samples)
        super().__init__(f"batch {batch_index} of epoch {epoch}: {len(samples)} file(s) did not decode:\n{lines}")


SkippedSample = collections.namedtuple("SkippedSample", ["position", "index", "path", "reason"])
SkippedSample.__doc__ = ("A sample that did not decode: its position in the batch, its dataset index, its file, "
                         "and why.")


class Batch(tuple):
    """What the loader yields: ``(images, labels)``, or ``(images, labels, indices)``.

    A tuple, so ``images, labels = batch`` works, with the batch's ``epoch``, ``batch_index``,
    ``skipped`` (a list of :class:`SkippedSample`: under ``on_error="skip"`` the samples that did
    not decode; their images are zeros) and ``padded`` as attributes. ``padded`` is a bool tensor
    ``[n]``: True for the samples repeated so that every rank gets as many samples (with
    ``world_size > 1`` and ``partition_tail="pad"``, PyTorch's ``DistributedSampler`` padding), always
    the batch's last ones; another rank gets the same sample this epoch.

    Code that rebuilds a tuple's type from its items alone (``type(batch)(items)``: Lightning's
    ``apply_to_collection``, ``default_collate``-style code) gets a Batch whose ``epoch``,
    ``batch_index``, ``skipped`` and ``padded`` are None: the items are all it was given. These keep
    them: :meth:`to` (Lightning's ``move_data_to_device``, and so every ``Trainer``'s batch
    transfer, calls it, as it calls a tensor's), which moves ``padded`` with the items;
    ``torch.utils._pytree`` (``tree_map``, ``tree_flatten``/``tree_unflatten``), where a Batch is a
    node whose leaves are its items and whose context carries the rest; ``copy`` and ``pickle``.

    Args:
        items: the batch's tensors, ``(images, labels)`` or ``(images, labels, indices)``.
        epoch (int, optional): the batch's epoch.
        batch_index (int, optional): its index in its epoch, on this rank.
        skipped (list of SkippedSample, optional): the samples that did not decode.
        padded (Tensor, optional): bool ``[n]``, which samples are padding.

    Example::

        # An evaluation that must count each sample once leaves the padding out.
        for batch in loader:
            pred = model(batch[0]).argmax(1)
            correct += (pred == batch[1])[~batch.padded].sum()
    """

    def __new__(cls, items: Sequence[Any] = (), epoch: Optional[int] = None, batch_index: Optional[int] = None,
                skipped: Optional[List[SkippedSample]] = None, padded: Any = None) -> "Batch":
        self = super().__new__(cls, items)
        self.epoch, self.batch_index, self.skipped, self.padded = epoch, batch_index, skipped, padded
        return self

    def to(self, *args: Any, **kwargs: Any) -> "Batch":
        """The batch with each tensor's ``.to(*args, **kwargs)``, as ``tensor.to``, the rest carried over.

        Returns:
            A Batch of the moved items, with this one's ``epoch``, ``batch_index``, ``skipped`` and
            ``padded``, which goes to the items' device and stays bool; the items are this one's
            where ``.to`` returns them unchanged.
        """
        moved = tuple(item.to(*args, **kwargs) if callable(getattr(item, "to", None)) else item for item in self)
        padded = self.padded
        device = next((item.device for item in moved if hasattr(item, "device")), None)
        if padded is not None and device is not None:
            padded = padded.to(device=device, non_blocking=bool(kwargs.get("non_blocking", False)))
        return type(self)(moved, self.epoch, self.batch_index, self.skipped, padded)


class _BatchExtras:
    """A :class:`Batch`'s attributes as its pytree context: they ride along with the structure and
    are no part of it, so every Batch of as many items has the same tree spec (``tree_map`` over two
    batches works, and gives the first one's)."""

    __slots__ = ("epoch", "batch_index", "skipped", "padded")

    def __init__(self, batch: Batch) -> None:
        self.epoch, self.batch_index, self.skipped, self.padded = (batch.epoch, batch.batch_index, batch.skipped,
                                                                   batch.padded)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BatchExtras)

    def __hash__(self) -> int:
        return hash(_BatchExtras)

    def __repr__(self) -> str:
        return f"Batch(epoch={self.epoch}, batch_index={self.batch_index})"


def _flatten_batch(batch: Batch) -> Tuple[List[Any], Any]:
    return list(batch), (len(batch), _BatchExtras(batch))


def _unflatten_batch(items: Any, context: Any) -> Batch:
    extras = context[1]
    return Batch(tuple(items), extras.epoch, extras.batch_index, extras.skipped, extras.padded)


def _flatten_batch_with_keys(batch: Batch) -> Tuple[List[Any], Any]:
    from torch.utils._pytree import SequenceKey
    return [(SequenceKey(i), item) for i, item in enumerate(batch)], (len(batch), _BatchExtras(batch))


def _register_batch_with_pytree() -> None:
    """Makes a :class:`Batch` a node of ``torch.utils._pytree`` (once per process; torch is imported by
    then): unregistered, a tuple subclass is a leaf there, and ``tree_map(fn, batch)`` calls ``fn(batch)``."""
    global _batch_in_pytree
    if _batch_in_pytree:
        return
    _batch_in_pytree = True
    from torch.utils import _pytree
    register = getattr(_pytree, "register_pytree_node", None)
    if register is not None:
        register(Batch, _flatten_batch, _unflatten_batch, serialized_type_name="stoke.loader.Batch",
                 flatten_with_keys_fn=_flatten_batch_with_keys)
    else:  # torch before 2.2 names it privately and takes no keywords
        _pytree._register_pytree_node(Batch, _flatten_batch, _unflatten_batch)


_batch_in_pytree = False


def _called_by_lightning() -> bool:
    """Whether Lightning (``lightning`` or ``pytorch_lightning``) is among the callers: it restores a
    loader's state from a checkpoint and then counts the epoch's batches itself."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").split(".")[0] in ("lightning", "pytorch_lightning"):
            return True
        frame = frame.f_back
    return False


class _SlotLease:
    """Owns one batch's pixels: numpy and torch views of them keep this object alive, and when the
    last one goes, its finaliser gives the slot back to the producer.

    Exposes the pixels through ``__array_interface__``, so ``np.asarray(lease)`` is an array whose
    base is the lease; it holds the array that views the ring's mmap, which keeps the mapping.
    """

    __slots__ = ("_view", "__array_interface__", "__weakref__")

    def __init__(self, view: np.ndarray) -> None:
        self._view = view
        self.__array_interface__ = view.__array_interface__


def _with_format(reason: str, path: str) -> str:
    """``reason`` naming the format of the file at ``path`` ("format not decoded: TIFF"), where it can be read."""
    try:
        with open(path, "rb") as f:
            found = image_format(f.read(12))
    except OSError:  # a tar shard's sample, or a file gone since
        found = None
    return f"{reason}: {found}" if found else reason


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


class _UnlistedSamples(collections.abc.Sequence):
    """The samples of shards opened from their ``index.json``: how many there are is known, their
    names and labels are not read up front (each shard's are read when it is fetched for its first
    batch; listing them here would fetch every shard before the first batch)."""

    def __init__(self, n: int, root: str) -> None:
        self._n, self._root = n, root

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        raise LookupError(f"{_redact(self._root)} was opened from its index.json, which holds each shard's sample count, "
                          "not each sample's name and label; batches carry their labels and dataset indices "
                          "(batch.labels, batch.indices)")


def _samples_of(sample_list: Tuple[bool, Any], root: str) -> Sequence[Tuple[str, int]]:
    """The samples of a producer's sample list (``_producer.read_sample_list``): listed, or only counted."""
    listed, samples = sample_list
    return samples if listed else _UnlistedSamples(samples, root)


class _PathDataset:
    """``loader.dataset`` for a loader over a path: its size, samples and classes, as torchvision's
    ``ImageFolder`` has them (``classes``/``class_to_idx`` are None except for an ImageFolder tree).
    The images themselves come only from the loader."""

    def __init__(self, root: str, samples: Sequence[Tuple[str, int]]) -> None:
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

    def __len__(self) -> int:
        return len(self.samples)

    def __repr__(self) -> str:
        return f"stoke dataset {_redact(self.root)!r}: {len(self)} samples"


def _close_at_exit(ref: "weakref.ref[DataLoader]") -> None:
    loader = ref()
    if loader is not None:
        loader.close()


class DataLoader(Closeable):
    r"""Batches of a dataset of images decoded by Stoke, with PyTorch ``DataLoader``'s signature.

    Creating one starts Stoke's producer, a Java process that decodes with its own threads into a
    ring of batch slots in anonymous shared memory; the batches are torch tensors viewing it, without
    a copy. PyTorch's parameters come first, in PyTorch's order and with its defaults; Stoke's own
    are keyword-only after them. Every argument is checked before anything is created, and reads
    back as the loader's attribute (``loader.batch_size``, ``loader.partition_tail``), from its one
    settings object. Stoke's options are declared once, in the options table that ``stoke serve``'s
    flags come from too (docs/options.md).

    Yields ``(images, labels)`` (``(images, labels, indices)`` with ``with_indices=True``) as a
    :class:`Batch`: ``images`` uint8 ``[n, crop, crop, 3]`` (``output="uint8"``; ``[n, 3, crop,
    crop]`` when a dataset's transform ends in ``PILToTensor()``) or float32 ``[n, 3, crop, crop]``
    normalised (``output="float32"``), viewing shared memory; ``labels`` and ``indices`` int64
    ``[n]``. Indices are positions in dataset order: torchvision's ``ImageFolder(root).samples``
    order, or for shards shard order then member order. ``loader.samples[i]`` is ``(name, label)``
    and ``loader.name(i)`` the name: the file's path, or ``<shard>/<key>`` for a sample in a tar shard.

    Each ``for`` over the loader delivers one epoch: the rest of it when an earlier ``for`` stopped
    early (no batch is lost or repeated), then the next epoch; one that stopped after the epoch's
    last batch (Lightning stops at ``len(loader)``) left nothing, so the next is the next epoch.
    ``set_epoch(e)`` moves to epoch ``e``. ``state_dict()``/``load_state_dict()`` resume mid-epoch
    exactly once (torchdata's ``StatefulDataLoader`` convention), on this world or on one with
    other ranks and batch size.

    Args:
        dataset (str, os.PathLike or Dataset): a torchvision ``ImageFolder``/``DatasetFolder`` (or any
            object with ``samples``, ``[(path, label), ...]``), whose ``transform`` (v1 or v2) is
            translated exactly into Stoke's settings or refused here; or a path: an ImageFolder tree
            (``root/<class>/<image>.jpg``), a list file of ``<path> <label>`` lines, or WebDataset tar
            shards (one ``.tar``, a brace pattern ``"train-{000000..000127}.tar"``, a folder of
            ``.tar`` files, or the same at ``s3://`` or ``http(s)://`` URLs); or a Hugging Face
            ``datasets.Dataset`` with an ``Image`` column, read from its own Arrow files with the rows
            its ``select``/``shuffle``/``filter`` picked, its torchvision transform passed as
            ``transform=`` (docs/integrations/hf-datasets.md).
        batch_size (int, optional): samples per batch (default: ``1``, as PyTorch). ``None``,
            PyTorch's unbatched mode, is refused: Stoke's producer always batches.
        shuffle (bool, optional): a new permutation each epoch, drawn from ``seed`` and the epoch
            (default: ``False``).
        sampler (Sampler, optional): ``RandomSampler`` (without replacement), ``SequentialSampler``
            or ``DistributedSampler``, whose order Stoke's producer draws itself (its ``set_epoch`` is
            read at each ``iter()``); any other sampler (``WeightedRandomSampler``,
            ``SubsetRandomSampler``, torchvision's ``RASampler``, your own) gives its own order: its
            indices are drawn at each ``iter()``, as torch does, in batches of ``batch_size``, and
            handed to the producer (a per-rank sampler's order is not partitioned again).
            ``set_epoch`` is forwarded to it; ``state_dict()`` saves its epoch's order and state.
        batch_sampler (Sampler, optional): batches of indices, drawn at each ``iter()`` as the
            sampler's are; mutually exclusive with ``batch_size``, ``shuffle``, ``sampler`` and
            ``drop_last``, as with torch. A ring slot holds its ``batch_size`` (or its largest batch).
        num_workers (int or "auto", optional): Stoke's decoding threads, in its producer process.
            ``0`` (PyTorch's default, where it means no worker processes) and ``"auto"`` let Stoke
            choose while it runs: as many as your loop needs, at most the cores divided by
            ``LOCAL_WORLD_SIZE`` (``loader.auto_workers_log()`` says each change and why); ``N`` runs exactly
            ``N``. Nothing is ever decoded in this process.
        collate_fn (Callable, optional): PyTorch's meaning: a list of ``(image, label)`` in, the batch
            out (a copy it makes); ``default_collate`` costs nothing. ``batch_transform`` does the
            same on the whole batch without the copy.
        pin_memory (bool, optional): registers the ring with CUDA once (page-locked), so that
            ``.to(device, non_blocking=True)`` of a batch is an asynchronous copy; a slot goes back
            only after the GPU work queued before its batch was freed. No effect without CUDA
            (default: ``False``).
        drop_last (bool, optional): drop each rank's last partial batch, as PyTorch (default: ``False``).
        timeout (float, optional): seconds to wait for a batch before ``RuntimeError`` (default:
            ``0``, forever). At half of it the producer prints, once, what each of its threads is
            doing (its stall report: lines ``stoke serve: stall: ...``); without a timeout, at 60 s.
        worker_init_fn (Callable, optional): ignored, said once: no Python runs in Stoke's threads.
        multiprocessing_context (optional): ignored, said once: the producer is one process.
        generator (torch.Generator, optional): its ``initial_seed()`` is the seed.
        prefetch_factor (int, optional): ``slots = max(2, num_workers * prefetch_factor)``.
        persistent_workers (bool, optional): the producer always persists across epochs.
        pin_memory_device (str, optional): ``""`` or a CUDA device (``"cuda"``, ``"cuda:N"``); any
            other device is refused (Stoke pins for CUDA only).
        in_order (bool, optional): batches always come in order, which ``in_order=False`` allows.
        batch_transform (Callable, optional): Stoke's own, as the ones below: ``fn(images, labels)``
            applied to each batch, without a copy (e.g. mixup on the device).
        seed (int, optional): the order's and every random choice's seed (default: the sampler's or
            the generator's; else, as torch without a generator, drawn from torch's global
            generator, so ``torch.manual_seed(s)`` repeats a run; ``0`` with ``world_size > 1``, as
            ``DistributedSampler``'s, since ranks must share one permutation).
        resize (int, optional): for a path, the eval transform's ``Resize(resize)`` (default: ``256``).
        crop (int, optional): for a path, ``CenterCrop(crop)``, or ``RandomResizedCrop(crop)`` with
            ``transform="train"`` (default: ``224``).
        output (str, optional): ``"uint8"`` (the default) or ``"float32"``, ``(x / 255 - mean) / std``.
        on_error (str, optional): ``"fail"`` (the default): a batch with files that did not decode
            raises :class:`SampleError` naming them; ``"skip"``: it comes with them zeroed and
            listed in ``batch.skipped``.
        with_indices (bool, optional): yield each sample's dataset index too (default: ``False``).
        rank (int, optional): this process's partition of each epoch; default ``torch.distributed``'s when it is
            initialised, else ``RANK`` (torchrun), else ``0``.
        world_size (int, optional): the partitions; default as ``rank``'s, from ``WORLD_SIZE``, else
            ``1``. Every rank gets as many samples, as with ``DistributedSampler``.
        transform (str or Callable, optional): for a path, ``"eval"`` (the default: ``Resize`` +
            ``CenterCrop``), ``"train"`` (``RandomResizedCrop(crop, scale, ratio)`` +
            ``RandomHorizontalFlip(flip)``) or ``"squash"`` (``Resize((resize, resize))`` +
            ``CenterCrop(crop)``, the aspect ratio not kept); or a torchvision transform, translated as
            the same transform on a torchvision ``ImageFolder`` of the path is (with its pixels), or
            refused naming what cannot be.
        scale (sequence of 2 floats, optional): with ``transform="train"``, the range of the crop's area
            as a fraction of the image's (default: ``(0.08, 1.0)``, torchvision's).
        ratio (sequence of 2 floats, optional): with ``transform="train"``, the range of the crop's
            width / height, drawn log-uniformly (default: ``(3/4, 4/3)``, torchvision's).
        flip (float, optional): with ``transform="train"``, the probability of a horizontal flip, 0 to
            1 (default: ``0.5``).
        augment (str, optional): with ``transform="train"``, torchvision's auto-augment policy after
            the flip, in Stoke's spelling: ``"ta_wide:31"`` (``TrivialAugmentWide``),
            ``"ra:2:9:31"`` (``RandAugment``), ``"aa:imagenet"`` (``AutoAugment``), then
            ``",interpolation=bilinear"``, ``",fill=R:G:B"``, ``",v2"``; or
            ``"jitter:0.6/1.4:0.6/1.4:0.6/1.4:-"`` (``ColorJitter``'s four ranges, ``-`` for off), then
            ``",p=0.8"`` (``RandomApply`` around it) and ``",gray=0.2"`` (``RandomGrayscale`` after it)
            (default: none; a dataset's transform that holds one is translated into it).
        interpolation (str, optional): the resize's filter, for both transforms: ``"bilinear"`` (the
            default), ``"bicubic"`` or ``"nearest"``, each exactly as PIL computes torchvision's
            ``InterpolationMode`` of that name on a PIL image (set from a translated transform).
        erase (float, optional): with ``output="float32"`` (or a ``uint8:`` ``erase_value``),
            torchvision's ``RandomErasing(p=erase)`` on each sample after the normalisation, drawn per sample, epoch and ``seed`` (default:
            ``0``, none; set from a translated transform's ``RandomErasing``).
        erase_scale (sequence of 2 floats, optional): the erased area's range as a fraction of the
            sample's (default: ``(0.02, 0.33)``, torchvision's).
        erase_ratio (sequence of 2 floats, optional): the erased box's height / width range, drawn
            log-uniformly (default: ``(0.3, 3.3)``).
        erase_value (str, optional): what the box is set to, in the normalised output's units:
            ``"0"`` (the default), ``"r,g,b"`` or ``"random"`` (standard normal values); or
            ``"uint8:v"`` / ``"uint8:r,g,b"`` (0 to 255, cast as torch casts) to erase the uint8
            image before its conversion to float32, as ``RandomErasing`` after ``PILToTensor()``
            does (then with either output).
        dct_scaling (str, optional): ``"none"``, ``"pow2"`` or ``"all"``: let libjpeg-turbo decode
            at a smaller scale where the resize allows (default: ``"pow2"`` for a path, ``"none"``
            for a translated transform).
        decode (str, optional): where the JPEGs are decoded: ``"cpu"`` (the default), Stoke's CPU
            workers; ``"gpu"`` (experimental), nvJPEG on this process's current CUDA device
            (``torch.cuda.current_device()``), resized, cropped and normalised there; ``images`` is
            then a CUDA tensor viewing the producer's device slot, opened by CUDA IPC, with no copy
            back to the host; ``"auto"`` (experimental), as ``"gpu"`` with the workers decoding
            whole batches or a share of the JPEGs, balanced live; ``augment=`` and ``erase=`` run
            on the producer's CPU after the GPU's resize; a ``sampler`` or ``batch_sampler`` of
            yours gives its order as it does to the workers. Not yet with
            ``restart_cache_dir=``: where it cannot (that, no libnvjpeg), the producer says
            why in one line, the CPU decodes and each batch is copied to the device (as where CUDA
            refuses the IPC, said once). Without CUDA in torch, the batches are CPU tensors.
            On an H200, a training run fed by ``"gpu"`` stopped getting batches in 4 of 6
            tries, not yet explained: train with ``"cpu"`` (docs/gpu.md).
        decode_cpu_batches (int, optional): with ``decode="gpu"`` or ``"auto"``, device buffers
            beside those in flight for batches the workers still decode a part of: the GPU's
            batches whose images nvJPEG left are still decoding, and under ``"auto"`` whole batches
            the workers decode, at most that many of those at once; ``0``: no whole batches
            (default: ``3``).
        decode_gpu_threads (int, optional): with ``decode="gpu"`` or ``"auto"``, threads that hand
            nvJPEG's batched decoder each batch, that many parts of it at once, each with a decoder
            state and a CUDA stream of its own; a part takes at least 16 images. Not yet measured
            on a GPU (default: ``1``).
        slots (int, optional): the ring's size in batches: decoded ahead plus held by your code
            (default: ``4``).
        shuffle_window (int, optional): over shards, shuffle within windows of that many shards
            (default for remote shards, whose cache holds a window: ``8``).
        shard_cache_size (str, optional): the bound of the shard cache, the cache of whole remote
            shards (default: ``"4G"``; was ``shard_cache``, deprecated).
        shard_cache_dir (str or os.PathLike, optional): where that cache lies.
        restart_cache_dir (str or os.PathLike, optional): the restart cache (was ``cache_dir``,
            deprecated): a folder where Stoke keeps a lossless
            restart-marker copy of each original JPEG of the dataset (a folder's or list's files,
            or the members of tar shards or Parquet row groups, local or remote; the same pixels;
            made from the images read by one filler thread per worker, on idle CPU only, while the
            workers wait) and reads it from then on: from
            the next epoch, or the next run, the training crop decodes only its part of every JPEG.
            Shared safely between processes; a changed file or shard is copied again (default:
            none). The folder is yours alone: Stoke makes it ``0700`` and its files ``0600``, and
            refuses one that another user owns or that others can write, naming its owner and mode
            (see ``cache_shared_with``).
        restart_cache_size (str, optional): the most bytes ``restart_cache_dir`` holds (``"64G"``, the
            default), counted over every process filling it; past it the rest is read from the
            originals, said once (was ``cache_size``, deprecated).
        cache_shared_with (str, optional): the name of a group with which ``restart_cache_dir`` and
            ``shard_cache_dir`` are shared on purpose (``--cache-shared-with``): a folder Stoke makes
            is the group's (mode ``2770``) and its files ``0640``, and another member's folder is used
            where it is the group's and no one else can write it (default: none, each folder is
            yours alone).
        image_column (str, optional): Parquet: the column holding each image, binary or an image
            struct (default: the first ``struct<bytes, path>``, the Hub's ``Image`` feature, else the
            one binary column).
        label_column (str, optional): Parquet: the integer column of labels (default: ``label``
            when there is one, else every label is -1).
        key_column (str, optional): Parquet: the string or integer column naming each sample
            (default: its row in its file).
        table_version (int, optional): a Delta Lake table (a folder holding ``_delta_log/``) or an
            Apache Iceberg table (a folder holding ``metadata/*.metadata.json``, or one of those
            files), local, at ``s3://`` or ``https://``: read its snapshot at this version, Delta's
            log version or Iceberg's snapshot id (``--table-version``). Default: the latest at the
            first epoch's start, which ``state_dict()`` names, so that a resumed run reads the same
            rows however the table was written to meanwhile.
        as_of (str, optional): a Delta Lake or Iceberg table: read the snapshot committed at or before this
            ISO-8601 time, ``"2026-11-29T06:00:00Z"`` or a day, ``"2026-11-29"`` (``--as-of``).
        worker_nice (int, optional): the decoding threads' nice value, 0 to 19 (default: ``19``,
            where Java's ``stoke serve --worker-nice`` defaults to ``0``): your loop's threads run
            first, and the workers decode on the CPU they leave.
        partition_tail (str, optional): ``"pad"`` (the default) gives each rank ``ceil(N/world_size)``
            samples, repeating samples from the start of the epoch's permutation (marked by
            ``batch.padded``); ``"drop"`` gives each ``floor(N/world_size)`` (was ``shard_tail``,
            deprecated).
        mean (sequence of 3 floats, optional): with ``output="float32"``, the normalisation's mean
            on a 0-1 scale (default: ImageNet's).
        std (sequence of 3 floats, optional): its standard deviation (default: ImageNet's).
        start_timeout (float, optional): seconds to wait for the producer's ring (the first run may
            build Stoke; default: ``900``).
        **deprecated: the old spellings of renamed keywords, kept one release, each said once:
            ``shard_tail`` (``partition_tail``), ``cache_dir`` (``restart_cache_dir``), ``cache_size``
            (``restart_cache_size``), ``shard_cache`` (``shard_cache_size``). Any other keyword is a
            TypeError.

    Raises:
        ValueError: an argument Stoke refuses or cannot do exactly, named in the message (raised
            before any file or process is made).
        TypeError: ``dataset`` is neither a path nor a dataset with ``samples``, or an argument has
            the wrong type (named).
        StokeNotFoundError: no Java side to run the producer with.
        ProducerError: the producer failed to start; the message ends with its last stderr lines.

    Example::

        >>> loader = stoke.DataLoader("/data/imagenet/train", batch_size=256, shuffle=True)
        >>> for epoch in range(epochs):
        ...     loader.set_epoch(epoch)
        ...     for images, labels in loader:   # uint8 [256, 224, 224, 3] and int64 [256]
        ...         images = images.to("cuda", non_blocking=True).permute(0, 3, 1, 2).float()
        >>> loader.close()
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
        transform: Optional[Union[str, Callable[[Any], Any]]] = None,
        scale: Optional[Sequence[float]] = None,
        ratio: Optional[Sequence[float]] = None,
        flip: Optional[float] = None,
        augment: Optional[str] = None,
        interpolation: Optional[str] = None,
        erase: Optional[float] = None,
        erase_scale: Optional[Sequence[float]] = None,
        erase_ratio: Optional[Sequence[float]] = None,
        erase_value: Optional[str] = None,
        dct_scaling: Optional[str] = None,
        decode: Optional[str] = None,
        decode_cpu_batches: Optional[int] = None,
        decode_gpu_threads: Optional[int] = None,
        slots: Optional[int] = None,
        shuffle_window: Optional[int] = None,
        shard_cache_size: Optional[str] = None,
        shard_cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
        restart_cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
        restart_cache_size: Optional[str] = None,
        cache_shared_with: Optional[str] = None,
        image_column: Optional[str] = None,
        label_column: Optional[str] = None,
        key_column: Optional[str] = None,
        table_version: Optional[int] = None,
        as_of: Optional[str] = None,
        worker_nice: int = 19,
        partition_tail: Optional[str] = None,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        start_timeout: float = START_TIMEOUT,
        **deprecated: Any,
    ) -> None:
        # Every keyword by its name, as given (the table's keywords are checked from their entries).
        keywords = {k: v for k, v in locals().items() if k not in ("self", "dataset", "deprecated", "__class__")}
        # Closed until every argument is checked: close() (from __del__) then has nothing to undo.
        self._closed = True
        # The process that owns the producer, its ring and its batches; a forked child holds a copy
        # of this object, which must never act for it (see _check_process).
        self._pid = os.getpid()
        self._producer: Optional[Producer] = None
        self._list_fd: Optional[int] = None
        # The loader's one settings object: its attributes read through (see __getattr__).
        self._settings = _settings.resolve(dataset, **keywords, **deprecated)
        self._pinning = Pinning()
        self._orphans_seen: Set[int] = set()  # held batches with no view left at the last look (_release_orphans)
        # decode="gpu"/"auto" with CUDA here: the producer's device slots, opened at its start (None
        # where it decodes on the CPU: see _device_slots).
        self._device_slots: Optional[_device_slots.DeviceSlots] = None
        self._device_slots_refused = False  # CUDA refused the IPC: producers copy back into the ring
        self._copy_to_device: Optional[int] = None  # the CPU decodes after all: host batches copied here
        self._auto_workers_past: List[Dict[str, Any]] = []  # the auto workers' changes in producers stopped since
        self._restart_cache_past: List[Dict[str, Any]] = []  # the restart cache's epochs in producers stopped since
        self._epoch = 0
        self._batch = 0
        # The epoch resumed from another world's states and what that world (and any before it)
        # took of it: that one epoch is the remainder, split over this world (see _resume).
        self._resumed_epoch: Optional[int] = None
        self._cuts: List[Dict[str, Any]] = []
        self._producer_cuts: List[Dict[str, Any]] = []
        self._producer_next: Optional[Tuple[int, int]] = None  # (epoch, batch) the ring hands out next
        self._said_ring = False
        self.samples: Optional[Sequence[Tuple[str, int]]] = None
        self._path_dataset: Optional[_PathDataset] = None
        self._sampler: Any = None
        self._dataset_fingerprint: Optional[str] = None
        self._table: Optional[str] = None  # the lakehouse table snapshot read, "TABLE@vN" (see _pin_table)
        self._window_in_effect: Optional[int] = None
        self._given: Optional[GivenOrder] = None  # a sampler's or batch sampler's own order (see _given)
        # Everything checked: from here on close() undoes what is made.
        self._closed = False
        try:
            settings = self._settings
            self.root = settings.path if settings.samples is None else self._write_list(settings.samples)
            if settings.hf is not None and settings.hf.rows is not None:
                self.root = self._write_rows(settings.hf)
            self._start_producer(0, 0)
            if settings.dataset is None:
                self._path_dataset = _PathDataset(self.root, self.samples)
            self._sampler = self._make_sampler()
            if settings.given is not None:
                source = settings.sampler if settings.given == "sampler" else settings.batch_sampler
                self._given = GivenOrder(source, settings.given, self.batch_size, bool(self.drop_last),
                                         len(self.samples))
        except BaseException:
            self.close()
            raise
        self._seen_sampler_epoch = self._sampler_epoch()
        _register_batch_with_pytree()
        atexit.register(_close_at_exit, weakref.ref(self))

    def __getattr__(self, name: str) -> Any:
        # Reached only for what the loader does not hold itself: its arguments, read from its one
        # settings object: PyTorch's keywords as torch's DataLoader keeps them, Stoke's own, and
        # every option of the table by its name, its keyword or its deprecated keyword.
        settings = self.__dict__.get("_settings")
        if settings is not None:
            if name in _settings.KEYWORDS:
                return getattr(settings, name)
            try:
                return settings.option(name)
            except AttributeError:
                pass
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def batch_sampler(self) -> Any:
        """The batch sampler passed, whose batches each epoch is; else None (the producer batches)."""
        return self._settings.batch_sampler

    @property
    def dataset(self) -> Any:
        """The dataset passed, or for a path one that stands for it (``len``, ``samples``, ``classes``)."""
        settings = self._settings
        return settings.dataset if settings.dataset is not None else self._path_dataset

    @property
    def sampler(self) -> Any:
        """The sampler passed, else torch's sampler that stands for Stoke's order (see ``_make_sampler``)."""
        return self._sampler

    def _write_list(self, samples: List[Tuple[str, int]]) -> str:
        """The dataset's list in an anonymous file that the producer reads as /dev/fd/N: nothing on
        disk to leave behind, however this process ends. Returns its path."""
        self._list_fd = anonymous_file("stoke-list")
        _compat.write_list_file(samples, self._list_fd)
        return f"/dev/fd/{self._list_fd}"

    def _write_rows(self, hf: Any) -> str:
        """A datasets.Dataset's rows (its indices mapping or slice) in an anonymous file, as the list file
        is (see _write_list). Returns the producer's dataset argument."""
        self._list_fd = anonymous_file("stoke-rows")
        hf.write_rows(self._list_fd)
        return hf.spec(f"/dev/fd/{self._list_fd}")

    def _make_sampler(self) -> Any:
        """The sampler passed (checked against the dataset's size), else torch's sampler that stands for
        Stoke's order: ``loader.sampler`` as PyTorch's DataLoader has one (its ``set_epoch`` works; its
        own iteration is torch's order, not Stoke's, which the Java producer draws)."""
        from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler
        passed = self._settings.sampler
        if self._settings.given == "batch_sampler":
            return SequentialSampler(self.dataset)  # as torch's DataLoader has one beside a batch_sampler
        if self._settings.given == "sampler":
            return passed  # its own order: its indices are checked as each epoch is drawn
        if passed is not None:
            # Checked before anything was made where the dataset's size was known; a path's only now.
            _settings.check_sampler_size(passed, len(self.samples))
            return passed
        if self.world_size > 1:
            return DistributedSampler(self.dataset, num_replicas=self.world_size, rank=self.rank,
                                      shuffle=self.shuffle, seed=self.seed, drop_last=self.partition_tail == "drop")
        return RandomSampler(self.dataset) if self.shuffle else SequentialSampler(self.dataset)

    # ---- sizes and position ----

    def _epoch_length(self, epoch: int) -> int:
        """Samples of epoch ``epoch`` over all ranks: N, or what earlier worlds left of a resumed one."""
        if epoch == self._resumed_epoch:
            return _resume.left_after(len(self.samples), self._cuts)
        return len(self.samples)

    def _batches_in(self, epoch: int) -> int:
        """Batches of epoch ``epoch`` for this rank, the same on every rank, as Java's Sampler; with a
        sampler's own order, its epoch's (drawn, else as its ``len`` says)."""
        if self._given is not None:
            return self._given.batches(epoch)
        m, w = self._epoch_length(epoch), self.world_size
        part = (m + w - 1) // w if self.partition_tail == "pad" else m // w
        per_epoch = part - part % self.batch_size if self.drop_last else part
        return (per_epoch + self.batch_size - 1) // self.batch_size

    def __len__(self) -> int:
        """Batches of the current epoch for this rank, the same on every rank (``ceil(N/W)`` or
        ``floor(N/W)`` samples); fewer in an epoch resumed from another world's states (what it left)."""
        return self._batches_in(self._epoch)

    def _padding(self, batch_index: int, size: int) -> np.ndarray:
        """Which samples of batch ``batch_index`` (``size`` of them) of the current epoch are padding:
        position p of the rank's epoch is padding when ``rank + p * world_size >= N`` (or the resumed
        epoch's remainder), a suffix of the epoch."""
        if self._given is not None:
            return np.zeros(size, dtype=bool)  # a sampler's own order: its repeats are its own, none Stoke's
        first = batch_index * self.batch_size
        m = self._epoch_length(self._epoch)
        return (self.rank + (np.arange(first, first + size, dtype=np.int64) * self.world_size)) >= m

    def name(self, index: int) -> str:
        """A sample's name.

        Args:
            index: the sample's dataset index (``batch[2]`` with ``with_indices=True``).

        Returns:
            Its file's path, or ``<shard>/<key>`` in a tar shard.

        Raises:
            LookupError: the shards were opened from their ``index.json``, which names no sample.
        """
        return self.samples[index][0]

    def set_epoch(self, epoch: int) -> None:
        """Moves to epoch ``epoch``: the next ``for`` delivers it (from where it stopped, when it is
        the current one), as ``DistributedSampler.set_epoch`` does for torch's loader.

        Args:
            epoch: the epoch, 0 or more.

        Raises:
            ValueError: ``epoch`` is negative.
        """
        if epoch < 0:
            raise ValueError(f"epoch must not be negative: {epoch}")
        if epoch != self._epoch:
            self._epoch, self._batch = int(epoch), 0
            self._resumed_epoch, self._cuts = None, []  # another epoch: a whole one, even the resumed one's number
        if self._given is not None:
            # Forwarded, as the recipe's train_sampler.set_epoch(epoch): the next iter() draws from it.
            self._given.set_epoch(int(epoch))
            self._seen_sampler_epoch = self._given.sampler_epoch()
        elif hasattr(self.sampler, "epoch"):
            self.sampler.epoch = self._seen_sampler_epoch = int(epoch)

    def state_dict(self) -> Dict[str, Any]:
        """Where the loader is, as torchdata's ``StatefulDataLoader`` saves it: what resumes this run on
        this world or on another (other ranks, another batch size).

        Returns:
            A dict of plain values (``json.dump`` takes it), version 2:

            - ``version``: ``2``. Version 1 (no ``version``) named ``_num_yielded`` ``batch`` and had no
              ``epoch_cuts``; every later version reads it.
            - ``epoch``, ``_num_yielded``: after ``_num_yielded`` batches of ``epoch`` (torchdata's name
              and meaning: batches yielded of the epoch).
            - ``given`` (with a sampler or batch sampler that gives its own order): ``kind``,
              ``sampler`` (its class's name), ``order`` (the epoch's ``batch_sizes`` and ``indices``,
              as drawn), ``generator_state``, ``sampler_state`` and ``sampler_epoch`` (what draws the
              next epochs as the uninterrupted run does; said once where nothing can).
            - ``epoch_cuts``: what earlier worlds took of ``epoch`` when it was resumed on this one,
              oldest first, ``[{"world_size": W, "taken": [samples of each rank]}]``; else ``[]``.
            - the settings that fix the order: ``seed``, ``shuffle``, ``dataset_size``, ``dataset`` (a
              fingerprint of the files' names and labels, or of the shards' names and sizes),
              ``transform``, ``shuffle_window`` (the one in effect: 0 for a global shuffle); and this
              world's: ``rank``, ``world_size``, ``batch_size``,
              ``drop_last``, ``shard_tail``.

        Example::

            torch.save({"model": model.state_dict(), "loader": loader.state_dict()}, path)
        """
        state = self._state()
        if self._given is not None:
            state["given"] = self._given.state(self._epoch)
        return state

    def _state(self) -> Dict[str, Any]:
        cuts = self._cuts if self._epoch == self._resumed_epoch else []
        return {"version": _resume.STATE_VERSION, "epoch": self._epoch, "_num_yielded": self._batch,
                "epoch_cuts": [{"world_size": c["world_size"], "taken": list(c["taken"])} for c in cuts],
                "seed": self.seed, "shuffle": self.shuffle, "batch_size": self.batch_size,
                "drop_last": bool(self.drop_last), "rank": self.rank, "world_size": self.world_size,
                "dataset_size": len(self.samples), "dataset": self._dataset_fingerprint, "transform": self.transform,
                "shuffle_window": self._window_in_effect, "shard_tail": self.partition_tail,
                **({"table": self._table} if self._table is not None else {})}

    def load_state_dict(self, state: Union[Dict[str, Any], Sequence[Dict[str, Any]]]) -> None:
        """Resumes from saved states, on this loader's world, which may differ from the saved one.

        On the same world and batch size, the rest of the saved epoch comes in the uninterrupted run's
        order. On another (more or fewer ranks, another ``batch_size``, ``drop_last`` or
        ``shard_tail``), the samples the saved ranks had not taken are split over this world as that
        epoch's remainder: every rank gets as many batches, padded (marked in ``batch.padded``) or
        dropped as the settings say, and the next epoch is an ordinary one of this world. Each new rank
        calls this with the same state(s); its rank and world size are its own (from
        ``torch.distributed`` or the environment, as at construction).

        Ranks that stopped at different steps (a crash, not a synchronised checkpoint): pass every
        rank's state, as a list, and nothing is lost or repeated; or pass the state of the rank with the
        fewest batches, and the samples the others took past it come again. A single state is taken as
        every rank's. What was taken, what is left and what repeats is said once on stderr.

        A seed this loader drew itself (none given) gives way to the state's, as torchdata's
        ``StatefulDataLoader`` restores its sampler's generator; a seed given must match.

        Args:
            state: what :meth:`state_dict` returned on any rank of the saved world (version 1 or 2), or
                a list of every rank's.

        Raises:
            ValueError: in one sentence naming what differs: the states fix another order (``seed``,
                ``shuffle``, ``dataset_size``, ``dataset``, ``transform``, ``shuffle_window``), come from different
                runs, do not cover the saved world, span two epochs, or are of a later version.

        Example::

            loader.load_state_dict(torch.load(path)["loader"])
            for images, labels in loader:   # the rest of the saved epoch
                ...
        """
        states = [state] if isinstance(state, dict) else list(state)
        if not states:
            raise ValueError("load_state_dict was given no state")
        states = [_resume.normalise(s) for s in states]
        self._pin_table(states[0].get("table"))
        if self._given is not None or any("given" in s for s in states):
            self._load_given(states)
            return
        saved_seed = states[0].get("seed")
        if self._settings.seed_drawn and saved_seed is not None and int(saved_seed) != self.seed:
            self._settings.options["seed"] = int(saved_seed)
            self._producer_next = None  # the producer draws with the old seed: start another
        plan = _resume.plan(states, self.state_dict())
        if plan.cuts and _called_by_lightning():
            # Lightning restores its own count of the epoch's batches (the saved rank's _num_yielded) and
            # ends the epoch when that count reaches len(); on another world, len() is the remainder's
            # batches, so the epoch would end that many batches early and its last samples be lost.
            saved = states[0]
            raise ValueError(
                f"Lightning cannot resume epoch {saved['epoch']} on another world: it was saved by "
                f"{saved['world_size']} rank(s) in batches of {saved['batch_size']} and is resumed by "
                f"{self.world_size} in batches of {self.batch_size}, and Lightning would count the "
                f"{saved['_num_yielded']} batches it had taken against this epoch's remainder, leaving its "
                f"last samples out: resume on {saved['world_size']} device(s) with batch_size="
                f"{saved['batch_size']}, or from a checkpoint taken at an epoch's end")
        print(f"stoke.DataLoader: {plan.report}", file=sys.stderr, flush=True)
        self._epoch, self._batch = plan.epoch, plan.batch
        self._resumed_epoch, self._cuts = (plan.epoch, plan.cuts) if plan.cuts else (None, [])
        if self._producer_cuts != self._cuts:
            self._producer_next = None  # the running producer splits this epoch otherwise

    def _pin_table(self, saved: Optional[str]) -> None:
        """Reopens the lakehouse table snapshot ``saved`` (``"TABLE@vN"``) a state was taken over, where
        this loader opened the table's latest and it has moved on since: so a resumed run reads the
        rows it was reading, however the table was written to meanwhile. A version or time the user
        named is kept; a different one then fails the dataset check that follows."""
        if saved is None or self._table is None or saved == self._table:
            return
        options = self._settings.options
        if options.get("table_version") is not None or options.get("as_of") is not None:
            return
        version = int(saved[saved.rindex("@v") + 2:])
        print(f"stoke.DataLoader: the state was taken over {saved}; this loader opened {self._table}: reading "
              f"version {version}, as the saved run did", file=sys.stderr, flush=True)
        options["table_version"] = version
        self._stop_producer()
        self.samples = None
        self._start_producer(self._epoch, self._batch)
        if self._settings.dataset is None:
            self._path_dataset = _PathDataset(self.root, self.samples)
        self._sampler = self._make_sampler()

    def _load_given(self, states: List[Dict[str, Any]]) -> None:
        """``load_state_dict`` where the order is a sampler's own: this rank's state alone, whose
        epoch resumes in the order it was drawn in, and whose sampler state draws the next ones."""
        saved = states[0]
        if self._given is None:
            raise ValueError(f"state_dict was saved with the order of a {saved['given']['kind']} of the user's "
                             f"({saved['given']['sampler']}), and this loader draws its own: pass the same sampler")
        if "given" not in saved:
            raise ValueError(f"state_dict was saved with Stoke's own order, and this loader's is the "
                             f"{self._given.name}'s: pass the sampler that state was taken with")
        if len(states) > 1:
            raise ValueError("with a sampler's own order each rank resumes from its own state: give this rank's "
                             "state alone (a per-rank sampler's order is not split again over another world)")
        # A batch sampler's batches are its own: batch_size is only the ring slot's size then.
        keys = ("dataset_size", "dataset", "transform") + (("batch_size", "drop_last") if self.batch_sampler is None
                                                           else ())
        for key in keys:
            if saved.get(key) is not None and self._state()[key] is not None and saved[key] != self._state()[key]:
                raise ValueError(f"state_dict was saved with {key}={saved[key]!r}, this loader has "
                                 f"{self._state()[key]!r}: the epoch would not be the one it was taken in")
        epoch, batch = int(saved["epoch"]), int(saved["_num_yielded"])
        self._given.load(epoch, saved["given"])
        self._epoch, self._batch = epoch, batch
        self._resumed_epoch, self._cuts = None, []
        self._seen_sampler_epoch = self._given.sampler_epoch()
        self._producer_next = None
        self._fit_ring()
        drawn = self._given.sizes(epoch)
        where = (f"batch {batch} of its {len(drawn)}, in the order the {self._given.name} gave" if drawn is not None
                 else f"its start, drawn from the {self._given.name} at iter()")
        print(f"stoke.DataLoader: resuming epoch {epoch} at {where}", file=sys.stderr, flush=True)

    # ---- iteration ----

    def __iter__(self) -> "_EpochIterator":
        """One epoch's batches: the rest of the current one, else the next.

        Raises:
            ValueError: the loader is closed.
        """
        if self.closed:
            raise ValueError("the loader is closed")
        self._check_process()
        # A DistributedSampler's set_epoch(e) (the passed one, or loader.sampler): epoch e comes next.
        epoch = self._sampler_epoch()
        if epoch is not None and epoch != self._seen_sampler_epoch:
            self.set_epoch(int(epoch))
        if 0 < len(self) <= self._batch:
            # Every batch of the epoch was taken and no next() saw its end (Lightning takes len(loader)
            # batches and stops): the rest of it is empty, so this for is the next epoch.
            self._move_to_next_epoch()
        if self._given is not None:
            self._draw_given()
        return _EpochIterator(self)

    def _move_to_next_epoch(self) -> None:
        self._epoch, self._batch = self._epoch + 1, 0
        self._resumed_epoch, self._cuts = None, []

    def _sampler_epoch(self) -> Optional[int]:
        """The sampler's ``epoch`` (its ``set_epoch``'s), or None where it has none."""
        if self._given is not None:
            return self._given.sampler_epoch()
        return getattr(self.sampler, "epoch", None)

    def _draw_given(self) -> None:
        """Asks the user's sampler for the current epoch's order, as torch's DataLoader does at
        ``iter()``, where this epoch has none yet (an epoch begun keeps its order: the rest of it comes)."""
        self._given.draw(self._epoch)
        self._fit_ring()

    def _fit_ring(self) -> None:
        """Ring slots that hold the current epoch's largest batch."""
        given = self._given
        largest = given.largest_batch(self._epoch)
        if largest > self.batch_size:
            # A ring slot holds one batch: a batch sampler that said no batch_size gets a ring of its
            # largest batch so far, laid out again (said once).
            _settings.say_once("given-batch-grows", f"stoke.DataLoader: the {given.name} gave a batch of {largest} "
                               f"samples, more than a ring slot's {self.batch_size}: the producer is started again "
                               "with slots of that size (give the batch sampler a batch_size attribute to size the "
                               "ring from the start)", stacklevel=4)
            self._settings.options["batch_size"] = largest
            self._producer_next = None

    def _feed_given(self) -> None:
        """Hands the producer the orders it reads next, through the current epoch's."""
        producer = self._producer
        while producer.fed_next <= self._epoch:
            sizes, indices = self._given.order(producer.fed_next)
            producer.feed(producer.fed_next, sizes, indices)

    def _next(self) -> Any:
        """The batch at the current position, or None at the end of its epoch (which moves on)."""
        self._check_process()
        if self._batch >= len(self):
            if (self._given is not None and self._producer_next == (self._epoch, 0)
                    and self._producer.fed_next == self._epoch and self._given.sizes(self._epoch) is not None):
                # An epoch of no batch: the producer reads its (empty) record and goes on to the next.
                self._feed_given()
                self._producer_next = (self._epoch + 1, 0)
            self._move_to_next_epoch()
            return None
        if self._given is not None and self._given.sizes(self._epoch) is None:
            self._draw_given()  # next() on an iterator of an epoch past: as iter() would
        if self._producer_next != (self._epoch, self._batch):
            self._restart_producer(self._epoch, self._batch)
        if self._given is not None:
            self._feed_given()
        k = self._batch + 1
        after = (self._epoch, k) if k < len(self) else (self._epoch + 1, 0)
        raw = self._take()
        try:
            if (raw.epoch, raw.batch_index) != (self._epoch, self._batch):
                raise RuntimeError(f"the ring handed out batch {raw.batch_index} of epoch {raw.epoch} where batch "
                                   f"{self._batch} of epoch {self._epoch} was due")
            batch = self._wrap(raw)
        except SampleError:
            self._batch, self._producer_next = k, after  # the failed batch was handed out as the error
            raise
        except BaseException:
            # Not handed out (a KeyboardInterrupt, an error making it): its slot goes back, and the
            # producer starts again at it, so that it comes next rather than never, or twice.
            raw.release()
            self._producer_next = None
            raise
        # No call between the batch made and the position moved past it, so no KeyboardInterrupt
        # either (CPython runs a signal's handler at a call, a function's entry or a backward jump).
        self._batch, self._producer_next = k, after
        collate = self._settings.collate
        if collate is not None:
            images, labels = batch[0], batch[1]
            # PyTorch's meaning: a list of (image, label) samples in, the batch out (a copy it makes).
            return collate(list(zip(images.unbind(0), labels.tolist())))
        if self.batch_transform is not None:
            out = self.batch_transform(batch[0], batch[1])
            if isinstance(out, tuple):
                out = Batch(out + tuple(batch[2:]), batch.epoch, batch.batch_index, batch.skipped, batch.padded)
            return out
        return batch

    def _check_process(self) -> None:
        """Refuses to read in a forked child (``os.fork``, ``multiprocessing``'s ``fork``): the
        producer, its ring and its batches are the parent's, which goes on reading them."""
        if os.getpid() != self._pid:
            raise RuntimeError(f"this stoke.DataLoader was created by process {self._pid} and this process "
                               f"({os.getpid()}) is a fork of it; its producer, ring and batches stay the parent's, "
                               "and a forked child never reads them: create a stoke.DataLoader in the child to "
                               "read there")

    def _take(self) -> RingBatch:
        """The ring's next batch, once a slot is free; the producer's failure or the timeout as errors."""
        producer = self._producer
        ring = producer.ring
        deadline = time.monotonic() + self.timeout if self.timeout > 0 else None
        while True:
            self._release_used(wait=ring.held >= ring.slot_count)
            if ring.held >= ring.slot_count:
                gc.collect()  # a reference cycle may be all that holds a batch
                suspects = self._release_orphans(ring)
                self._release_used(wait=True)
                if ring.held >= ring.slot_count:
                    if suspects or self._releases_under_way():
                        # Look again: a finaliser is, or may be, under way in another thread.
                        if deadline is not None and time.monotonic() > deadline:
                            raise self._timed_out(ring)
                        time.sleep(0.01)
                        continue
                    raise RuntimeError(
                        f"all {ring.slot_count} ring slots are held by batches your code still references, so no "
                        "new batch can be decoded. Keep what you need with images.clone() (or .to(device)) and "
                        "drop the batch, or create the loader with more slots (slots=N).")
            try:
                raw = ring.next(timeout=0.25)
            except ProducerGoneError as e:
                raise producer.error(str(e)) from None
            except TimeoutError:
                self._release_orphans(ring)
                status = producer.exit_status()
                if status is not None:
                    raise producer.error(f"the producer exited with status {status}") from None
                if deadline is not None and time.monotonic() > deadline:
                    raise self._timed_out(ring) from None
                continue
            if raw is None:
                raise producer.error("the producer ended its stream early")
            return raw

    def _timed_out(self, ring: Any) -> RuntimeError:
        """The error for a wait past ``timeout``, with this process's side of it."""
        return RuntimeError(f"DataLoader timed out after {self.timeout:g} seconds; {self._held_here(ring)}")

    def _releases_under_way(self) -> bool:
        """Whether a batch's finaliser is under way in another thread (autograd's frees a saved
        input): its slot comes back once it ends, so holding every slot is not the user's doing."""
        return self._pinning.freeing() or (self._device_slots is not None and self._device_slots.freeing())

    def _release_orphans(self, ring: Any) -> bool:
        """Releases the batches whose views are all gone and whose release never came: a
        KeyboardInterrupt cut their finaliser short (CPython runs a signal's handler at any call, a
        finaliser's too, and a finaliser's exception is printed and dropped). Each goes the way its
        finaliser would have sent it, after the GPU work queued on its slot; said once.

        A batch is taken for one at two looks in a row: at one, its finaliser may be under way in
        another thread (a batch's views go with autograd's, say), past its views and not yet at its
        release.

        Returns:
            Whether a batch looked like one for the first time (the next look decides).
        """
        viewless = [raw for raw in ring.held_batches() if raw.owner is not None and raw.owner() is None]
        if not viewless:  # the usual case: no pending release to look through
            self._orphans_seen = set()
            return False
        waiting = {id(raw) for raw in self._pinning.waiting()}
        if self._device_slots is not None:
            waiting.update(id(raw) for raw in self._device_slots.waiting())
        looks = {id(raw): raw for raw in viewless if id(raw) not in waiting}
        orphans = [raw for key, raw in looks.items() if key in self._orphans_seen]
        self._orphans_seen = looks.keys() - self._orphans_seen
        if not orphans:
            return bool(self._orphans_seen)
        _settings.say_once("orphans", f"stoke.DataLoader: {len(orphans)} batch(es) whose last view was freed "
                                      "without its slot going back (an interrupt cut their release short): "
                                      "given back now")
        for raw in orphans:
            raw.owner = None
            if self._device_slots is not None:
                self._device_slots.release_after_use(raw)
            else:
                self._pinning.release_after_copies(raw)
        return bool(self._orphans_seen)

    def _held_here(self, ring: Any) -> str:
        """This process's side of a wait with no batch: the slots it holds and why, so that a timeout
        says whether the producer had a slot to fill (its stall report says the rest)."""
        said = [self._pinning.describe()]
        if self._device_slots is not None:
            said.append(self._device_slots.describe())
        why = "; ".join(s for s in said if s)
        return (f"this process holds {ring.held} of the ring's {ring.slot_count} slots"
                + (f" ({why})" if why else ""))

    def _release_used(self, wait: bool) -> None:
        """Gives back the slots of freed batches whose GPU work is done (``pin_memory``'s copies, or
        the work on device slots); with ``wait``, waits for the oldest of each."""
        self._pinning.release_copied(wait=wait)
        if self._device_slots is not None:
            self._device_slots.release_done(wait=wait)

    def _open_device_slots(self) -> bool:
        """At the current producer's start: opens its device slots (each allocation by CUDA IPC), or,
        where it decodes on the CPU after all (it said why), says once that each batch is copied to
        the device here. False where CUDA refuses the IPC (said once, loudly): the caller starts a
        producer that copies the batches back into the ring instead."""
        description = self._producer.device_slots_description(timeout=self._settings.start_timeout)
        side = _device_slots.cuda_side
        if description["on_device"]:
            try:
                self._device_slots = _device_slots.DeviceSlots(description, side)
                return True
            except _device_slots.DeviceSlotsRefused as e:
                self._device_slots_refused = True
                _settings.say_once("device-slots-refused", f"stoke.DataLoader: decode={self._settings.decode!r}: "
                                                           f"{e}; the producer starts again and copies each batch "
                                                           "back into the ring, and from there to the device")
                return False
        self._copy_batches_to_device()
        _settings.say_once("device-slots-cpu", f"stoke.DataLoader: decode={self._settings.decode!r}: the producer "
                                               f"decodes on the CPU (said above); each batch is copied to "
                                               f"cuda:{self._copy_to_device} here")
        return True

    def _copy_batches_to_device(self) -> None:
        """The current producer's batches are in its ring: each is copied to the device in ``_wrap``
        (asynchronously from the pinned ring with ``pin_memory``), so they are CUDA tensors still."""
        self._copy_to_device = _device_slots.cuda_side.device()
        if self._settings.pin:
            self._pinning.pin(self._producer.ring)

    def _wrap(self, raw: RingBatch) -> Batch:
        """The ring's batch as torch tensors viewing its slot, which goes back when the last view is freed."""
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
        if self._device_slots is not None:
            images = self._device_slots.images(raw)  # a CUDA tensor viewing the slot's device allocation
        else:
            lease = _SlotLease(raw.pixels)
            weakref.finalize(lease, self._pinning.release_after_copies, raw)
            raw.owner = weakref.ref(lease)
            images = torch.from_numpy(np.asarray(lease))
            del lease
            if self._copy_to_device is not None:
                images = _device_slots.cuda_side.to_device(images, self._copy_to_device,
                                                           non_blocking=self._pinning.active)
        if self._settings.chw:
            images = images.permute(0, 3, 1, 2)  # PILToTensor's [n, 3, H, W]: a view of the HWC slot, no copy
        items = (images, labels, indices) if self.with_indices else (images, labels)
        padded = torch.from_numpy(self._padding(raw.batch_index, len(raw.labels)))
        return Batch(items, raw.epoch, raw.batch_index, skipped, padded)

    # ---- the producer ----

    def _start_producer(self, epoch: int, batch: int) -> None:
        inherited = [self._list_fd] if self._list_fd is not None else []
        cuts = self._cuts if epoch == self._resumed_epoch else []
        self._producer_cuts = cuts
        settings = self._settings
        on_gpu = settings.decode in ("gpu", "auto") and _device_slots.cuda_side.available()
        device_slots = on_gpu and not self._device_slots_refused
        self._producer = Producer(settings.stoke, settings, self.root, epoch, batch, cuts=cuts, inherited=inherited,
                                  start_timeout=settings.start_timeout, order_feed=settings.given is not None,
                                  device_slots=device_slots)
        ring = self._producer.ring
        if self.samples is None:
            given = self._settings.samples
            self.samples = (given if given is not None and self._producer.sample_list_agrees(given)
                            else _samples_of(self._producer.read_sample_list(), self.root))
            header = self._producer.sample_list_header()
            self._dataset_fingerprint = header.get("dataset")
            self._table = header.get("table")
            self._window_in_effect = header.get("shuffle_window", self.shuffle_window)
        if not self._said_ring:
            # Once per loader: users under a memory limit (a container, a cgroup) need the figure.
            self._said_ring = True
            print(f"stoke.DataLoader: ring of {ring.slot_count} slots of {_mib(ring.slot_bytes)} "
                  f"({_mib(ring.total_bytes)}) in anonymous shared memory (not /dev/shm), counted against this "
                  "job's memory limit", file=sys.stderr, flush=True)
        if device_slots:
            if not self._open_device_slots():
                self._restart_producer(epoch, batch)  # IPC refused: this time without device slots
                return
        elif on_gpu:
            self._copy_batches_to_device()  # CUDA refused the IPC before
        elif self._settings.pin:
            # With device slots the ring's pixels are never written: pinning would make them resident
            # for nothing. Pinned there only where the producer decodes on the CPU after all.
            self._pinning.pin(ring)
        self._producer_next = (epoch, batch)

    def _restart_producer(self, epoch: int, batch: int) -> None:
        self._stop_producer()
        self._start_producer(epoch, batch)

    def _stop_producer(self) -> None:
        # Unregistered from CUDA, and the device slots closed, before the producer's ring is unmapped.
        self._pinning.unpin()
        device_slots, self._device_slots = self._device_slots, None
        self._copy_to_device = None
        if device_slots is not None:
            device_slots.close()
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.stop()
            self._auto_workers_past += producer.auto_workers_log()  # keep this producer's changes past its file
            self._restart_cache_past += producer.restart_cache_log()
        self._producer_next = None

    # ---- auto workers ----

    def auto_workers_log(self) -> List[Dict[str, Any]]:
        """What ``num_workers="auto"`` did: the log of the live worker control, auto-workers (not
        ``stoke.tune``, the offline search).

        Returns:
            Every change the producer made to its active decoding threads, oldest first, as dicts
            ``{"at_s", "from_workers", "to_workers", "reason"}`` (``at_s`` counts from that
            producer's start; a resumed or restarted producer starts again). Empty with a fixed
            ``num_workers``.

        Example::

            for change in loader.auto_workers_log():
                print(f"{change['at_s']:.1f} s: {change['from_workers']} -> {change['to_workers']}: "
                      f"{change['reason']}")
        """
        current = self._producer.auto_workers_log() if self._producer is not None else []
        return self._auto_workers_past + current

    # ---- the restart cache ----

    def restart_cache_stats(self) -> List[Dict[str, Any]]:
        """What the restart cache (``restart_cache_dir``) did in each epoch the producer has finished,
        read from its log (docs/shared-memory.md, "The restart-cache log"). The same counts reach
        stderr as one line per epoch, ``stoke serve: restart cache after epoch E: ...``.

        Returns:
            One dict per epoch whose last batch the producer has published, oldest first: that
            epoch's ``hits`` (reads served a copy), ``misses`` (reads of the original, copied by its
            worker as it decodes while the loader has slack, else by the fillers), ``copied``,
            ``copied_by_workers`` (of those, the workers'), ``originals`` (entries that say to read
            the original), ``damaged`` and ``filled_bytes``; the producer's totals ``total_hits``,
            ``total_misses``, ``total_copied``, ``total_copied_by_workers``, ``total_originals``,
            ``total_damaged`` and ``total_filled_bytes``; the folder's ``used_bytes`` of its ``budget_bytes``;
            ``full`` (the budget reached) and ``failure`` (why the folder could not be written, e.g. a
            read-only mount, or None), after either of which nothing more is written; and ``epoch``. A restarted or resumed producer counts its totals again.
            Empty without a restart cache.

        Example::

            for e in loader.restart_cache_stats():
                print(f"epoch {e['epoch']}: {e['hits']} hits, {e['misses']} misses, "
                      f"{e['filled_bytes'] / 1e6:.1f} MB copied")
        """
        current = self._producer.restart_cache_log() if self._producer is not None else []
        return self._restart_cache_past + current

    def tuning(self) -> List[Dict[str, Any]]:
        """Deprecated: :meth:`auto_workers_log` (said once); it goes in the next release."""
        _settings.say_once("deprecated-tuning", "stoke.DataLoader.tuning() is deprecated: it is auto_workers_log() "
                                                "now (\"tune\" is stoke.tune's offline search); the old name goes "
                                                "in the next release")
        return self.auto_workers_log()

    @property
    def active_workers(self) -> int:
        """Decoding threads taking samples now: ``num_workers``, or, with ``"auto"``, the producer's last choice."""
        if self.num_workers != "auto":
            return self.num_workers
        changes = self.auto_workers_log()
        return changes[-1]["to_workers"] if changes else default_workers()

    # ---- closing ----

    @property
    def closed(self) -> bool:
        """Whether the loader is closed (:meth:`close`), or was refused before anything was made."""
        return self.__dict__.get("_closed", True)

    def _close(self) -> None:
        """Stops the producer and closes its files (``close()``). Tensors already handed out stay valid.

        In a forked child (``close()``, ``__del__`` or the exit hook there), it closes the child's
        copies of the ring's mapping and the files alone: the producer, the ring's seat and the
        batches held stay the parent's (``Producer.stop``, ``Ring.close`` and ``Pinning`` check the
        process)."""
        self._closed = True
        self._stop_producer()
        fd, self._list_fd = self._list_fd, None
        if fd is not None:
            os.close(fd)


class _EpochIterator:
    """One epoch of a :class:`DataLoader`. After an exception (a :class:`SampleError`), ``next()``
    goes on with the following batch."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._done = False

    def __iter__(self) -> "_EpochIterator":
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        batch = self._loader._next()
        if batch is None:
            self._done = True
            raise StopIteration
        return batch

    def __len__(self) -> int:
        return len(self._loader)
