"""stoke.DataLoader(decode="gpu"|"auto") on the nvJPEG and CUDA test doubles (run by ./stoke test).

The producer opens the doubles (-Dstoke.cuda.path, -Dstoke.nvjpeg.path through STOKE_JAVA_OPTS),
which decode with libjpeg and run the CUDA kernels' own source on the host: every batch must equal
the one the CPU workers give for the same seed, bad files included. This checks the wiring from the
keyword to the ring; it is not a GPU verification (docs/gpu.md, "GPU decode").
"""

import contextlib
import ctypes
import gc
import io
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
import unittest.mock
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(HERE))

try:
    import numpy as np
    import torch
    import stoke
    from stoke import _device_slots
    import _aids  # tests/_aids.py
    MISSING = None
except ImportError as e:  # torch not installed: skip, loudly
    MISSING = f"{e.name} is not installed"

DOUBLE_DIR = CHECKOUT / "cli" / "target" / "cuda-double"
DOUBLE = DOUBLE_DIR / "libcuda_double.so"
LAUNCHER = str(CHECKOUT / "stoke")
TMP = None
DATA = None


def double_missing():
    """Why the doubles cannot run here, or None: the build writes the reason beside them."""
    if DOUBLE.exists():
        return None
    reason = DOUBLE_DIR / "UNAVAILABLE"
    return reason.read_text().strip() if reason.exists() else f"{DOUBLE} is not built (mvn install builds it)"


