"""A sampler's own order: each epoch as a user's ``Sampler`` or ``batch_sampler`` gives it.

Stoke's producer draws the orders of torch's ``RandomSampler``, ``SequentialSampler`` and
``DistributedSampler`` itself. Any other sampler (``WeightedRandomSampler``, ``SubsetRandomSampler``,
torchvision's ``RASampler``, a subclass of the user's) and any ``batch_sampler`` is asked for its
order here, once per epoch at ``iter()`` as torch's DataLoader asks it, and the order goes to the
producer through its order feed (``Producer.feed``) before the epoch's first batch. A per-rank sampler
gives this rank's order, which is not partitioned again.

:class:`GivenOrder` holds the epoch drawn, says how many batches an epoch has, forwards
``set_epoch``, and saves and restores what resumes an epoch exactly (the order drawn, and the
object's generator, ``state_dict`` or epoch for the epochs after it).
"""

import base64
import operator
from typing import Any, Dict, Optional, Tuple

import numpy as np

from ._settings import say_once

__all__ = ["GivenOrder"]


def _inner(obj: Any) -> Any:
    """A batch sampler's sampler (torch's ``BatchSampler.sampler``), or None."""
    return getattr(obj, "sampler", None)


class GivenOrder:
    """The orders a sampler or batch sampler of the user's gives, one epoch at a time.

    Args:
        obj: the sampler (iterates dataset indices) or batch sampler (iterates lists of them).
        kind: ``"sampler"`` or ``"batch_sampler"``.
        batch_size: with a sampler, the batches' size (torch's ``BatchSampler`` over it).
        drop_last: with a sampler, whether a last partial batch is dropped.
        dataset_size: every index must be below it.
    """

    def __init__(self, obj: Any, kind: str, batch_size: int, drop_last: bool, dataset_size: int) -> None:
        self.obj, self.kind = obj, kind
        self.batch_size, self.drop_last, self.dataset_size = batch_size, drop_last, dataset_size
        self.name = type(obj).__name__
        # The epoch drawn last: (epoch, batch sizes, indices), int64 arrays.
        self._drawn: Optional[Tuple[int, np.ndarray, np.ndarray]] = None

    # ---- the epochs ----

    def sizes(self, epoch: int) -> Optional[np.ndarray]:
        """The batch sizes of ``epoch`` where it is drawn, else None."""
        return self._drawn[1] if self._drawn is not None and self._drawn[0] == epoch else None

    def batches(self, epoch: int) -> int:
        """Batches of ``epoch``: the drawn order's, else what the object's ``len`` says (torch's ``len(loader)``)."""
        sizes = self.sizes(epoch)
        if sizes is not None:
            return len(sizes)
        n = len(self.obj)
        if self.kind == "batch_sampler":
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def largest_batch(self, epoch: int) -> int:
        """The largest batch of a drawn ``epoch`` (0 for an empty one)."""
        sizes = self.sizes(epoch)
        return int(sizes.max()) if sizes is not None and len(sizes) else 0

    def order(self, epoch: int) -> Tuple[np.ndarray, np.ndarray]:
        """The drawn ``epoch``'s batch sizes and indices (:meth:`draw` first)."""
        drawn = self._drawn
        if drawn is None or drawn[0] != epoch:
            raise RuntimeError(f"epoch {epoch}'s order has not been drawn from the {self.name}")
        return drawn[1], drawn[2]

    def draw(self, epoch: int) -> None:
        """Asks the object for epoch ``epoch``'s order, unless it is drawn already.

        Raises:
            ValueError: an index that is not an integer in ``[0, dataset_size)``, or an empty
                batch, naming the sampler, the epoch and the position.
        """
        if self._drawn is not None and self._drawn[0] == epoch:
            return
        if self.kind == "batch_sampler":
            batches = [list(b) for b in self.obj]
            for k, b in enumerate(batches):
                if not b:
                    raise ValueError(f"the {self.name} gave an empty batch {k} in epoch {epoch}: a batch holds "
                                     "one sample or more")
            sizes = np.array([len(b) for b in batches], dtype=np.int64)
            flat = [i for b in batches for i in b]
        else:
            flat = list(self.obj)
            n = len(flat) - len(flat) % self.batch_size if self.drop_last else len(flat)
            flat = flat[:n]
            sizes = np.full(-(-n // self.batch_size), self.batch_size, dtype=np.int64)
            if n % self.batch_size:
                sizes[-1] = n % self.batch_size
        indices = self._indices(flat, epoch)
        self._drawn = (epoch, sizes, indices)

    def _indices(self, flat: list, epoch: int) -> np.ndarray:
        try:
            indices = np.array([operator.index(i) for i in flat], dtype=np.int64)
        except (TypeError, ValueError):
            bad = next(p for p, i in enumerate(flat) if not _is_index(i))
            raise ValueError(f"the {self.name} gave {flat[bad]!r} at position {bad} of epoch {epoch}: Stoke reads "
                             "samples by their integer index in the dataset") from None
        outside = np.flatnonzero((indices < 0) | (indices >= self.dataset_size))
        if len(outside):
            p = int(outside[0])
            raise ValueError(f"the {self.name} gave index {int(indices[p])} at position {p} of epoch {epoch}, "
                             f"outside the dataset's {self.dataset_size} samples")
        return indices

    def forget(self) -> None:
        """Drops the drawn epoch: the next :meth:`draw` asks the object again."""
        self._drawn = None

    # ---- the object's epoch ----

    def _epoch_holder(self) -> Any:
        """The object whose ``epoch``/``set_epoch`` is the order's: the object, or a batch sampler's sampler."""
        if hasattr(self.obj, "set_epoch") or hasattr(self.obj, "epoch"):
            return self.obj
        inner = _inner(self.obj)
        if inner is not None and (hasattr(inner, "set_epoch") or hasattr(inner, "epoch")):
            return inner
        return None

    def sampler_epoch(self) -> Optional[int]:
        """The object's ``epoch`` (set by its ``set_epoch``), or None where it has none."""
        holder = self._epoch_holder()
        epoch = getattr(holder, "epoch", None) if holder is not None else None
        return None if epoch is None else int(epoch)

    def set_epoch(self, epoch: int) -> None:
        """Forwards ``set_epoch(epoch)`` to the object (or a batch sampler's sampler) where it has one."""
        holder = self._epoch_holder()
        if holder is None:
            return
        if callable(getattr(holder, "set_epoch", None)):
            holder.set_epoch(epoch)
        else:
            holder.epoch = epoch

    # ---- resume ----

    def _generator(self) -> Any:
        for holder in (self.obj, _inner(self.obj)):
            generator = getattr(holder, "generator", None) if holder is not None else None
            if generator is not None and callable(getattr(generator, "get_state", None)):
                return generator
        return None

    def _reproducible(self) -> bool:
        """Whether the epochs after a saved one can be drawn again as an uninterrupted run draws them:
        the object's order is a function of its epoch (``set_epoch``), it keeps a ``state_dict``, it
        draws from a generator of its own, or it is torch's ``SequentialSampler`` (under a batch sampler)."""
        from torch.utils.data import SequentialSampler
        for holder in (self.obj, _inner(self.obj)):
            if holder is None:
                continue
            if (callable(getattr(holder, "set_epoch", None)) or callable(getattr(holder, "state_dict", None))
                    or isinstance(holder, SequentialSampler)):
                return True
        return self._generator() is not None

    def state(self, epoch: int) -> Dict[str, Any]:
        """What resumes epoch ``epoch`` exactly and draws the epochs after it again: the order drawn
        (where it is), and the object's generator state, ``state_dict()`` and epoch. Says once where
        the epochs after it cannot be drawn again."""
        if not self._reproducible():
            say_once(f"given-order-{self.name}",
                     f"stoke.DataLoader.state_dict(): the {self.name}'s later epochs cannot be drawn again on resume: "
                     "it has no generator of its own, set_epoch or state_dict, so it draws from torch's global "
                     "generator. The epoch in progress is saved and resumes exactly; the epochs after it will differ "
                     f"from an uninterrupted run's. Give the {self.name} a seeded generator= to resume exactly.",
                     stacklevel=3)
        out: Dict[str, Any] = {"kind": self.kind, "sampler": self.name, "order": None, "generator_state": None,
                               "sampler_state": None, "sampler_epoch": self.sampler_epoch()}
        sizes = self.sizes(epoch)
        if sizes is not None:
            out["order"] = {"batch_sizes": sizes.tolist(), "indices": self._drawn[2].tolist()}
        generator = self._generator()
        if generator is not None:
            out["generator_state"] = base64.b64encode(generator.get_state().numpy().tobytes()).decode("ascii")
        if callable(getattr(self.obj, "state_dict", None)):
            out["sampler_state"] = self.obj.state_dict()
        return out

    def load(self, epoch: int, saved: Dict[str, Any]) -> None:
        """Restores what :meth:`state` saved for epoch ``epoch``.

        Raises:
            ValueError: the state is of another kind of order, or its order holds an index outside
                the dataset.
        """
        if saved.get("kind") != self.kind:
            raise ValueError(f"state_dict was saved with a {saved.get('kind')} of the user's, this loader has a "
                             f"{self.kind}: the epoch's order would not be the one it was taken in")
        order = saved.get("order")
        self._drawn = None
        if order is not None:
            sizes = np.asarray(order["batch_sizes"], dtype=np.int64)
            indices = self._indices(list(order["indices"]), epoch)
            if int(sizes.sum()) != len(indices):
                raise ValueError(f"state_dict's order of epoch {epoch} has batches of {int(sizes.sum())} samples "
                                 f"and {len(indices)} indices")
            self._drawn = (epoch, sizes, indices)
        if saved.get("generator_state") is not None:
            import torch
            state = np.frombuffer(base64.b64decode(saved["generator_state"]), dtype=np.uint8).copy()
            self._generator().set_state(torch.from_numpy(state))
        if saved.get("sampler_state") is not None:
            self.obj.load_state_dict(saved["sampler_state"])
        if saved.get("sampler_epoch") is not None:
            self.set_epoch(int(saved["sampler_epoch"]))


def _is_index(value: Any) -> bool:
    try:
        operator.index(value)
        return True
    except TypeError:
        return False
