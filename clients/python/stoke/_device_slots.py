"""``decode="gpu"`` or ``"auto"`` with CUDA here: the batches' pixels stay on the GPU.

The producer keeps each ring slot's pixels in a device allocation of its own (``stoke serve
--device-slots-out``), copied there on the device, and describes the allocations once, before its
first batch, in a JSON file (docs/shared-memory.md, "Device slots"). This process opens every
allocation by CUDA IPC (``cuIpcOpenMemHandle``, through the driver that torch loaded) as soon as the
producer has described them, and a batch's images are a CUDA tensor viewing its slot's allocation: no
copy back to the host, none to the GPU. The host slot still carries the labels, indices and statuses.
Where CUDA refuses the IPC (the two processes in different containers, a driver without it), that is
said once, loudly, and a new producer copies each batch back into the ring.

A slot goes back to the producer only after the GPU work queued on the current stream when the
batch's last view was freed is done (a CUDA event, recorded then), as ``pin_memory``'s slots do: the
producer's next copy into it cannot overtake a kernel still reading it.

Where the producer decodes on the CPU after all (no libnvjpeg, a transform the GPU path refuses), the
file says so and the pixels are in the ring; each batch is then copied to the device here, said once,
so the batches are CUDA tensors either way.
"""

import collections
import ctypes
import json
import os
import weakref
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

from ._settings import say_once
from .ring import RingBatch

__all__ = ["DeviceSlots", "DeviceSlotsRefused", "CudaSide", "cuda_side"]

CUDA_SUCCESS = 0
CUDA_ERROR_NOT_READY = 600
CU_EVENT_DISABLE_TIMING = 0x2
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1
IPC_HANDLE_SIZE = 64


class DeviceSlotsRefused(RuntimeError):
    """CUDA would not open the producer's allocations here (no IPC between the two processes: another
    container, a driver without it), or the driver could not be loaded."""


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * IPC_HANDLE_SIZE)]


class CudaSide:
    """What device slots ask of torch here: one object, so that the tests of the wiring can stand a
    host double in for it (the CUDA driver double, whose device memory is host memory, and a torch
    without CUDA). Never a GPU verification."""

    #: The driver library: torch's own, already loaded where torch has CUDA.
    driver_library = "libcuda.so.1"

    def available(self) -> bool:
        """Whether batches can be CUDA tensors here."""
        try:
            import torch
        except ImportError:
            return False
        return torch.cuda.is_available()

    def device(self) -> int:
        """The device this process uses, as torch numbers it."""
        import torch
        return torch.cuda.current_device()

    def stream(self, device: int) -> int:
        """The raw ``CUstream`` of torch's current stream on ``device``, where the user's work is queued."""
        import torch
        return torch.cuda.current_stream(device).cuda_stream

    def as_tensor(self, array: "_DeviceArray", device: int) -> Any:
        """A tensor viewing ``array`` (``__cuda_array_interface__``), which it keeps alive."""
        import torch
        return torch.as_tensor(array, device=f"cuda:{device}")

    def to_device(self, tensor: Any, device: int, non_blocking: bool) -> Any:
        """A host batch copied to ``device`` (the producer decoded on the CPU); ``non_blocking`` where
        the ring is pinned, its slot then given back after the copy (``pin_memory``'s events)."""
        return tensor.to(f"cuda:{device}", non_blocking=non_blocking)


#: Replaced by the tests of the wiring (see CudaSide).
cuda_side = CudaSide()