def setUpModule():
    global TMP, DATA
    if MISSING or double_missing():
        print(f"[stoke] SKIPPING the GPU decode DataLoader tests: {MISSING or double_missing()}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-gpu-"))
    DATA = TMP / "data"
    subprocess.run([LAUNCHER, "make-dataset", str(DATA), "--images", "30", "--seed", "5", "--classes", "3"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = sorted((DATA / sorted(os.listdir(DATA))[0]).iterdir())[0]
    (DATA / "z_bad").mkdir()
    (DATA / "z_bad" / "cut.jpg").write_bytes(first.read_bytes()[:1500])
    (DATA / "z_bad" / "text.jpg").write_bytes(b"not an image at all\n")


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


class _Owner:
    """Holds a device array alive for as long as a numpy view of its memory lives."""

    def __init__(self, view, array):
        self.array = array
        self.__array_interface__ = view.__array_interface__


class HostDoubleSide(_device_slots.CudaSide if not MISSING else object):
    """torch's CUDA side as the CUDA double sees it: its device memory is host memory, so a device
    slot's batch is read in place as a CPU tensor, and its streams are the NULL stream. It checks the
    wiring from the producer's allocations to the batches; it is not a GPU verification."""

    driver_library = str(DOUBLE)

    def available(self):
        return True

    def device(self):
        return 0

    def stream(self, device):
        return 0

    def as_tensor(self, array, device):
        face = array.__cuda_array_interface__
        self.tensors += 1
        dtype = np.dtype(face["typestr"])
        n = math.prod(face["shape"]) * dtype.itemsize
        view = np.frombuffer((ctypes.c_byte * n).from_address(face["data"][0]), dtype=dtype).reshape(face["shape"])
        return torch.from_numpy(np.asarray(_Owner(view, array)))

    def to_device(self, tensor, device, non_blocking):
        self.copies += 1
        return tensor

    tensors = 0
    copies = 0


class LaggingStreamSide(HostDoubleSide):
    """HostDoubleSide whose current stream is one of the double's own streams, where the test queues
    each batch's "step": a device-to-device copy of the batch's slot, which the double runs only after
    its copy delay. So the step reads the slot well after the batch was freed, as a training step's
    kernels do on a busy GPU, and the slot's event completes late. A slot given back before its step
    ran would be refilled under it, and the step's copy would hold another batch's pixels."""

    def __init__(self, double):
        self.double = double
        self._stream = None
        self.last = None  # the latest batch's (device pointer, bytes)

    def stream(self, device):
        if self._stream is None:
            s = ctypes.c_void_p()
            self.double.cuStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
            assert self.double.cuStreamCreate(ctypes.byref(s), 0) == 0
            self._stream = s.value
        return self._stream

    def as_tensor(self, array, device):
        face = array.__cuda_array_interface__
        self.last = (face["data"][0], math.prod(face["shape"]) * np.dtype(face["typestr"]).itemsize)
        return super().as_tensor(array, device)


class GatedStreamSide(HostDoubleSide):
    """HostDoubleSide where a batch's finaliser on a thread other than the main one waits in torch's
    ``current_stream()`` until ``gate`` is set: its views are gone, and its slot not yet queued for
    its GPU work, as where autograd's thread frees a saved input."""

    def __init__(self):
        self.gate = threading.Event()

    def stream(self, device):
        if threading.current_thread() is not threading.main_thread():
            self.gate.wait(10)
        return 0


@unittest.skipIf(MISSING or double_missing(), str(MISSING or double_missing()))
class GpuDecodeTest(unittest.TestCase):
    def setUp(self):
        saved = os.environ.get("STOKE_JAVA_OPTS")
        self.addCleanup(lambda: os.environ.__setitem__("STOKE_JAVA_OPTS", saved) if saved is not None
                        else os.environ.pop("STOKE_JAVA_OPTS", None))
        os.environ["STOKE_JAVA_OPTS"] = f"{saved or ''} -Dstoke.cuda.path={DOUBLE} -Dstoke.nvjpeg.path={DOUBLE}"

    def epochs(self, decode, before_close=None, **keywords):
        """Two epochs of (images, labels, indices) from a loader decoding with ``decode``, and what its
        producer said; ``before_close``, if given, is called with the loader after the two epochs."""
        loader = stoke.DataLoader(DATA, batch_size=4, num_workers=2, shuffle=True, seed=3, resize=24, crop=16,
                                  dct_scaling="none", with_indices=True, decode=decode, **keywords)
        try:
            got = []
            for _ in range(2):
                for images, labels, indices in loader:
                    got.append((images.clone(), labels.clone(), indices.clone()))
            if before_close is not None:
                before_close(loader)
            said = "\n".join(loader._producer._stderr)
        finally:
            loader.close()
        return got, said

    def assertSameBatches(self, want, got):
        self.assertEqual(len(want), len(got))
        for k, ((wi, wl, wx), (gi, gl, gx)) in enumerate(zip(want, got)):
            self.assertTrue(torch.equal(wx, gx), f"batch {k}: indices")
            self.assertTrue(torch.equal(wl, gl), f"batch {k}: labels")
            self.assertTrue(torch.equal(wi, gi), f"batch {k}: pixels")

    def test_gpu_and_auto_batches_equal_the_cpu_workers_bad_files_zeroed(self):
        cpu, _ = self.epochs("cpu", on_error="skip")
        self.assertEqual(2 * 8, len(cpu))  # 32 files, batch 4, two epochs
        for decode in ("gpu", "auto"):
            got, said = self.epochs(decode, on_error="skip")
            self.assertIn("decoding on CUDA device 0 (EXPERIMENTAL)", said)
            self.assertSameBatches(cpu, got)

    def test_decode_gpu_threads_reaches_the_producer_and_the_batches_stay_the_cpus(self):
        cpu, _ = self.epochs("cpu", on_error="skip")
        got, said = self.epochs("gpu", on_error="skip", decode_gpu_threads=2)
        self.assertIn("each batch's call split over 2 threads", said)
        self.assertSameBatches(cpu, got)

    def test_float32_output_is_normalised_on_the_device_as_the_workers_normalise(self):
        cpu, _ = self.epochs("cpu", on_error="skip", output="float32")
        gpu, said = self.epochs("gpu", on_error="skip", output="float32")
        self.assertIn("decoding on CUDA device 0 (EXPERIMENTAL)", said)
        self.assertEqual(len(cpu), len(gpu))
        for k, ((wi, _, wx), (gi, _, gx)) in enumerate(zip(cpu, gpu)):
            self.assertTrue(torch.equal(wx, gx), f"batch {k}")
            torch.testing.assert_close(gi, wi, rtol=0, atol=1e-5, msg=f"batch {k}")

    def test_an_augmentation_policy_and_random_erasing_run_after_the_gpu_decode_as_the_workers_run_them(self):
        recipe = dict(on_error="skip", transform="train", augment="ta_wide", output="float32", erase=0.5)
        cpu, _ = self.epochs("cpu", **recipe)
        for decode in ("gpu", "auto"):
            got, said = self.epochs(decode, **recipe)
            self.assertIn("decoding on CUDA device 0 (EXPERIMENTAL)", said)
            self.assertEqual(2 * 8, len(got))
            self.assertSameBatches(cpu, got)  # normalised and erased on the host, as the workers do: to the bit

    def test_a_sampler_of_yours_gives_the_gpu_decode_its_order_as_it_gives_the_workers(self):
        class Repeats(torch.utils.data.Sampler):
            """RASampler's shape: half the samples, each twice, a new draw each epoch (not the seed's order)."""

            def __init__(self, n):
                self.n, self.draws = n, 0

            def __iter__(self):
                g = torch.Generator().manual_seed(7 + self.draws)
                self.draws += 1
                return iter(torch.randperm(self.n, generator=g)[: self.n // 2].repeat_interleave(2).tolist())

            def __len__(self):
                return self.n // 2 * 2

        def two_epochs(decode, **keywords):
            loader = stoke.DataLoader(DATA, num_workers=2, resize=24, crop=16, dct_scaling="none", with_indices=True,
                                      on_error="skip", decode=decode, **keywords)
            try:
                got = [(i.clone(), l.clone(), x.clone()) for _ in range(2) for i, l, x in loader]
                return got, "\n".join(loader._producer._stderr)
            finally:
                loader.close()

        n = 32  # 30 made and 2 bad files
        cpu, _ = two_epochs("cpu", batch_size=4, sampler=Repeats(n))
        orders = [torch.randperm(n, generator=torch.Generator().manual_seed(7 + e))[: n // 2].repeat_interleave(2)
                  for e in range(2)]
        self.assertTrue(torch.equal(torch.cat([x for _, _, x in cpu]), torch.cat(orders)), "the sampler's order")
        # A batch sampler too: batches of their own sizes.
        sizes = [3, 5, 1, 4, 3]

        class Batches:
            batch_size = 5  # sizes the ring's slots from the start

            def __iter__(self):
                return iter([list(range(sum(sizes[:k]), sum(sizes[:k + 1]))) for k in range(len(sizes))])

            def __len__(self):
                return len(sizes)

        batches = Batches()
        cpu_batches, _ = two_epochs("cpu", batch_sampler=batches)
        self.assertEqual(sizes * 2, [len(x) for _, _, x in cpu_batches])
        for decode in ("gpu", "auto"):
            got, said = two_epochs(decode, batch_size=4, sampler=Repeats(n))
            self.assertIn("decoding on CUDA device 0 (EXPERIMENTAL)", said)
            self.assertNotIn("decoding on the CPU", said)
            self.assertSameBatches(cpu, got)
            got, said = two_epochs(decode, batch_sampler=batches)
            self.assertIn("decoding on CUDA device 0 (EXPERIMENTAL)", said)
            self.assertSameBatches(cpu_batches, got)

    def test_with_cuda_here_the_batches_view_the_producers_device_slots_opened_by_ipc(self):
        cpu, _ = self.epochs("cpu", on_error="skip")
        for decode, output in (("gpu", "uint8"), ("auto", "uint8"), ("gpu", "float32")):
            want, _ = self.epochs("cpu", on_error="skip", output=output)
            side = HostDoubleSide()
            with unittest.mock.patch.object(_device_slots, "cuda_side", side):
                got, said = self.epochs(decode, on_error="skip", output=output)
            self.assertIn("decoding on CUDA device 0 (EXPERIMENTAL)", said)
            self.assertEqual(len(want), side.tensors, "every batch a view of a device slot")
            self.assertEqual(0, side.copies)
            if output == "uint8":
                self.assertSameBatches(want, got)
            else:
                for k, ((wi, wl, wx), (gi, gl, gx)) in enumerate(zip(want, got)):
                    self.assertTrue(torch.equal(wx, gx) and torch.equal(wl, gl), f"batch {k}")
                    torch.testing.assert_close(gi, wi, rtol=0, atol=1e-5, msg=f"batch {k}")
        self.assertEqual(len(cpu), len(want))

    def test_a_slot_goes_back_only_when_its_last_view_is_freed(self):
        side = HostDoubleSide()
        with unittest.mock.patch.object(_device_slots, "cuda_side", side):
            loader = stoke.DataLoader(DATA, batch_size=4, num_workers=2, resize=24, crop=16, dct_scaling="none",
                                      decode="gpu", slots=3, timeout=20)
            try:
                it = iter(loader)
                kept = [next(it)[0] for _ in range(3)]  # every slot held
                with self.assertRaisesRegex(RuntimeError, "all 3 ring slots are held"):
                    next(it)
                first = kept[0].clone()
                self.assertEqual("3 batch(es) on the GPU still referenced, 0 freed and waiting for the GPU work "
                                 "queued when they were freed", loader._device_slots.describe())
                del kept[0]
                gc.collect()
                # What a timeout says of this side: the freed batch's slot waits for its event (the
                # double's NULL stream has run everything queued, so it is done).
                self.assertEqual("2 batch(es) on the GPU still referenced, 1 freed and waiting for the GPU work "
                                 "queued when they were freed (the oldest's work is done)",
                                 loader._device_slots.describe())
                images, _ = next(it)  # the freed slot came back, and holds the next batch
                self.assertFalse(torch.equal(first, images))
                self.assertEqual(3, len([p for p in loader._device_slots._pointers if p is not None]))
                with self.assertWarnsRegex(stoke.StokeWarning, "3 batch.*still referenced.*not valid"):
                    loader.close()
            finally:
                loader.close()
            self.assertIsNone(loader._device_slots)

    def gated_loader(self, slots: int) -> "stoke.DataLoader":
        """A ``decode="gpu"`` loader over the test data with ``slots`` slots, for a GatedStreamSide."""
        return stoke.DataLoader(DATA, batch_size=4, num_workers=2, resize=24, crop=16, dct_scaling="none",
                                with_indices=True, decode="gpu", on_error="skip", slots=slots, timeout=60)

    def test_a_batch_whose_finaliser_is_under_way_in_another_thread_is_not_taken_for_one_an_interrupt_cut_short(self):
        # Autograd's thread frees a saved input: the batch's finaliser runs there, and its driver and
        # torch calls let this thread run before the slot is queued for its GPU work. The loader's
        # look for releases that never came took such a batch for one at two looks, and said an
        # interrupt had cut its release short (seen in a training-shaped run on the doubles).
        side = GatedStreamSide()
        gate = side.gate
        with unittest.mock.patch.object(_device_slots, "cuda_side", side):
            loader = self.gated_loader(slots=3)
            try:
                it = iter(loader)
                images, labels, indices = next(it)
                seen = indices.tolist()
                ring = loader._producer.ring
                raw = next(b for b in ring.held_batches() if b.indices.tolist() == seen)
                box = [images]
                del images
                freer = threading.Thread(target=box.clear, daemon=True)
                freer.start()
                self.assertEqual([], _aids.look_for_orphans_once_freed(loader, raw))
                self.assertIn(raw, ring.held_batches(), "left to its finaliser, which is under way")
                gate.set()
                freer.join(10)
                loader._release_used(wait=True)
                self.assertNotIn(raw, ring.held_batches(), "given back after its GPU work")
                seen += [i for batch in it for i in batch[2].tolist()]
                self.assertEqual(32, len(seen), "every sample of the epoch once")
            finally:
                gate.set()
                loader.close()

    def test_every_slot_held_while_a_finaliser_is_under_way_in_another_thread_waits_for_it(self):
        # With every slot held and one batch's finaliser under way on another thread (its views gone,
        # its slot not yet queued for its GPU work), the loader said the user's code held every slot.
        # It waits for that finaliser instead, and the next batch comes.
        side = GatedStreamSide()
        gate = side.gate
        with unittest.mock.patch.object(_device_slots, "cuda_side", side):
            loader = self.gated_loader(slots=2)
            try:
                it = iter(loader)
                first, second = next(it), next(it)
                box = [first]
                del first
                freer = threading.Thread(target=box.clear, daemon=True)
                freer.start()
                opener = threading.Timer(0.5, gate.set)  # the finaliser ends half a second later
                opener.start()
                self.assertEqual(list(range(8, 12)), next(it)[2].tolist(), "the third batch, once a slot came back")
                self.assertTrue(gate.is_set())
                freer.join(10)
                del second
            finally:
                gate.set()
                loader.close()

    def test_a_slot_goes_back_only_after_the_gpu_work_queued_when_its_batch_was_freed(self):
        # The shape of a training loop on a busy GPU: each batch's step is queued and runs 20 ms after
        # the step before, while the loop goes on at once, so the steps fall behind; every other
        # batch is freed in another thread, as autograd's device thread frees a saved input. With 3
        # slots the loop both polls the freed slots' events and, with every slot held, waits on the
        # oldest's.
        want, _ = self.epochs("cpu", on_error="skip")
        double = ctypes.CDLL(str(DOUBLE))  # this process's double: the one the package opens
        double.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        double.cuMemcpyDtoDAsync_v2.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
        double.cuStreamSynchronize.argtypes = [ctypes.c_void_p]
        double.stoke_double_set_copy_delay_us.argtypes = [ctypes.c_long]
        double.stoke_double_set_copy_delay_us(20_000)
        self.addCleanup(double.stoke_double_reset)
        side = LaggingStreamSide(double)
        steps = []
        with unittest.mock.patch.object(_device_slots, "cuda_side", side):
            loader = stoke.DataLoader(DATA, batch_size=4, num_workers=2, shuffle=True, seed=3, resize=24, crop=16,
                                      dct_scaling="none", with_indices=True, decode="gpu", on_error="skip", slots=3,
                                      timeout=60)
            try:
                for _ in range(2):
                    for images, labels, indices in loader:
                        pointer, nbytes = side.last
                        copy = ctypes.c_uint64()
                        self.assertEqual(0, double.cuMemAlloc_v2(ctypes.byref(copy), nbytes))
                        self.assertEqual(0, double.cuMemcpyDtoDAsync_v2(copy.value, pointer, nbytes, side.stream(0)))
                        steps.append((copy.value, nbytes, images.shape, labels.clone(), indices.clone()))
                        if len(steps) % 2:
                            freer = threading.Thread(target=lambda batch: batch.clear(), args=([images],))
                            del images
                            freer.start()
                            freer.join()
                        else:
                            del images
                self.assertEqual(0, double.cuStreamSynchronize(side.stream(0)))
                got = []
                for copy, nbytes, shape, labels, indices in steps:
                    pixels = np.frombuffer((ctypes.c_byte * nbytes).from_address(copy), dtype=np.uint8)
                    got.append((torch.from_numpy(pixels.reshape(shape).copy()), labels, indices))
                    self.assertEqual(0, double.cuMemFree_v2(ctypes.c_uint64(copy)))
                double.cuStreamDestroy_v2.argtypes = [ctypes.c_void_p]
                self.assertEqual(0, double.cuStreamDestroy_v2(side.stream(0)))
                said = "\n".join(loader._producer._stderr)
            finally:
                loader.close()
        self.assertIn("decoding on CUDA device 0 (EXPERIMENTAL)", said)
        self.assertSameBatches(want, got)

    def test_where_cuda_refuses_the_ipc_a_producer_copying_back_into_the_ring_takes_over_said_once(self):
        cpu, _ = self.epochs("cpu", on_error="skip")
        side = HostDoubleSide()
        double = ctypes.CDLL(str(DOUBLE))  # this process's double: the one the package opens
        double.stoke_double_fail.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        double.stoke_double_fail(b"cuIpcOpenMemHandle_v2", 2, 201)  # the second slot's open: CUDA_ERROR_INVALID_CONTEXT
        self.addCleanup(double.stoke_double_reset)
        with unittest.mock.patch.object(_device_slots, "cuda_side", side), \
                self.assertWarnsRegex(stoke.StokeWarning, "CUDA IPC refused .*CUDA_ERROR_INVALID_CONTEXT.*starts again"):
            got, said = self.epochs("gpu", on_error="skip")
        self.assertEqual(0, side.tensors)
        self.assertEqual(len(got), side.copies, "each batch copied to the device from the ring")
        self.assertSameBatches(cpu, got)
        double.stoke_double_stat.restype = ctypes.c_longlong
        self.assertEqual(0, double.stoke_double_stat(b"ipc_opened"), "the first slot's mapping closed again")

    def test_where_the_producer_decodes_on_the_cpu_each_batch_is_copied_to_the_device_said_once(self):
        side = HostDoubleSide()
        # No libnvjpeg where the producer looks: it decodes on the CPU, and says so.
        os.environ["STOKE_JAVA_OPTS"] = os.environ["STOKE_JAVA_OPTS"].replace(
            f"-Dstoke.nvjpeg.path={DOUBLE}", f"-Dstoke.nvjpeg.path={DOUBLE.parent / 'nowhere' / 'libnvjpeg.so.13'}")
        with unittest.mock.patch.object(_device_slots, "cuda_side", side), \
                self.assertWarnsRegex(stoke.StokeWarning, "decodes on the CPU .*copied to cuda:0"):
            got, said = self.epochs("gpu", on_error="skip")
        self.assertIn("decoding on the CPU", said)
        self.assertEqual(0, side.tensors)
        self.assertEqual(len(got), side.copies)

    def test_through_a_restart_cache_the_batches_stay_the_cpus_and_each_epoch_says_what_it_did(self):
        import test_cache  # tests/test_cache.py: its checks of the cache's folder and stats
        if test_cache.copier_here():
            self.skipTest(test_cache.copier_here())
        cpu, _ = self.epochs("cpu", on_error="skip")
        with tempfile.TemporaryDirectory() as cache:
            for decode in ("gpu", "auto"):
                # From an empty folder under gpu; under auto, served the copies gpu's run filled.
                seen = {}

                def look(loader):
                    seen["stats"] = test_cache.wait_for_epochs(loader, 2)
                    if decode == "gpu":
                        # Every good JPEG copied from the reader threads' idle time, while the producer lives.
                        test_cache.wait_for_entries(cache, 30)

                got, said = self.epochs(decode, on_error="skip", restart_cache_dir=cache, before_close=look)
                stats = seen["stats"]
                self.assertIn("decoding on CUDA device 0 (EXPERIMENTAL)", said)
                self.assertNotIn("decoding on the CPU", said)
                self.assertSameBatches(cpu, got)
                self.assertEqual([0, 1], [s["epoch"] for s in stats], stats)
                if decode == "gpu":
                    self.assertGreaterEqual(stats[0]["misses"], 30, f"an empty folder: {stats}")
                else:
                    # Nothing left to file: every JPEG served its entry. (text.jpg, no image and never
                    # cached, misses once or twice a read epoch, and the producer reads ahead of the
                    # epochs counted, so the misses are not counted here.)
                    self.assertEqual(0, sum(s["copied"] + s["originals"] for s in stats), stats)
                    self.assertGreaterEqual(sum(s["hits"] for s in stats), 2 * 31, stats)
            # An entry per JPEG: 30 copies, and cut.jpg's, which says to read the original.
            self.assertEqual(31, len(test_cache.entries(cache)))

    def test_an_unknown_decode_is_refused_by_name(self):
        with self.assertRaisesRegex(ValueError, "decode"):
            stoke.DataLoader(DATA, batch_size=4, decode="tpu")


if __name__ == "__main__":
    unittest.main()
