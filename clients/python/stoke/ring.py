"""Consume batches that ``stoke serve`` decodes into a shared-memory ring, zero-copy.

    from stoke import Ring

    with Ring("/dev/shm/train") as ring:
        for batch in ring:                      # releases the previous batch on each step
            x = torch.from_numpy(batch.pixels)  # views the slot: no copy
            y = torch.from_numpy(batch.labels)

The ring's format and protocol are native/stoke_ring.h and docs/shared-memory.md; this module
repeats them with the standard library's mmap and numpy. Every header field is checked before
any slot is read, so a truncated, foreign or hostile file gives RingFormatError, never an
out-of-bounds read.

A batch's arrays view the ring's memory. After the batch is released the producer refills that
memory: copy what you keep (``batch.pixels.copy()``, or move it to the GPU) before releasing.
Memory ordering. The hand-offs (a batch published, a slot released, the end of the stream, a
failure, heartbeats) are releases on the writer's side and acquires on the reader's in Java
(io.stoke.ring.RingState, SlotHeader) and C (stoke_ring.h's C11 atomics). Python has no atomics
and no fence, so this client gets the same guarantees from two facts, and refuses to attach where
the first does not hold:
  - x86-64 is total-store-order: the processor never reorders a load with an earlier load, nor a
    store with an earlier store, so on x86-64 every aligned load is an acquire and every aligned
    store a release;
  - each access below is one aligned 4- or 8-byte numpy element load or store, made by a separate
    call from the interpreter, which the C compiler cannot move across another.
The comments at each hand-off below say which ordering they rely on.
"""

import collections
import errno
import fcntl
import mmap
import os
import platform
import re
import stat
import threading
import time
from typing import Deque, Iterator, List, Optional, Tuple, Union

import numpy as np

from ._closing import Closeable
from ._settings import say_once

__all__ = ["Ring", "RingBatch", "RingFormatError", "ProducerGoneError", "RingBusyError", "RingOwnerError", "attach"]

# ---- the layout (native/stoke_ring.h; the Java test suite checks that this copy agrees) ----
MAGIC = 0x474E52454B4F5453
VERSION = 1
PAGE = 4096
CACHE_LINE = 64
HEADER_LENGTH = 4096

MAGIC_OFFSET = 0
VERSION_OFFSET = 8
HEADER_LENGTH_OFFSET = 12
TOTAL_LENGTH_OFFSET = 16
SLOT_COUNT_OFFSET = 24
SAMPLES_PER_SLOT_OFFSET = 28
SLOT_STRIDE_OFFSET = 32
SAMPLE_BYTES_OFFSET = 40
DTYPE_OFFSET = 48
DIM_LAYOUT_OFFSET = 52
SHAPE_OFFSET = 56
LABEL_TYPE_OFFSET = 68
READY_QUEUE_OFFSET_OFFSET = 72
FREE_QUEUE_OFFSET_OFFSET = 80
QUEUE_LENGTH_OFFSET = 88
SLOT_LABELS_OFFSET_OFFSET = 92
SLOTS_OFFSET_OFFSET = 96
SLOT_INDICES_OFFSET_OFFSET = 104
SLOT_STATUS_OFFSET_OFFSET = 108
SLOT_PIXELS_OFFSET_OFFSET = 112
PRODUCER_PID_OFFSET = 128
PRODUCER_HEARTBEAT_OFFSET = 136
STATE_OFFSET = 144
PUBLISHED_OFFSET = 152
REDELIVERED_OFFSET = 160
CONSUMER_PID_OFFSET = 192
CONSUMER_HEARTBEAT_OFFSET = 200
CONSUMED_OFFSET = 208
CONSUMER_WAIT_NANOS_OFFSET = 216

SLOT_SEQUENCE_OFFSET = 0
SLOT_EPOCH_OFFSET = 8
SLOT_BATCH_INDEX_OFFSET = 16
SLOT_SAMPLE_COUNT_OFFSET = 24
SLOT_SKIPPED_COUNT_OFFSET = 28
SLOT_PIXEL_BYTES_OFFSET = 32
SLOT_DECODE_NANOS_OFFSET = 40
SLOT_SOURCE_BYTES_OFFSET = 48
SLOT_FLAGS_OFFSET = 56
SLOT_STATE_OFFSET = 60
SLOT_HEADER_LENGTH = 64

SLOT_FLAG_FAILED = 1
SLOT_FLAG_LAST_IN_EPOCH = 2
SLOT_STATE_FREE = 0
SLOT_STATE_FILLING = 1
SLOT_STATE_READY = 2
SLOT_STATE_HELD = 3
DTYPE_UINT8 = 1
DTYPE_FLOAT32 = 2
LAYOUT_HWC = 0
LAYOUT_CHW = 1
LABEL_INT32 = 1
STATE_RUNNING = 0
STATE_END_OF_STREAM = 1
STATE_PRODUCER_FAILED = 2

MSG_SLOT = 1
QUEUE_TAIL_POSITION_OFFSET = 128
QUEUE_HEAD_CACHE_POSITION_OFFSET = 256
QUEUE_HEAD_POSITION_OFFSET = 384
QUEUE_TRAILER_LENGTH = 768
QUEUE_RECORD_HEADER_LENGTH = 8
QUEUE_RECORD_ALIGNMENT = 8
QUEUE_PADDING_MSG_TYPE = -1

HEARTBEAT_INTERVAL_MILLIS = 50
PRODUCER_TIMEOUT_MILLIS = 5000

