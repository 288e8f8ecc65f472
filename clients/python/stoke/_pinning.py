"""``pin_memory=True``: the ring registered with CUDA (page-locked), and its slots given back only
after the GPU copies queued from them are done.

With the ring's mapping registered once per producer, ``.to(device, non_blocking=True)`` of a
batch is an asynchronous DMA from its slot. The slot may then still be a copy's source after the
last tensor viewing it is freed, so its release waits for a CUDA event recorded at that moment.
"""

import collections
import os
from typing import Any, Deque, List, Optional, Tuple

from ._settings import say_once
from .ring import RingBatch
from .ring import Ring

__all__ = ["Pinning"]


class Pinning:
    """The ring's registration with CUDA, and the slots waiting for the GPU work queued before they
    were freed. Inactive (every release at once) until :meth:`pin` succeeds, and after :meth:`unpin`."""

    def __init__(self) -> None:
        self._pinned: Optional[Tuple[int, Any]] = None  # (address, cudart) of the registered mapping
        self._pending: Deque[Tuple[Any, RingBatch]] = collections.deque()  # (CUDA event, batch), oldest first
        # Batches whose finaliser is under way, not yet released or in _pending: a release that waits for
        # the ring's lock, or torch's calls, let other threads run, and the loader's look for batches
        # whose release never came must not take these for such.
        self._freeing: List[RingBatch] = []
        self._pid = os.getpid()  # a forked child's copy neither releases nor touches CUDA (see _forked)

    @property
    def active(self) -> bool:
        """The ring is registered: releases wait for the GPU."""
        return self._pinned is not None

    def pin(self, ring: Ring) -> bool:
        """Registers the ring's whole mapping with CUDA (``cudaHostRegister``).

        Args:
            ring: the producer's ring, attached.

        Returns:
            Whether it is registered; where CUDA refuses, says so once and leaves batches pageable.
        """
        import torch
        address, length = ring.mapped_region()
        cudart = torch.cuda.cudart()
        status = cudart.cudaHostRegister(address, length, 0)
        if int(getattr(status, "value", status)) != 0:
            say_once("pin-failed", f"stoke.DataLoader: pin_memory: cudaHostRegister of the ring failed ({status}); "
                                   "batches stay pageable and copies to the GPU synchronous")
            return False
        self._pinned = (address, cudart)
        return True

    def release_after_copies(self, raw: RingBatch) -> None:
        """A freed batch's slot: given back after the GPU work queued so far (its copies), or at
        once when the ring is not registered. A finaliser: it runs when the batch's last view goes,
        in a forked child too (at its exit), where the slot is the parent's and CUDA unusable."""
        if self._forked():
            return
        self._freeing.append(raw)
        try:
            if self._pinned is None:
                raw.release()
                return
            import torch
            event = torch.cuda.Event()
            event.record()
            self._pending.append((event, raw))
        finally:
            self._freeing.remove(raw)  # after the release or the append: in view throughout

    def waiting(self) -> List[RingBatch]:
        """The freed batches whose slots wait for their copies to the GPU, or whose finaliser is under way."""
        return [raw for _, raw in list(self._pending)] + list(self._freeing)

    def freeing(self) -> bool:
        """Whether a batch's finaliser is under way, its slot neither queued nor given back yet."""
        return bool(self._freeing)

    def release_copied(self, wait: bool = False) -> None:
        """Gives back the slots whose GPU work is done, oldest first.

        Args:
            wait: wait for the oldest slot's work if it is not done (a slot is needed now).
        """
        while self._pending:
            event, raw = self._pending[0]
            if not event.query():
                if not wait:
                    return
                event.synchronize()
                wait = False
            self._pending.popleft()
            raw.release()

    def describe(self) -> str:
        """The freed batches whose slots wait for their copies to the GPU, for an error that says why
        no batch comes; empty where there are none."""
        if not self._pending:
            return ""
        done = self._pending[0][0].query()
        return (f"{len(self._pending)} freed and waiting for their copies to the GPU (the oldest's copy "
                f"{'is done' if done else 'is not done'})")

    def unpin(self) -> None:
        """Waits for every pending slot's GPU work, gives them back, and unregisters the mapping
        (before the ring is unmapped). Idempotent. In a forked child, forgets them: the slots and
        the registration are the parent's."""
        pinned, self._pinned = self._pinned, None
        if self._forked():
            self._pending.clear()
            return
        if pinned is not None:
            while self._pending:
                event, raw = self._pending.popleft()
                event.synchronize()
                raw.release()
            address, cudart = pinned
            cudart.cudaHostUnregister(address)

    def _forked(self) -> bool:
        """Whether this process is a fork of the one whose loader this is."""
        return os.getpid() != self._pid
