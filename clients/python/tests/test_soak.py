"""The soak runner (benchmarks/soak/soak.py) for about a minute: every scenario, kills included,
and its report must say nothing failed (run by ./stoke test).

It needs numpy, torch, gcc and the remote module's compiled test classes and class path (the S3
server is a test main; the build writes both); where one is missing the test skips and says which,
on stderr.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[3]
RUNNER = CHECKOUT / "benchmarks" / "soak" / "soak.py"
S3_MAIN = CHECKOUT / "remote/target/test-classes/io/stoke/remote/SoakS3Server.class"
S3_CLASSPATH = CHECKOUT / "remote/target/test-classpath.txt"


def missing():
    what = []
    for module in ("numpy", "torch"):
        try:
            __import__(module)
        except ImportError:
            what.append(f"{module} is not installed")
    for tool in ("gcc",):
        if not shutil.which(tool):
            what.append(f"{tool} is not on PATH")
    if not S3_MAIN.exists() or not S3_CLASSPATH.exists():
        what.append(f"{S3_MAIN.name} or {S3_CLASSPATH.name} is not built (mvn package compiles the remote module's "
                    "tests and writes their class path)")
    return "; ".join(what)


MISSING = missing()
if MISSING:
    print(f"[stoke] SKIPPING the soak test: {MISSING}", file=sys.stderr)


@unittest.skipIf(MISSING, MISSING)
class SoakTest(unittest.TestCase):
    def test_a_one_minute_soak_passes_every_check(self):
        with tempfile.TemporaryDirectory(prefix="stoke-soak-test-") as tmp:
            out = Path(tmp) / "report"
            done = subprocess.run([sys.executable, str(RUNNER), "--duration", "60s", "--out", str(out),
                                   "--images", "200", "--seed", "3"],
                                  capture_output=True, text=True, timeout=900,
                                  env=dict(os.environ, STOKE_HOME=str(CHECKOUT)))
            self.assertTrue((out / "report.json").exists(), done.stderr[-5000:])
            report = json.loads((out / "report.json").read_text())
            self.assertEqual([], report["failures"], (out / "summary.md").read_text())
            self.assertEqual(0, done.returncode, done.stderr[-5000:])
            for scenario, result in report["results"].items():
                self.assertGreater(result["epochs"], 0, f"{scenario}: no epoch completed")
                self.assertGreater(sum(result["kills"].values()), 0, f"{scenario}: nothing was killed")
            self.assertGreater(report["results"]["dataloader"]["bad_reported"], 0)
            self.assertEqual([], report["leftover_shm"])
            self.assertIn("PASSED", (out / "summary.md").read_text())


if __name__ == "__main__":
    unittest.main()