#: Sample status codes, as in the slot's status array.
# Sample status codes: defined by the Java enum io.stoke.loader.error.SampleStatus, repeated
# here and in stoke_ring.h (STOKE_SAMPLE_*); the Java tests check this copy name by name.
SAMPLE_OK = 0
SAMPLE_READ_ERROR = 1
SAMPLE_EMPTY_FILE = 2
SAMPLE_NOT_IMAGE = 3
SAMPLE_CORRUPT = 4
SAMPLE_TRUNCATED = 5
SAMPLE_TOO_LARGE = 6
SAMPLE_UNSUPPORTED = 7
SAMPLE_NO_IMAGE = 8
SAMPLE_NO_LABEL = 9
SAMPLE_BAD_LABEL = 10
SAMPLE_MEMBER_TRUNCATED = 11
SAMPLE_BAD_RAW = 12
SAMPLE_FORMAT_NOT_DECODED = 13

SAMPLE_STATUS = {SAMPLE_OK: "ok", SAMPLE_READ_ERROR: "read error", SAMPLE_EMPTY_FILE: "empty file",
                 SAMPLE_NOT_IMAGE: "not an image", SAMPLE_CORRUPT: "corrupt", SAMPLE_TRUNCATED: "truncated",
                 SAMPLE_TOO_LARGE: "too large", SAMPLE_UNSUPPORTED: "unsupported", SAMPLE_NO_IMAGE: "no image member",
                 SAMPLE_NO_LABEL: "no .cls label", SAMPLE_BAD_LABEL: "bad label",
                 SAMPLE_MEMBER_TRUNCATED: "member truncated", SAMPLE_BAD_RAW: "bad raw sample",
                 SAMPLE_FORMAT_NOT_DECODED: "format not decoded"}


# Machines whose processors keep loads and stores in program order (see the module's docstring).
_TSO_MACHINES = ("x86_64", "AMD64")


def _view(mm, dtype, shape, offset):
    """An array over ``mm[offset:]`` that holds a buffer export of the mapping, so that ``mm.close()``
    cannot unmap it while the array lives (it raises BufferError, and the mapping goes with the last
    view). ``np.ndarray(buffer=mm)`` would release the export at once, and a batch used after its
    ring was closed would read unmapped memory."""
    count = 1
    for d in shape:
        count *= d
    return np.frombuffer(mm, dtype=dtype, count=count, offset=offset).reshape(shape)