class _Driver:
    """The few CUDA driver calls device slots make, through ctypes, each checked."""

    def __init__(self, library: str) -> None:
        self._lib = ctypes.CDLL(library)
        lib = self._lib
        self._open = getattr(lib, "cuIpcOpenMemHandle_v2", None) or lib.cuIpcOpenMemHandle
        self._open.argtypes = [ctypes.POINTER(ctypes.c_uint64), _IpcHandle, ctypes.c_uint]
        lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
        lib.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
        self._ctx_release = getattr(lib, "cuDevicePrimaryCtxRelease_v2", None) or lib.cuDevicePrimaryCtxRelease
        self._ctx_release.argtypes = [ctypes.c_int]
        lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
        lib.cuEventCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
        lib.cuEventRecord.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.cuEventQuery.argtypes = [ctypes.c_void_p]
        lib.cuEventSynchronize.argtypes = [ctypes.c_void_p]
        self._event_destroy = getattr(lib, "cuEventDestroy_v2", None) or lib.cuEventDestroy
        self._event_destroy.argtypes = [ctypes.c_void_p]

    def check(self, status: int, call: str) -> None:
        if status != CUDA_SUCCESS:
            name = ctypes.c_char_p()
            self._lib.cuGetErrorName(status, ctypes.byref(name))
            raise RuntimeError(f"stoke.DataLoader: device slots: {call} failed: "
                               f"{(name.value or b'?').decode()} ({status})")

    def retain(self, device: int) -> Tuple[int, ctypes.c_void_p]:
        """The device's primary context (torch's), retained and made current in this thread."""
        self.check(self._lib.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        self.check(self._lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        self.check(self._lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev.value), "cuDevicePrimaryCtxRetain")
        self.check(self._lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return dev.value, ctx

    def release(self, dev: int) -> None:
        self._ctx_release(dev)

    def current(self, ctx: ctypes.c_void_p) -> None:
        self.check(self._lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def open(self, handle: bytes) -> int:
        h = _IpcHandle()
        ctypes.memmove(ctypes.byref(h), handle, IPC_HANDLE_SIZE)
        out = ctypes.c_uint64()
        self.check(self._open(ctypes.byref(out), h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle")
        return out.value

    def close(self, pointer: int) -> None:
        self.check(self._lib.cuIpcCloseMemHandle(pointer), "cuIpcCloseMemHandle")

    def event(self) -> ctypes.c_void_p:
        e = ctypes.c_void_p()
        self.check(self._lib.cuEventCreate(ctypes.byref(e), CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        return e

    def record(self, event: ctypes.c_void_p, stream: int) -> None:
        self.check(self._lib.cuEventRecord(event, ctypes.c_void_p(stream or None)), "cuEventRecord")

    def done(self, event: ctypes.c_void_p) -> bool:
        status = self._lib.cuEventQuery(event)
        if status == CUDA_ERROR_NOT_READY:
            return False
        self.check(status, "cuEventQuery")
        return True

    def wait(self, event: ctypes.c_void_p) -> None:
        self.check(self._lib.cuEventSynchronize(event), "cuEventSynchronize")

    def destroy(self, event: ctypes.c_void_p) -> None:
        self._event_destroy(event)


class _DeviceArray:
    """One batch's pixels in a device slot, as ``__cuda_array_interface__`` (version 3). The tensor
    made from it keeps it alive; when the last view goes, its finaliser gives the slot back."""

    __slots__ = ("__cuda_array_interface__", "__weakref__")

    def __init__(self, pointer: int, shape: Tuple[int, ...], typestr: str) -> None:
        # No stream: the producer's copy was complete before it published the slot.
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (pointer, False),
                                         "strides": None, "version": 3, "stream": None}


def read_description(path: str) -> Optional[Dict[str, Any]]:
    """The device slots' description the producer wrote to ``path`` (``on_device`` false where it
    decodes on the CPU), or None while it has written none yet."""
    with open(path, "rb") as f:
        text = f.read()
    if not text.strip():
        return None
    d = json.loads(text)
    if d.get("version") != 1:
        raise RuntimeError(f"stoke.DataLoader: the producer's device slots are described in version "
                           f"{d.get('version')}, this package reads version 1: the package and the producer differ")
    return d


class DeviceSlots:
    """The producer's device slots, opened here, and the slots waiting for the GPU work queued before
    their batch's last view was freed.

    Args:
        description: what the producer wrote (:func:`read_description`), with ``on_device``.
        side: torch's CUDA here (:data:`cuda_side`).

    Raises:
        DeviceSlotsRefused: the driver did not load, or refused to open an allocation; what was
            opened is closed again.
    """

    def __init__(self, description: Dict[str, Any], side: CudaSide) -> None:
        self._side = side
        self._device = side.device()
        self._bytes = int(description["slot_bytes"])
        handles = [bytes.fromhex(h) for h in description["handles"]]
        self._pointers: List[Optional[int]] = [None] * len(handles)
        try:
            self._driver = _Driver(side.driver_library)
        except (OSError, AttributeError) as e:
            raise DeviceSlotsRefused(f"the CUDA driver ({side.driver_library}) could not be used: {e}") from None
        try:
            self._dev, self._ctx = self._driver.retain(self._device)
        except RuntimeError as e:
            raise DeviceSlotsRefused(str(e)) from None
        try:
            for slot, handle in enumerate(handles):  # all at once: a refusal is known before any batch
                self._pointers[slot] = self._driver.open(handle)
        except RuntimeError as e:
            for p in self._pointers:
                if p is not None:
                    self._driver.close(p)
            self._driver.release(self._dev)
            raise DeviceSlotsRefused(f"CUDA IPC refused the producer's allocations on cuda:{self._device} "
                                     f"({e})") from None
        self._pending: Deque[Tuple[ctypes.c_void_p, RingBatch]] = collections.deque()
        # Batches whose finaliser is under way, not yet in _pending: its driver calls let other threads
        # run, and the loader's look for batches whose release never came must not take these for such.
        self._freeing: List[RingBatch] = []
        self._spare: List[ctypes.c_void_p] = []
        self._pid = os.getpid()
        # The batches handed out whose last view is not yet freed: a set the collector updates, not a
        # count (a finaliser on autograd's thread and a hand-out here would race on its += and -=).
        self._live: "weakref.WeakSet[_DeviceArray]" = weakref.WeakSet()
        self.closed = False

    def images(self, raw: RingBatch) -> Any:
        """``raw``'s images: a CUDA tensor viewing its slot's allocation, shaped and typed as the ring's
        pixels; the slot goes back once the tensor's last view is freed and the GPU is done with it."""
        pointer = self._pointers[raw.slot]
        pixels = raw.pixels
        if pixels.nbytes > self._bytes:
            raise RuntimeError(f"stoke.DataLoader: a batch of {pixels.nbytes} bytes in a device slot of {self._bytes}")
        array = _DeviceArray(pointer, tuple(pixels.shape), pixels.dtype.str)
        weakref.finalize(array, self.release_after_use, raw)
        raw.owner = weakref.ref(array)
        self._live.add(array)
        return self._side.as_tensor(array, self._device)

    def release_after_use(self, raw: RingBatch) -> None:
        """A freed batch's slot: given back after the work queued on the current stream so far. A
        finaliser, which runs in a forked child too, where the slot is the parent's."""
        self._freeing.append(raw)
        try:
            if os.getpid() != self._pid or self.closed:
                return
            self._driver.current(self._ctx)
            try:  # one pop, not a test and a pop: autograd's thread and this one's collector both free batches
                event = self._spare.pop()
            except IndexError:
                event = self._driver.event()
            self._driver.record(event, self._side.stream(self._device))
            self._pending.append((event, raw))
        finally:
            self._freeing.remove(raw)  # after the append: in one list or the other throughout

    def waiting(self) -> List[RingBatch]:
        """The freed batches whose slots wait for their GPU work, or whose finaliser is under way."""
        return [raw for _, raw in list(self._pending)] + list(self._freeing)

    def freeing(self) -> bool:
        """Whether a batch's finaliser is under way, its slot neither queued nor given back yet."""
        return bool(self._freeing)

    def release_done(self, wait: bool = False) -> None:
        """Gives back the slots whose GPU work is done, oldest first.

        Args:
            wait: wait for the oldest slot's work if it is not done (a slot is needed now).
        """
        if not self._pending:
            return
        self._driver.current(self._ctx)
        while self._pending:
            event, raw = self._pending[0]
            if not self._driver.done(event):
                if not wait:
                    return
                self._driver.wait(event)
                wait = False
            self._pending.popleft()
            self._spare.append(event)
            raw.release()

    def describe(self) -> str:
        """Where this process's device-slot batches are, for an error that says why no batch comes:
        those your code still references, and those freed and waiting for the GPU work queued then."""
        said = f"{len(self._live)} batch(es) on the GPU still referenced, {len(self._pending)} freed and waiting for " \
               "the GPU work queued when they were freed"
        if self._pending and not self.closed and os.getpid() == self._pid:
            try:
                self._driver.current(self._ctx)
                done = self._driver.done(self._pending[0][0])
                said += f" (the oldest's work {'is done' if done else 'is not done'})"
            except RuntimeError as e:
                said += f" (the oldest's work could not be queried: {e})"
        return said

    def close(self) -> None:
        """Waits for every pending slot's work, gives them back, and closes the allocations (before
        the producer stops). A tensor still viewing one then reads freed memory: keep what you need
        with ``.clone()``. Idempotent; in a forked child, forgets them."""
        if self.closed:
            return
        self.closed = True
        if os.getpid() != self._pid:
            return
        if self._live:
            # As torch.multiprocessing's CUDA tensors, which are valid while their producer lives: a
            # kernel reading one after this fails with an illegal memory access.
            say_once("device-slots-live", f"stoke.DataLoader: {len(self._live)} batch(es) from the GPU still referenced "
                                          "when their producer stopped (close(), or a new iterator mid-epoch): their "
                                          "images are not valid any more; keep what you need with images.clone()")
        self._driver.current(self._ctx)
        while self._pending:
            event, raw = self._pending.popleft()
            self._driver.wait(event)
            self._spare.append(event)
            raw.release()
        for e in self._spare:
            self._driver.destroy(e)
        self._spare.clear()
        for i, p in enumerate(self._pointers):
            if p is not None:
                self._driver.close(p)
                self._pointers[i] = None
        self._driver.release(self._dev)
