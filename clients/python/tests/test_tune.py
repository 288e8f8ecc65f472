"""stoke.tune: its arguments checked before the Java side starts, and one real search (run by ./stoke test).

The search itself (the cost model, the points it runs, what it recommends) is tested in Java
(TunerTest, TuneCommandTest); here, that Python reaches it and hands back its report.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))

try:
    import stoke
    MISSING = None
except ImportError as e:  # the package needs numpy: skip, loudly
    MISSING = f"{e.name} is not installed"


def setUpModule():
    if MISSING:
        print(f"[stoke] SKIPPING the stoke.tune tests: {MISSING}", file=sys.stderr)
        raise unittest.SkipTest(MISSING)


class TuneArgumentsTest(unittest.TestCase):
    def test_a_search_needs_one_step(self):
        with self.assertRaisesRegex(ValueError, "needs a step"):
            stoke.tune("/nonexistent", "/nonexistent-out")
        with self.assertRaisesRegex(ValueError, "not both"):
            stoke.tune("/nonexistent", "/nonexistent-out", model="m.onnx", step_ms=5)

    def test_arguments_out_of_range_are_refused_naming_them(self):
        for kwargs, name in (({"step_ms": -1}, "step_ms"), ({"step_ms": 1, "batch_sizes": (0, 8)}, "batch_sizes"),
                             ({"step_ms": 1, "max_workers": 0}, "max_workers")):
            with self.subTest(kwargs=kwargs):
                with self.assertRaisesRegex(ValueError, name):
                    stoke.tune("/nonexistent", "/nonexistent-out", **kwargs)


class TuneRunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
        cls.tmp = tempfile.TemporaryDirectory(prefix="stoke-tune-test-")
        cls.data = Path(cls.tmp.name) / "data"
        subprocess.run([str(CHECKOUT / "stoke"), "make-dataset", str(cls.data), "--images", "64", "--seed", "3",
                        "--classes", "2"], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_report_is_tune_json_with_a_recommendation_among_the_points_tried(self):
        out = Path(self.tmp.name) / "out"
        report = stoke.tune(str(self.data), str(out), step_ms=1, batch_sizes=(8, 16), max_workers=2,
                            seconds_per_point=0.3, candidates=2)
        self.assertEqual(json.loads((out / "tune.json").read_text()), report)
        best = report["recommendation"]
        self.assertIn(best["batch_size"], (8, 16))
        self.assertTrue(1 <= best["workers"] <= 2, best)

    def test_a_failure_is_a_tune_error_with_what_the_tuner_said(self):
        with self.assertRaises(stoke.TuneError) as e:
            stoke.tune(str(Path(self.tmp.name) / "no-such-folder"), str(Path(self.tmp.name) / "o2"), step_ms=1)
        self.assertIn("no-such-folder", str(e.exception))


if __name__ == "__main__":
    unittest.main()