def image_format(head: Union[bytes, bytearray, memoryview]) -> Optional[str]:
    """The image format that ``head`` (a file's first 12 bytes or more) begins with, by the signatures
    Stoke's producer tells formats by (io.stoke.loader.format.ImageFormat), or None.

    Args:
        head: the file's first bytes.

    Returns:
        The format's usual name ("PNG", "TIFF", ...), or None when no signature matches.
    """
    h = bytes(head[:12])
    if h[:2] == b"\xff\xd8":
        return "JPEG"
    if h[:8] == b"\x89PNG\r\n\x1a\n":
        return "PNG"
    if h[:4] == b"RIFF" and h[8:12] == b"WEBP":
        return "WebP"
    if h[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if h[:4] in (b"II*\0", b"MM\0*", b"II+\0"):
        return "TIFF"
    if h[:2] == b"\xff\x0a" or h[:12] == b"\0\0\0\x0cJXL \r\n\x87\n":
        return "JPEG XL"
    if h[:8] == b"\0\0\0\x0cjP  " or h[:4] == b"\xff\x4f\xff\x51":
        return "JPEG 2000"
    if h[4:8] == b"ftyp":
        if h[8:12] in (b"avif", b"avis"):
            return "AVIF"
        if h[8:12] in (b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs", b"mif1", b"msf1"):
            return "HEIC/HEIF"
    if h[:2] == b"BM" and len(h) >= 3:
        return "BMP"
    if len(h) >= 3 and h[0:1] == b"P" and h[1:2] in b"1234567" and h[2:3] in b" \t\r\n":
        return "PNM (PBM/PGM/PPM)"
    return None


class RingFormatError(ValueError):
    """The file is not a ring this client can read: truncated, foreign, other version, inconsistent."""


class ProducerGoneError(RuntimeError):
    """The producer's process is gone, failed, or stopped its heartbeat: no further batch will come."""


class RingBusyError(RuntimeError):
    """Another live consumer is attached to the ring."""


class RingOwnerError(PermissionError):
    """A named ring that another user could have planted or can write: a symbolic link, not a regular
    file, owned by another user, or writable by its group or others."""


# A path that names a descriptor this process inherited (stoke.DataLoader's anonymous file), as
# io.stoke.ring.InheritedDescriptor: reachable by no other user, and itself a link, so not checked.
_INHERITED_DESCRIPTOR = re.compile(r"/(dev|proc/self)/fd/[0-9]+")


def _open_owned(path: str) -> int:
    """Opens the named ring at ``path`` for reading and writing, never through a symbolic link, and
    checks the file it opened (fstat, so nothing can swap it between the check and the use): a
    regular file owned by this process's user that neither its group nor others can write, as the
    producer creates it (0600). The producer makes the same check (io.stoke.ring.OwnedRingFile).

    Returns:
        The descriptor (close-on-exec).

    Raises:
        FileNotFoundError: no file at ``path``.
        RingOwnerError: in one sentence naming the path, its owner and its mode.
    """
    if _INHERITED_DESCRIPTOR.fullmatch(path):
        return os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        # O_NONBLOCK: a FIFO planted at the path must not hang the open; it is refused below.
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        raise RingOwnerError(f"refusing the ring {path}: it is a symbolic link (to "
                                          f"{os.readlink(path)}), and a ring is never opened through one") from None
    try:
        st = os.fstat(fd)
        euid = os.geteuid()
        if not stat.S_ISREG(st.st_mode):
            raise RingOwnerError(f"refusing the ring {path}: it is not a regular file (mode "
                                              f"{st.st_mode:o}), owned by uid {st.st_uid}")
        if st.st_uid != euid or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise RingOwnerError(f"refusing the ring {path}: it is owned by uid {st.st_uid} with mode "
                                              f"{stat.S_IMODE(st.st_mode):04o}, and a ring must be owned by this "
                                              f"process's user (uid {euid}) and writable by no one else")
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _align(v, a):
    return (v + a - 1) & -a


def _next_pow2(v):
    p = 1
    while p < v:
        p <<= 1
    return p


def _alive(pid):
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Geometry:
    """Every offset recomputed from the sizes, as RingGeometry does in Java."""

    def __init__(self, slot_count, samples, dtype, layout, shape):
        self.slot_count, self.samples, self.dtype, self.layout, self.shape = slot_count, samples, dtype, layout, shape
        self.element_size = 4 if dtype == DTYPE_FLOAT32 else 1
        self.sample_bytes = shape[0] * shape[1] * shape[2] * self.element_size
        self.labels_offset = SLOT_HEADER_LENGTH
        self.indices_offset = _align(self.labels_offset + 4 * samples, CACHE_LINE)
        self.status_offset = _align(self.indices_offset + 8 * samples, CACHE_LINE)
        self.pixels_offset = _align(self.status_offset + 4 * samples, PAGE)
        self.slot_stride = _align(self.pixels_offset + self.sample_bytes * samples, PAGE)
        self.queue_capacity = max(1024, _next_pow2(slot_count * 32))
        self.queue_length = self.queue_capacity + QUEUE_TRAILER_LENGTH
        self.ready_queue_offset = HEADER_LENGTH
        self.free_queue_offset = self.ready_queue_offset + _align(self.queue_length, CACHE_LINE)
        self.slots_offset = _align(self.free_queue_offset + self.queue_length, PAGE)
        self.total_length = self.slots_offset + self.slot_stride * slot_count  # Python ints: no overflow


def validate(buf: Union[bytes, bytearray, memoryview, mmap.mmap], file_size: int, name: str = "ring") -> _Geometry:
    """Checks a ring header against the geometry its sizes give.

    Args:
        buf: the ring's bytes, at least its header (a mapping of the whole file for the full check).
        file_size: the file's size in bytes.
        name: what error messages call the ring.

    Returns:
        The geometry (every offset recomputed from the sizes).

    Raises:
        RingFormatError: naming the first field that is wrong.
    """
    if file_size < HEADER_LENGTH or len(buf) < HEADER_LENGTH:
        raise RingFormatError(f"{name}: {file_size} bytes is too short for a ring header ({HEADER_LENGTH} bytes); "
                              "truncated or not a Stoke ring")
    h = bytes(buf[:HEADER_LENGTH])

    def i32(off):
        return int.from_bytes(h[off:off + 4], "little", signed=True)

    def i64(off):
        return int.from_bytes(h[off:off + 8], "little", signed=True)

    def expect(field, found, expected):
        if found != expected:
            raise RingFormatError(f"{name}: {field} is {found}, the geometry gives {expected}")

    magic = int.from_bytes(h[0:8], "little")
    if magic != MAGIC:
        raise RingFormatError(f"{name}: bad magic 0x{magic:x} (expected 0x{MAGIC:x}, \"STOKERNG\"): not a Stoke ring")
    if i32(VERSION_OFFSET) != VERSION:
        raise RingFormatError(f"{name}: layout version {i32(VERSION_OFFSET)}, this client reads version {VERSION}")
    expect("header length", i32(HEADER_LENGTH_OFFSET), HEADER_LENGTH)
    total = i64(TOTAL_LENGTH_OFFSET)
    if total < HEADER_LENGTH or total > file_size:
        raise RingFormatError(f"{name}: total length {total} does not fit in the file's {file_size} bytes")
    slot_count, samples = i32(SLOT_COUNT_OFFSET), i32(SAMPLES_PER_SLOT_OFFSET)
    dtype, layout = i32(DTYPE_OFFSET), i32(DIM_LAYOUT_OFFSET)
    shape = (i32(SHAPE_OFFSET), i32(SHAPE_OFFSET + 4), i32(SHAPE_OFFSET + 8))
    if not 1 <= slot_count <= 1 << 16:
        raise RingFormatError(f"{name}: bad geometry: slotCount must be in [1, 65536]: {slot_count}")
    if not 1 <= samples <= 1 << 20:
        raise RingFormatError(f"{name}: bad geometry: samplesPerSlot must be in [1, 1048576]: {samples}")
    if dtype not in (DTYPE_UINT8, DTYPE_FLOAT32):
        raise RingFormatError(f"{name}: bad geometry: unknown dtype {dtype}")
    if layout not in (LAYOUT_HWC, LAYOUT_CHW):
        raise RingFormatError(f"{name}: unknown dimension layout {layout}")
    expect("label type", i32(LABEL_TYPE_OFFSET), LABEL_INT32)
    if min(shape) < 1 or shape[0] * shape[1] * shape[2] > 2**31 - 1:
        raise RingFormatError(f"{name}: bad geometry: bad sample shape {shape[0]}x{shape[1]}x{shape[2]}")
    g = _Geometry(slot_count, samples, dtype, layout, shape)
    expect("sample bytes", i64(SAMPLE_BYTES_OFFSET), g.sample_bytes)
    expect("slot stride", i64(SLOT_STRIDE_OFFSET), g.slot_stride)
    expect("ready queue offset", i64(READY_QUEUE_OFFSET_OFFSET), g.ready_queue_offset)
    expect("free queue offset", i64(FREE_QUEUE_OFFSET_OFFSET), g.free_queue_offset)
    expect("queue length", i32(QUEUE_LENGTH_OFFSET), g.queue_length)
    expect("slots offset", i64(SLOTS_OFFSET_OFFSET), g.slots_offset)
    expect("slot labels offset", i32(SLOT_LABELS_OFFSET_OFFSET), g.labels_offset)
    expect("slot indices offset", i32(SLOT_INDICES_OFFSET_OFFSET), g.indices_offset)
    expect("slot status offset", i32(SLOT_STATUS_OFFSET_OFFSET), g.status_offset)
    expect("slot pixels offset", i32(SLOT_PIXELS_OFFSET_OFFSET), g.pixels_offset)
    expect("total length", total, g.total_length)
    if g.total_length > len(buf):
        raise RingFormatError(f"{name}: ring needs {g.total_length} bytes, mapping holds {len(buf)}")
    return g


class _Queue:
    """One Agrona OneToOneRingBuffer of int32 slot numbers inside the mapping."""

    def __init__(self, mm, offset, capacity, slot_count):
        self.cap = capacity
        self.mask = capacity - 1
        self.slot_count = slot_count
        # int32 view of the records, int64 view of the trailer: aligned single-element stores.
        self.rec = np.frombuffer(mm, dtype="<i4", count=capacity // 4, offset=offset)
        self.rec64 = np.frombuffer(mm, dtype="<i8", count=capacity // 8, offset=offset)
        self.trailer = np.frombuffer(mm, dtype="<i8", count=QUEUE_TRAILER_LENGTH // 8, offset=offset + capacity)

    def poll(self):
        """The next slot number, or -1 when the queue is empty."""
        rec, tr = self.rec, self.trailer
        head_i = QUEUE_HEAD_POSITION_OFFSET // 8
        for _ in range(2):  # a padding record may precede the message
            head = int(tr[head_i])
            if head % QUEUE_RECORD_ALIGNMENT:
                # Records start at multiples of 8: any other head is a corrupt or hostile file.
                raise RingFormatError(f"queue head {head} is not a record boundary: the ring is corrupt")
            index = head & self.mask
            # Acquire (TSO, see the module's docstring): the writer commits the length last, so the
            # record, and for the ready queue the slot's contents, are visible once it is.
            length = int(rec[index >> 2])
            if length <= 0:
                return -1
            if length > self.cap - index:
                raise RingFormatError("ready queue record crosses the end of the queue")
            mtype = int(rec[(index >> 2) + 1])
            slot = int(rec[(index >> 2) + 2])
            # Release: the writer may reuse the record's bytes once the head passes them, and the
            # reads above come first in program order (stores are not reordered with earlier loads).
            tr[head_i] = head + _align(length, QUEUE_RECORD_ALIGNMENT)
            if mtype == QUEUE_PADDING_MSG_TYPE:
                continue
            if not 0 <= slot < self.slot_count:
                raise RingFormatError(f"ready queue holds slot number {slot}, ring has {self.slot_count}")
            return slot
        return -1

    def offer(self, slot, held=None):
        """Agrona's tryClaim + commit of one int32; False when full (impossible in a valid ring).

        Args:
            slot: the slot number to write.
            held: a dict keyed by slot number, from which ``slot`` is deleted with the commit (see
                Ring._offer). From the claim to the return there is no call and no backward jump,
                where CPython would run a signal's handler: an interrupt lands before the claim
                (nothing written) or after both the commit and the delete.
        """
        rec, rec64, tr, cap, mask = self.rec, self.rec64, self.trailer, self.cap, self.mask
        tail_i, cache_i, head_i = (QUEUE_TAIL_POSITION_OFFSET // 8, QUEUE_HEAD_CACHE_POSITION_OFFSET // 8,
                                   QUEUE_HEAD_POSITION_OFFSET // 8)
        record_length = QUEUE_RECORD_HEADER_LENGTH + 4
        aligned = _align(record_length, QUEUE_RECORD_ALIGNMENT)
        required = aligned + QUEUE_RECORD_HEADER_LENGTH
        head, tail = int(tr[cache_i]), int(tr[tail_i])
        if tail % QUEUE_RECORD_ALIGNMENT:
            raise RingFormatError(f"queue tail {tail} is not a record boundary: the ring is corrupt")
        if required > cap - (tail - head):
            head = int(tr[head_i])
            if required > cap - (tail - head):
                return False
            tr[cache_i] = head
        padding = 0
        record_index = tail & mask
        to_end = cap - record_index
        write_index = record_index
        next_tail = tail + aligned
        if aligned == to_end:
            tr[tail_i] = next_tail
            rec64[0] = 0  # pre-zero the next record's header
        else:
            if required > to_end:
                write_index = 0
                head_index = head & mask
                if required > head_index:
                    head = int(tr[head_i])
                    head_index = head & mask
                    if required > head_index:
                        write_index = -1
                        next_tail = tail
                    tr[cache_i] = head
                padding = to_end
                next_tail += padding
            tr[tail_i] = next_tail
            if padding:
                rec64[0] = 0
                rec[record_index >> 2] = -padding
                rec[(record_index >> 2) + 1] = QUEUE_PADDING_MSG_TYPE
                rec[record_index >> 2] = padding
            if write_index < 0:
                return False
            rec64[(write_index + aligned) >> 3] = 0  # pre-zero the next record's header
        w = write_index >> 2
        rec[w] = -record_length
        rec[w + 1] = MSG_SLOT
        rec[w + 2] = slot
        rec[w] = record_length  # commit, a release (TSO): the reader sees the record from here on
        if held is not None:
            del held[slot]
        return True


class RingBatch:
    """One batch, viewed in place in its ring slot. Release it (or use ``with``) to give the slot back.

    Made by :meth:`Ring.next`, never directly; ``stoke.DataLoader`` yields :class:`stoke.Batch`, the
    torch tensors made from one (this was ``stoke.ring.Batch``, a name kept one release, deprecated).

    Attributes:
        pixels (numpy.ndarray): uint8 ``[n, H, W, 3]`` or float32 ``[n, 3, H, W]``.
        labels (numpy.ndarray): int32 ``[n]``.
        indices (numpy.ndarray): int64 ``[n]``, each sample's dataset index.
        status (numpy.ndarray): int32 ``[n]``, 0 for a sample that decoded, else a code of
            ``SAMPLE_STATUS`` (and its pixels are zero).
        sequence (int): the batch's number in the producer's stream.
        epoch (int), batch_index (int): where the batch is in the producer's order.
        size (int): ``n``, the samples in this batch.
        owner (weakref.ref, optional): where something else releases the batch when an object
            goes (``stoke.DataLoader``, when its views' last one does), a weak reference to it.

    Example::

        with ring.next() as batch:
            kept = batch.pixels.copy()   # the arrays view the slot until it is released
    """

    __slots__ = ("_ring", "slot", "pixels", "labels", "indices", "status", "sequence", "epoch", "batch_index",
                 "size", "flags", "owner")

    def __init__(self, ring: "Ring", slot: int) -> None:
        g, mm = ring._g, ring._mm
        base = g.slots_offset + g.slot_stride * slot
        hdr = ring._slot_headers[slot]
        n = int(hdr[SLOT_SAMPLE_COUNT_OFFSET // 4])
        if not 0 <= n <= g.samples:
            raise RingFormatError(f"slot {slot} claims {n} samples, capacity {g.samples}")
        h64 = ring._slot_headers64[slot]
        self._ring, self.slot, self.size = ring, slot, n
        self.sequence = int(h64[SLOT_SEQUENCE_OFFSET // 8])
        self.epoch = int(h64[SLOT_EPOCH_OFFSET // 8])
        self.batch_index = int(h64[SLOT_BATCH_INDEX_OFFSET // 8])
        self.flags = int(hdr[SLOT_FLAGS_OFFSET // 4])
        dtype = np.float32 if g.dtype == DTYPE_FLOAT32 else np.uint8
        self.pixels = _view(mm, dtype, (n,) + g.shape, base + g.pixels_offset)
        self.labels = _view(mm, "<i4", (n,), base + g.labels_offset)
        self.indices = _view(mm, "<i8", (n,), base + g.indices_offset)
        self.status = _view(mm, "<i4", (n,), base + g.status_offset)
        self.owner = None

    @property
    def failed(self) -> bool:
        """A sample failed while the producer ran with ``--on-error fail`` (see ``status``)."""
        return bool(self.flags & SLOT_FLAG_FAILED)

    @property
    def last_in_epoch(self) -> bool:
        """The producer's last batch of its epoch."""
        return bool(self.flags & SLOT_FLAG_LAST_IN_EPOCH)

    @property
    def _released(self) -> bool:
        # The ring's held dict is the one record: the free queue's commit removes the batch from it
        # (see Ring._offer), so a release an interrupt cut short reads as not made, and is made again.
        return self._ring._open.get(self.slot) is not self

    def release(self) -> None:
        """Gives the slot back to the producer; idempotent. The arrays then view memory being refilled."""
        if not self._released:
            self._ring._release(self)

    def __enter__(self) -> "RingBatch":
        return self

    def __exit__(self, *exc: object) -> bool:
        self.release()
        return False

    def __repr__(self) -> str:
        return f"RingBatch(sequence={self.sequence}, epoch={self.epoch}, index={self.batch_index}, size={self.size})"


class Ring(Closeable):
    """The consumer side of a ring file written by ``stoke serve --ring PATH``.

    Attaching maps the file, validates the header, checks that the producer is alive and takes the
    consumer seat (waiting up to ``timeout`` seconds for the producer to reclaim the seat of a
    consumer that died). Batches handed out and not released when this consumer closes or dies are
    delivered again to the next consumer.

    A named ring is opened without following a symbolic link and only when it is a regular file of
    this process's user that no one else can write (as ``stoke serve`` makes it: mode 0600), so a
    file another user planted at the path is refused. The process that attached is the consumer: a
    forked child's copy neither reads nor releases, and closing it only unmaps the child's copy.

    Args:
        path (str or os.PathLike): the ring file (``/dev/shm/NAME``, or ``/dev/fd/N``).
        timeout (float, optional): seconds to wait for the seat of a consumer that died
            (default: ``10.0``).
        spin (float, optional): seconds that :meth:`next` busy-polls before it sleeps between
            polls; busy polling gives the lowest hand-off latency, sleeping saves a core
            (default: ``0.001``).
        poll_sleep (float, optional): the first sleep between polls, in seconds (default: ``50e-6``).
        release_on_next (bool, optional): :meth:`next` releases the batch it handed out before
            (default: ``True``).
        max_poll_sleep (float, optional): the sleep between polls doubles up to this (default:
            ``poll_sleep``, no back-off).

    Raises:
        FileNotFoundError: no file at ``path``.
        RingFormatError: the file is not a ring this client reads.
        ProducerGoneError: the producer is gone, failed, or stopped its heartbeat.
        RingBusyError: another live consumer holds the seat.
        RingOwnerError: the named ring is a symbolic link, not a regular file, owned by another
            user, or writable by its group or others (one sentence naming its owner and mode).
        RuntimeError: the machine is not x86-64 (see the module's docstring).

    Example::

        with stoke.Ring("/dev/shm/train") as ring:
            for batch in ring:
                x = torch.from_numpy(batch.pixels)
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], timeout: float = 10.0, spin: float = 0.001,
                 poll_sleep: float = 50e-6, release_on_next: bool = True,
                 max_poll_sleep: Optional[float] = None) -> None:
        self.path = str(path)
        self.release_on_next = release_on_next
        self._spin, self._poll_sleep = spin, poll_sleep
        self._max_poll_sleep = poll_sleep if max_poll_sleep is None else max(poll_sleep, max_poll_sleep)
        self._mm = None
        self._open = {}
        # Releases may come from any thread (stoke.DataLoader releases a slot when the last tensor
        # viewing it is freed); the free queue has one writer at a time. Reentrant, because that
        # release is a finaliser, which the garbage collector may run between any two bytecodes of a
        # release already under way on the same thread (see _release).
        self._release_lock = threading.RLock()
        self._offering = False  # the lock's owner is in _offer, giving a slot back
        # Releases waiting for that offer to end; each leaves it only once made (see _release).
        self._deferred: Deque[RingBatch] = collections.deque()
        if platform.machine() not in _TSO_MACHINES:
            raise RuntimeError(f"the Python ring client relies on x86-64's total store order for its memory ordering "
                               f"and this machine is {platform.machine()}; read the ring with the C consumer "
                               f"(native/stoke_ring.h), whose C11 atomics order every hand-off")
        # The process that attaches owns the seat; a forked child holds a copy of this object and
        # of the mapping, and must never act for the parent (see _forked).
        self._pid = os.getpid()
        try:
            fd = _open_owned(self.path)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no ring here (is `stoke serve` running?)", self.path) from None
        try:
            size = os.fstat(fd).st_size
            if size < HEADER_LENGTH:
                raise RingFormatError(f"{self.path}: {size} bytes is too short for a ring header ({HEADER_LENGTH} bytes); "
                                      "truncated or not a Stoke ring")
            self._mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            self._g = validate(self._mm, size, self.path)
            self._h32 = np.frombuffer(self._mm, dtype="<i4", count=HEADER_LENGTH // 4)
            self._h64 = np.frombuffer(self._mm, dtype="<i8", count=HEADER_LENGTH // 8)
            self._check_producer()
            self._take_seat(fd, timeout)
        except BaseException:
            self._unmap()
            raise
        finally:
            os.close(fd)
        g = self._g
        self._ready = _Queue(self._mm, g.ready_queue_offset, g.queue_capacity, g.slot_count)
        self._free = _Queue(self._mm, g.free_queue_offset, g.queue_capacity, g.slot_count)
        self._slot_headers = [np.frombuffer(self._mm, dtype="<i4", count=SLOT_HEADER_LENGTH // 4,
                                            offset=g.slots_offset + g.slot_stride * s) for s in range(g.slot_count)]
        self._slot_headers64 = [np.frombuffer(self._mm, dtype="<i8", count=SLOT_HEADER_LENGTH // 8,
                                              offset=g.slots_offset + g.slot_stride * s) for s in range(g.slot_count)]
        self._h64[CONSUMER_HEARTBEAT_OFFSET // 8] = int(time.time() * 1000)
        self._last = None
        self._undelivered = -1  # a slot taken from the ready queue and not yet handed out (see _hand_out)

    def _forked(self) -> bool:
        """Whether this process is a fork of the one that attached: its child's copy of the object
        and the mapping, which must never act for the parent. A pid check rather than
        ``os.register_at_fork``: it also sees a fork made in C, which runs no Python hook."""
        return os.getpid() != self._pid

    # ---- attach ----

    def _take_seat(self, fd, timeout):
        """0 -> our pid under an fcntl write lock on byte 0 (Python has no compare-and-swap)."""
        me = os.getpid()
        deadline = time.monotonic() + timeout
        seat_i = CONSUMER_PID_OFFSET // 8
        while True:
            fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)
            try:
                seat = int(self._h64[seat_i])
                if seat == 0:
                    self._h64[seat_i] = me
                    return
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)
            if seat > 0 and _alive(seat):
                raise RingBusyError(f"{self.path} already has a consumer (pid {seat})")
            if time.monotonic() > deadline:
                raise RingBusyError(f"{self.path}: the producer has not reclaimed the seat of consumer {abs(seat)} "
                                    f"within {timeout} s")
            self._check_producer()
            # The producer frees a dead consumer's seat in shared memory, which nothing signals here.
            time.sleep(0.005)

    def _check_producer(self):
        if int(self._h32[STATE_OFFSET // 4]) == STATE_PRODUCER_FAILED:
            raise ProducerGoneError(f"{self.path}: the producer reported a failure (see its log)")
        pid = int(self._h64[PRODUCER_PID_OFFSET // 8])
        if not _alive(pid):
            raise ProducerGoneError(f"{self.path}: the producer (pid {pid}) is gone")
        age = int(time.time() * 1000) - int(self._h64[PRODUCER_HEARTBEAT_OFFSET // 8])
        if age > PRODUCER_TIMEOUT_MILLIS:
            raise ProducerGoneError(f"{self.path}: the producer (pid {pid}) has not written its heartbeat for {age} ms")

    # ---- properties ----

    @property
    def batch_size(self) -> int:
        """Samples per slot: a batch's largest size."""
        return self._g.samples

    @property
    def sample_shape(self) -> Tuple[int, int, int]:
        """One sample's shape: ``(H, W, 3)`` or ``(3, H, W)``."""
        return self._g.shape

    @property
    def slot_count(self) -> int:
        """The ring's slots: batches decoded ahead plus batches held."""
        return self._g.slot_count

    @property
    def slot_bytes(self) -> int:
        """One slot's size in bytes, its header and arrays included."""
        return self._g.slot_stride

    @property
    def total_bytes(self) -> int:
        """The ring's size in bytes: its header, queues and slots."""
        return self._g.total_length

    @property
    def held(self) -> int:
        """Batches handed out and not yet released."""
        return len(self._open)

    def held_batches(self) -> List[RingBatch]:
        """The batches handed out and not yet released, in no set order."""
        return list(self._open.values())

    @property
    def dtype(self) -> np.dtype:
        """The pixels' dtype: uint8 or float32."""
        return np.dtype(np.float32 if self._g.dtype == DTYPE_FLOAT32 else np.uint8)

    def mapped_region(self) -> Tuple[int, int]:
        """Where this process maps the ring, for registering it with a device runtime
        (``cudaHostRegister``), which needs the address of the first byte and the length.

        Returns:
            ``(address, length)`` of the whole mapping.

        Raises:
            ValueError: the ring is closed.
        """
        if self._mm is None:
            raise ValueError("ring is closed")
        return int(self._h32.ctypes.data), len(self._mm)

    # ---- batches ----

    def next(self, timeout: Optional[float] = None) -> Optional[RingBatch]:
        """The next batch, waiting for the producer to publish one.

        With ``release_on_next`` (the default), the batch handed out before is released first.

        Args:
            timeout: seconds to wait for a batch (``None``: as long as the producer lives).

        Returns:
            The batch, or None after the producer's last one.

        Raises:
            ValueError: the ring is closed.
            RuntimeError: this process is a fork of the one that attached (attach a Ring of its own).
            ProducerGoneError: the producer is gone (seen within about 10 ms of polling).
            TimeoutError: ``timeout`` seconds passed without a batch.
            RingFormatError: a queue or slot header is corrupt.
        """
        if self._mm is None:
            raise ValueError("ring is closed")
        if self._forked():
            raise RuntimeError(f"{self.path}: this Ring was attached by process {self._pid} and this process "
                               f"({os.getpid()}) is a fork of it; a forked child never reads, releases or detaches its "
                               "parent's ring (the seat, the batches held and the producer stay the parent's): "
                               "attach a Ring of its own in the process that reads it")
        if self.release_on_next and self._last is not None:
            self._last.release()
            self._last = None
        if self._deferred:
            self._release_deferred()  # a release an interrupt cut short after it was queued
        start_ns = time.monotonic_ns()
        if self._undelivered >= 0:
            return self._hand_out(self._undelivered, start_ns)
        start = start_ns / 1e9
        last_check = start
        sleep = self._poll_sleep
        h32, h64, ready = self._h32, self._h64, self._ready
        while True:
            slot = ready.poll()
            # An acquire (TSO): the producer writes END_OF_STREAM with a release after its last
            # publish, so the poll after reading it sees every batch; that second poll is required.
            if slot < 0 and int(h32[STATE_OFFSET // 4]) == STATE_END_OF_STREAM:
                slot = ready.poll()
                if slot < 0:
                    return None
            if slot >= 0:
                # No call between the poll and these two stores: see _hand_out.
                self._slot_headers[slot][SLOT_STATE_OFFSET // 4] = SLOT_STATE_HELD
                self._undelivered = slot
                return self._hand_out(slot, start_ns)
            now = time.monotonic()
            if now - last_check >= 0.01:
                last_check = now
                h64[CONSUMER_HEARTBEAT_OFFSET // 8] = int(time.time() * 1000)
                self._check_producer()
            if timeout is not None and now - start > timeout:
                h64[CONSUMER_WAIT_NANOS_OFFSET // 8] += time.monotonic_ns() - start_ns
                raise TimeoutError(f"no batch from {self.path} within {timeout} s")
            if now - start > self._spin:
                # The ring's protocol: nothing wakes a reader across processes, so it polls, backing off.
                time.sleep(sleep)
                sleep = min(2 * sleep, self._max_poll_sleep)

    def _hand_out(self, slot: int, start_ns: int) -> RingBatch:
        """The batch in ``slot``, taken from the ready queue and marked HELD, handed out.

        Until it is recorded as held, ``_undelivered`` names it: a call that an exception ends
        first (a ``KeyboardInterrupt``: CPython runs a signal's handler at a call, a function's
        entry or a backward jump) leaves it to the next call, rather than a slot neither held nor
        free, which the producer would never get back.
        """
        batch = RingBatch(self, slot)
        waited = time.monotonic_ns() - start_ns
        beat = int(time.time() * 1000)
        # No call from here to the return: the batch is counted, recorded and handed out at once.
        h64 = self._h64
        h64[CONSUMED_OFFSET // 8] += 1  # only this consumer adds to it while attached
        # The producer's auto workers read the consumer's waiting as their stall.
        h64[CONSUMER_WAIT_NANOS_OFFSET // 8] += waited
        h64[CONSUMER_HEARTBEAT_OFFSET // 8] = beat
        self._open[slot] = batch
        self._last = batch
        self._undelivered = -1
        return batch

    def _release(self, batch: RingBatch) -> None:
        if self._forked():
            return  # the parent's batch (a finaliser run at the child's exit): the parent releases it
        with self._release_lock:
            # A batch's finaliser releases its slot, and the collector runs finalisers between any
            # two bytecodes, this thread's own offer included. A release nested there waits in
            # _deferred for the offer to end (two offers interleaved would corrupt the free queue);
            # nested anywhere else, it offers whatever waits, its own slot too.
            self._deferred.append(batch)
            if not self._offering:
                self._offer_deferred()

    def _release_deferred(self) -> None:
        """Makes the releases left waiting in ``_deferred`` (an interrupt ended the call that queued them)."""
        with self._release_lock:
            if not self._offering:
                self._offer_deferred()

    def _offer_deferred(self) -> None:
        """Offers each release waiting, under the release lock. A batch leaves ``_deferred`` only
        after its offer: one that an interrupt (a ``KeyboardInterrupt`` at any call) cuts short stays
        there, and the next release or ``next()`` makes it; ``_offer`` makes each once."""
        deferred = self._deferred
        while deferred:
            self._offering = True
            try:
                self._offer(deferred[0])
                deferred.popleft()
            finally:
                self._offering = False

    def _offer(self, batch: RingBatch) -> None:
        """Gives ``batch``'s slot back to the producer, once; under the release lock."""
        slot = batch.slot
        if self._mm is None or self._open.get(slot) is not batch:
            return  # made already, or detached (the held batches go to the next consumer)
        # FREE, then the offer's commit: both releases (TSO), in this order, so a producer that
        # takes the slot from the free queue never sees it HELD (it would reclaim it twice). An
        # interrupt between them leaves a FREE slot still held here: made again later, and a
        # producer reclaiming after this consumer's death offers FREE slots itself.
        self._slot_headers[slot][SLOT_STATE_OFFSET // 4] = SLOT_STATE_FREE
        # The commit deletes the batch from _open with no call between (see _Queue.offer): held
        # until committed, and never offered twice.
        if not self._free.offer(slot, self._open):
            raise RuntimeError("free queue full: a slot was released twice")

    def __iter__(self) -> Iterator[RingBatch]:
        while True:
            batch = self.next()
            if batch is None:
                return
            yield batch

    # ---- detach ----

    @property
    def closed(self) -> bool:
        """Whether the ring is detached (:meth:`close`), or was never attached."""
        return self.__dict__.get("_mm") is None

    def _close(self) -> None:
        """Detaches (``close()``): batches not released are delivered again to the next consumer.

        In a forked child (``os.fork``, ``multiprocessing``'s ``fork``), which holds a copy of its
        parent's ``Ring``, closing (or ``__del__`` at the child's exit) unmaps the child's copy of
        the mapping and nothing else: the seat and the batches stay the parent's.
        """
        if self._forked():
            # No lock: a thread of the parent may have held it at the fork, and none releases it here.
            self._open.clear()
            self._last = None
            self._unmap()
            return
        if self.release_on_next and self._last is not None and self._last._released:
            self._last = None
        with self._release_lock:
            # A release nested in the clear (a finaliser the collector runs) only waits: the batches
            # held go to the next consumer.
            self._offering = True
            try:
                self._open.clear()
                self._h64[CONSUMER_PID_OFFSET // 8] = -self._pid
                self._unmap()
            finally:
                self._deferred.clear()
                self._offering = False

    def _unmap(self):
        mm, self._mm = self._mm, None
        self._h32 = self._h64 = None
        self._ready = self._free = None
        self._slot_headers = self._slot_headers64 = None
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass  # arrays of batches still view it; the mapping goes when they do


def attach(path: Union[str, "os.PathLike[str]"], **kwargs: object) -> Ring:
    """Attaches to the ring at ``path``: the same as ``Ring(path, **kwargs)``.

    Args:
        path: the ring file.
        **kwargs: :class:`Ring`'s keywords.

    Returns:
        The attached :class:`Ring`.

    Example::

        ring = stoke.attach("/dev/shm/train", spin=0.0)
    """
    return Ring(path, **kwargs)


def __getattr__(name: str) -> object:
    # stoke.ring.Batch: RingBatch's old name, kept one release (said once), beside stoke.Batch, what
    # stoke.DataLoader yields.
    if name == "Batch":
        say_once("deprecated-ring-Batch", "stoke.ring.Batch is deprecated: it is stoke.ring.RingBatch (also "
                                          "stoke.RingBatch) now; the old name goes in the next release")
        return RingBatch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
