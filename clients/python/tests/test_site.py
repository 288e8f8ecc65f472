"""The environment a producer starts with where it may decode on the GPU (run by ./stoke test; no
torch needed): it names this Python's site-packages, where torchvision's CUDA wheel bundles
libnvjpeg, so that the producer finds it without an active venv (test_nvjpeg_library checks the
producer itself, where such a torchvision is installed)."""

import os
import site
import sys
import sysconfig
import types
import unittest
import unittest.mock
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    from stoke import _site
    from stoke._producer import producer_environment
    MISSING = None
except ImportError as e:  # the package needs numpy: skip, loudly
    MISSING = f"{e.name} is not installed"


def setUpModule():
    if MISSING:
        print(f"[stoke] SKIPPING the producer environment tests: {MISSING}", file=sys.stderr)


@unittest.skipIf(MISSING, f"the stoke package cannot be imported here: {MISSING}")
class ProducerEnvironmentTest(unittest.TestCase):
    def test_gpu_and_auto_name_this_pythons_site_packages(self):
        with unittest.mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop(_site.ENV, None)
            for decode in ("gpu", "auto"):
                env = producer_environment(types.SimpleNamespace(decode=decode))
                folders = env[_site.ENV].split(os.pathsep)
                # Those of this Python's folders that exist (a system Python may lack /usr/local's).
                ours = [d for d in (sysconfig.get_paths()["purelib"], *site.getsitepackages()) if os.path.isdir(d)]
                self.assertTrue(ours, "this Python has a site-packages folder")
                self.assertTrue(set(ours) <= set(folders), (decode, ours, folders))
                self.assertTrue(all(os.path.isdir(d) for d in folders), folders)
                self.assertEqual(len(folders), len(set(folders)), folders)
                self.assertNotIn(_site.ENV, os.environ, "this process's environment is left as it was")

    def test_a_value_given_is_kept(self):
        with unittest.mock.patch.dict(os.environ, {_site.ENV: "/somewhere/site-packages"}):
            env = producer_environment(types.SimpleNamespace(decode="gpu"))
            self.assertEqual("/somewhere/site-packages", env[_site.ENV])

    def test_the_cpu_decode_inherits_this_process_environment(self):
        self.assertIsNone(producer_environment(types.SimpleNamespace(decode="cpu")))
        self.assertIsNone(producer_environment(types.SimpleNamespace(decode=None)))


if __name__ == "__main__":
    unittest.main()
