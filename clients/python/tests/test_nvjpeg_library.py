"""The GPU decode's nvJPEG, found in the active Python environment and bound (run by ./stoke test;
it needs a torchvision CUDA wheel, which bundles libnvjpeg in torchvision.libs/: the torch 2.14.1
stack has one, Debian's torchvision has not, and the test skips there, saying so).

`./stoke gpu-check` says which nvJPEG the GPU decode would use before it opens a device. With this
venv active (VIRTUAL_ENV, as `activate` sets it) and no CUDA toolkit's nvJPEG on the machine, that is
torchvision's bundled copy; the version it reports comes from NVIDIA's library itself
(nvjpegGetProperty, which needs no GPU), after every function Stoke binds was linked from it.
"""

import glob
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent.parent
SITE = Path(sysconfig.get_paths()["purelib"])
BUNDLED = sorted(glob.glob(str(SITE / "torchvision.libs" / "libnvjpeg*.so.*")))
TOOLKIT = sorted(glob.glob("/usr/local/cuda/lib64/libnvjpeg*.so.*")
                 + glob.glob("/usr/local/cuda/targets/x86_64-linux/lib/libnvjpeg*.so.*"))

# The producer's first line on where it decodes, from a loader with decode="gpu" (in a fresh process).
DECODE_LINE = """
import sys, stoke
loader = stoke.DataLoader(sys.argv[1], batch_size=4, num_workers=1, decode="gpu")
next(iter(loader))
print(next(line for line in loader._producer._stderr if line.startswith("stoke serve: ") and "decod" in line))
loader.close()
"""


@unittest.skipUnless(BUNDLED, f"no libnvjpeg bundled with this Python's torchvision (in {SITE}/torchvision.libs)")
@unittest.skipIf(TOOLKIT, f"a CUDA toolkit's nvJPEG is installed ({TOOLKIT[:1]}), which comes first")
class NvjpegLibraryTest(unittest.TestCase):
    def test_gpu_check_finds_torchvisions_nvjpeg_in_the_active_venv_and_binds_it(self):
        env = self.environment()
        env["VIRTUAL_ENV"] = sys.prefix
        self.check(subprocess.run([str(CHECKOUT / "stoke"), "gpu-check"], capture_output=True, text=True, env=env,
                                  timeout=600))

    def test_python_m_stoke_finds_it_in_its_own_site_packages_without_an_active_venv(self):
        # A system or user install of torch has no VIRTUAL_ENV: `python -m stoke` says where its site-packages are.
        env = self.environment()
        env["PYTHONPATH"] = str(CHECKOUT / "clients" / "python")
        self.check(subprocess.run([sys.executable, "-m", "stoke", "gpu-check"], capture_output=True, text=True,
                                  env=env, timeout=600))

    def test_dataloaders_producer_finds_it_in_this_pythons_site_packages_without_an_active_venv(self):
        # stoke.DataLoader(decode="gpu") starts `stoke serve` itself, not through `python -m stoke`:
        # its producer is told this Python's site-packages too. Without a GPU it then names the
        # missing driver, not a missing libnvjpeg; with one it decodes on it.
        env = self.environment()
        env["PYTHONPATH"] = str(CHECKOUT / "clients" / "python")
        env.setdefault("STOKE_HOME", str(CHECKOUT))
        with tempfile.TemporaryDirectory(prefix="stoke-py-test-nvjpeg-") as tmp:
            data = Path(tmp) / "data"
            subprocess.run([str(CHECKOUT / "stoke"), "make-dataset", str(data), "--images", "8", "--seed", "5",
                            "--classes", "2"], check=True, capture_output=True, env=env, timeout=600)
            r = subprocess.run([sys.executable, "-c", DECODE_LINE, str(data)], capture_output=True, text=True,
                               env=env, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        line = r.stdout.strip()
        self.assertNotIn("no libnvjpeg found", line)
        self.assertRegex(line, r"^stoke serve: (--decode gpu: no CUDA driver found|decoding on CUDA device 0 )", line)

    @staticmethod
    def environment() -> dict:
        drop = ("STOKE_NVJPEG", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "VIRTUAL_ENV", "STOKE_PYTHON_SITE_PACKAGES")
        return {k: v for k, v in os.environ.items() if k not in drop}

    def check(self, r: subprocess.CompletedProcess) -> None:
        # The line gpu-check prints first (after anything ./stoke says of a build it had to make).
        line = next((x for x in r.stdout.splitlines() if x.startswith("nvjpeg ")), "")
        m = re.fullmatch(r"nvjpeg     nvJPEG (\d+)\.(\d+)\.(\d+) from (\S+) \((.*)\)", line)
        self.assertIsNotNone(m, r.stdout + r.stderr)
        self.assertEqual(m.group(4), BUNDLED[-1])
        self.assertEqual(m.group(5), f"torchvision's bundled copy in {SITE}")
        # The soname's major version is the library's own.
        self.assertEqual(m.group(1), BUNDLED[-1].rsplit(".so.", 1)[1].split(".")[0])
        # Without a GPU the check stops there, saying why (exit 4); with one it goes on.
        if r.returncode == 4:
            self.assertTrue(r.stderr.startswith("stoke gpu-check: "), r.stderr)


if __name__ == "__main__":
    unittest.main()
