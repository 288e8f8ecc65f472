"""The options table (``options.json``, declared once in the serve module) as the Python package
reads it (run by ./stoke test): the package's link to it, what a ``pip install`` of the checkout
holds, and a table that is not one refused naming the file. Needs no producer.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))

from stoke import _options  # noqa: E402  (numpy only: the settings tests below need torch)

TABLE = CHECKOUT / "serve" / "src" / "main" / "resources" / "io" / "stoke" / "serve" / "options.json"


class OptionsTableTest(unittest.TestCase):
    def test_the_package_reads_the_serve_modules_table_through_its_link(self):
        link = PACKAGE_ROOT / "stoke" / "options.json"
        self.assertTrue(link.is_symlink(), "the package links the one table, it holds no copy")
        self.assertEqual(TABLE.resolve(), link.resolve())
        entries = json.loads(TABLE.read_text())["options"]
        self.assertEqual([e["name"] for e in entries], [o.name for o in _options.OPTIONS])
        self.assertEqual([e["cli"] for e in entries], [o.cli for o in _options.OPTIONS])
        self.assertEqual([e.get("python") for e in entries], [o.python for o in _options.OPTIONS])
        by_name = {o.name: o for o in _options.OPTIONS}
        self.assertEqual(("pad", "drop"), by_name["partition_tail"].choices)
        self.assertEqual(("shard_tail", "--shard-tail"),
                         (by_name["partition_tail"].deprecated_python, by_name["partition_tail"].deprecated_cli))
        self.assertEqual([0.08, 1.0], by_name["scale"].python_value())
        self.assertEqual(19, by_name["worker_nice"].python_value(), "Python's own default")
        self.assertEqual("auto", by_name["workers"].python_value())
        self.assertIsNone(by_name["restart_cache_dir"].python_value())

    def test_a_file_that_is_no_table_is_refused_naming_the_file_and_the_entry(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "options.json"
            table = json.loads(TABLE.read_text())
            cases = {
                "not an options table of format 1": {"format": 2, "options": []},
                "option 1 \\(batch_size\\).*type 'integer' is not one of": dict(table, options=[
                    table["options"][0], dict(table["options"][3], type="integer")]),
                "option 0 \\(workers\\): lacks cli": dict(table, options=[
                    {k: v for k, v in table["options"][0].items() if k != "cli"}]),
                "'--workers' is workers's already": dict(table, options=[
                    table["options"][0], dict(table["options"][3], cli="--workers")]),
            }
            for message, content in cases.items():
                bad.write_text(json.dumps(content))
                with self.assertRaisesRegex(ValueError, f"^{bad}: .*{message}"):
                    _options.load(bad)
            bad.write_text("{")
            with self.assertRaisesRegex(ValueError, f"^{bad}: cannot read the options table"):
                _options.load(bad)

    @unittest.skipIf(subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0,
                     "pip is not installed for this python")
    def test_a_pip_install_of_the_checkout_holds_the_tables_content_not_a_link(self):
        made = [p for p in (PACKAGE_ROOT / "build", PACKAGE_ROOT / "stoke.egg-info") if not p.exists()]
        with tempfile.TemporaryDirectory() as tmp:
            try:
                subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                                "--no-index", "--disable-pip-version-check", "--target", tmp, str(PACKAGE_ROOT)],
                               check=True, capture_output=True, timeout=300)
            finally:
                for p in made:  # pip builds in place: leave the checkout as it was
                    shutil.rmtree(p, ignore_errors=True)
            installed = Path(tmp) / "stoke" / "options.json"
            self.assertFalse(installed.is_symlink())
            self.assertEqual(TABLE.read_bytes(), installed.read_bytes())
            # The installed package reads its own copy.
            out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                                  "from stoke import _options; print(_options.TABLE, len(_options.OPTIONS))", tmp],
                                 check=True, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""))
            self.assertEqual(f"{installed} {len(_options.OPTIONS)}", out.stdout.strip())


if __name__ == "__main__":
    unittest.main()
