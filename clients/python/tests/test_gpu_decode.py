"""stoke.DataLoader(decode="gpu"|"auto") on the nvJPEG and CUDA test doubles (run by ./stoke test).

The producer opens the doubles (-Dstoke.cuda.path, -Dstoke.nvjpeg.path through STOKE_JAVA_OPTS),
which decode with libjpeg and run the CUDA kernels' own source on the host: every batch must equal
the one the CPU workers give for the same seed, bad files included. This checks the wiring from the
keyword to the ring; it is not a GPU verification (docs/gpu.md, "GPU decode").
"""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(HERE))

try:
    import torch
    import stoke
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


@unittest.skipIf(MISSING or double_missing(), str(MISSING or double_missing()))
class GpuDecodeTest(unittest.TestCase):
    def setUp(self):
        saved = os.environ.get("STOKE_JAVA_OPTS")
        self.addCleanup(lambda: os.environ.__setitem__("STOKE_JAVA_OPTS", saved) if saved is not None
                        else os.environ.pop("STOKE_JAVA_OPTS", None))
        os.environ["STOKE_JAVA_OPTS"] = f"{saved or ''} -Dstoke.cuda.path={DOUBLE} -Dstoke.nvjpeg.path={DOUBLE}"

    def epochs(self, decode, **keywords):
        """Two epochs of (images, labels, indices) from a loader decoding with ``decode``, and what its producer said."""
        loader = stoke.DataLoader(DATA, batch_size=4, num_workers=2, shuffle=True, seed=3, resize=24, crop=16,
                                  dct_scaling="none", with_indices=True, decode=decode, **keywords)
        try:
            got = []
            for _ in range(2):
                for images, labels, indices in loader:
                    got.append((images.clone(), labels.clone(), indices.clone()))
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

    def test_float32_output_is_normalised_on_the_device_as_the_workers_normalise(self):
        cpu, _ = self.epochs("cpu", on_error="skip", output="float32")
        gpu, said = self.epochs("gpu", on_error="skip", output="float32")
        self.assertIn("decoding on CUDA device 0 (EXPERIMENTAL)", said)
        self.assertEqual(len(cpu), len(gpu))
        for k, ((wi, _, wx), (gi, _, gx)) in enumerate(zip(cpu, gpu)):
            self.assertTrue(torch.equal(wx, gx), f"batch {k}")
            torch.testing.assert_close(gi, wi, rtol=0, atol=1e-5, msg=f"batch {k}")

    def test_an_augmentation_policy_decodes_on_the_cpu_saying_why_in_one_line(self):
        terminal = io.StringIO()
        with contextlib.redirect_stderr(terminal):
            got, said = self.epochs("gpu", on_error="skip", transform="train", augment="ta_wide")
        lines = [line for line in said.splitlines() if "--decode gpu" in line]
        self.assertEqual(1, len(lines), said)
        self.assertIn("decoding on the CPU", lines[0])
        self.assertEqual(1, terminal.getvalue().count(lines[0]), "said once on the user's terminal")
        self.assertEqual(2 * 8, len(got))

    def test_an_unknown_decode_is_refused_by_name(self):
        with self.assertRaisesRegex(ValueError, "decode"):
            stoke.DataLoader(DATA, batch_size=4, decode="tpu")


if __name__ == "__main__":
    unittest.main()
