"""The options table (``options.json``, declared once in the serve module) as the Python package
reads it (run by ./stoke test): the package's link to it, what a ``pip install`` of the checkout
holds, a table that is not one refused naming the file; and ``stoke.DataLoader`` against it: its
signature and docstring hold every keyword of the table, ``_settings.resolve`` checks each option
from its entry, ``serve_arguments`` passes each by its flag, and a made-up option added to the
table is seen by all three. Needs no producer (the settings tests need torch).
"""

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))

sys.path.insert(0, str(HERE))
os.environ.setdefault("STOKE_HOME", str(CHECKOUT))  # resolve() names the command that would start a producer

try:
    from stoke import _options  # noqa: E402  (the package needs numpy; the settings tests below need torch)
except ImportError:
    # numpy hidden: the table's reader alone, from the package's file (it imports nothing of the
    # package), so that the table's own checks still run.
    import importlib.util
    _spec = importlib.util.spec_from_file_location("_options", PACKAGE_ROOT / "stoke" / "_options.py")
    _options = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_options)

try:
    import torch  # noqa: F401
    import stoke
    from stoke import _producer, _settings
    import _aids  # tests/_aids.py
    NO_TORCH = None
except ImportError as e:
    NO_TORCH = f"{e.name} is not installed"

TABLE = CHECKOUT / "serve" / "src" / "main" / "resources" / "io" / "stoke" / "serve" / "options.json"
# A path is enough for resolve(): nothing is read or started before the producer is.
PATH = "/nonexistent/train"


# Whether this python builds the checkout's wheel with no index (pip's --no-build-isolation): setuptools,
# with bdist_wheel its own from 70.1, the wheel package's before.
BUILDS_WHEELS = """
import setuptools
try:
    import setuptools.command.bdist_wheel
except ImportError:
    import wheel.bdist_wheel
"""


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
    @unittest.skipIf(subprocess.run([sys.executable, "-c", BUILDS_WHEELS], capture_output=True).returncode != 0,
                     "this python cannot build a wheel offline: setuptools, and wheel before setuptools 70.1, "
                     "are not installed for it (a fresh venv of Debian 12's python has no wheel)")
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



def signature_gaps():
    """What ``stoke.DataLoader``'s signature and docstring lack against the table, one line each: a
    keyword of the table that is no keyword of ``__init__`` or is not in its Args; a keyword of
    ``__init__`` that is neither the table's nor one that ``_settings.resolve`` names (PyTorch's own
    and Stoke's Python-only), or whose default differs from theirs; a deprecated spelling not said."""
    params = inspect.signature(stoke.DataLoader.__init__).parameters
    doc = inspect.getdoc(stoke.DataLoader)
    args = doc[doc.index("\nArgs:\n"):doc.index("\nRaises:\n")]
    documented = set(re.findall(r"^    (?:\*\*)?(\w+)(?: \(|:)", args, re.M))
    table = {o.python: o for o in _options.OPTIONS if o.python is not None}
    own = {n: p for n, p in inspect.signature(_settings.resolve).parameters.items()
           if p.kind is inspect.Parameter.KEYWORD_ONLY}
    gaps = []
    for keyword, option in table.items():
        if keyword not in params:
            gaps.append(f"{keyword}: the table's, not a keyword of DataLoader.__init__")
        elif params[keyword].default is not None and params[keyword].default != option.python_value() and (
                keyword != "num_workers" or params[keyword].default != 0):  # PyTorch's 0: Stoke's "auto"
            gaps.append(f"{keyword}: default {params[keyword].default!r}, the table's {option.python_value()!r}")
        if keyword not in documented:
            gaps.append(f"{keyword}: the table's, not in DataLoader's Args")
        if option.deprecated_python and not re.search(rf"``{option.deprecated_python}``", args):
            gaps.append(f"{option.deprecated_python}: deprecated spelling of {keyword}, not in DataLoader's Args")
    for name, p in params.items():
        if name in ("self", "dataset") or p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        if name not in table and name not in own:
            gaps.append(f"{name}: a keyword of DataLoader.__init__ that is neither the table's nor resolve's")
        if name in own and own[name].default != p.default:
            gaps.append(f"{name}: default {p.default!r}, resolve's {own[name].default!r}")
        if name not in documented:
            gaps.append(f"{name}: a keyword of DataLoader.__init__ not in its Args")
    return gaps


#: An option no one has written: an int of 1 to 5, default 3.
MADE_UP = _options.Option(name="made_up_level", type="int", default="3", cli="--made-up-level", python="made_up_level",
                          builder="madeUpLevel", help="Made up for the test.", label="N", min=1, max=5)


@unittest.skipIf(NO_TORCH, NO_TORCH or "")
class DataLoaderAgainstTheTableTest(unittest.TestCase):
    def test_the_signature_and_its_docstring_hold_every_keyword_of_the_table(self):
        self.assertEqual([], signature_gaps())

    def test_a_made_up_option_is_checked_from_the_table_passed_by_its_flag_and_missed_by_the_signature(self):
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'made_up_level'"):
            _settings.resolve(PATH, seed=1, made_up_level=4)
        with mock.patch.object(_options, "OPTIONS", _options.OPTIONS + (MADE_UP,)):
            with self.assertRaisesRegex(ValueError, "^made_up_level must be 1 to 5, not 9$"):
                _settings.resolve(PATH, seed=1, made_up_level=9)
            with self.assertRaisesRegex(TypeError, "^made_up_level must be an integer, not 'x'$"):
                _settings.resolve(PATH, seed=1, made_up_level="x")
            settings = _settings.resolve(PATH, seed=1, made_up_level=4)
            self.assertEqual(4, settings.made_up_level)
            args = _producer.serve_arguments(settings, PATH, 0, 0, "r", "i", None)
            self.assertEqual("4", args[args.index("--made-up-level") + 1])
            settings = _settings.resolve(PATH, seed=1)
            self.assertEqual(3, settings.made_up_level, "the table's default")
            self.assertIn("made_up_level: the table's, not a keyword of DataLoader.__init__", signature_gaps())
            self.assertIn("made_up_level: the table's, not in DataLoader's Args", signature_gaps())

    def test_every_option_of_the_table_is_checked_from_its_entry(self):
        bad = {"int": ["x"], "long": ["x"], "float": ["x"], "floats": [[1.0] * 7, "1,2"], "bool": ["yes"],
               "choice": ["no such"], "size": [64, "64X"], "path": [5], "string": ["", 5], "workers": ["x", -1],
               "json": [object()]}
        checked = []
        for option in _options.OPTIONS:
            if option.python is None:
                continue
            values = list(bad[option.type])
            if option.min is not None:
                values.append(option.min - 1)
            if option.max is not None:
                values.append(option.max + 1)
            for value in values:
                with self.assertRaisesRegex((TypeError, ValueError), option.python, msg=f"{option.python}={value!r}"):
                    _settings.resolve(PATH, **{"seed": 1, option.python: value})
            settings = _settings.resolve(PATH, seed=1)
            self.assertEqual(option.python_value() if option.name not in ("seed", "workers") else
                             {"seed": 1, "workers": "auto"}[option.name], getattr(settings, option.name),
                             f"{option.name}: the table's default")
            checked.append(option.python)
        self.assertGreater(len(checked), 25)

    def test_serve_arguments_pass_every_keyword_by_the_tables_flag(self):
        settings = _settings.resolve(PATH, seed=5, batch_size=8, shuffle=True, drop_last=False, partition_tail="drop",
                                     restart_cache_dir="/c", restart_cache_size="1G", shard_cache_size="2G",
                                     scale=(0.5, 1), flip=1)
        args = _producer.serve_arguments(settings, PATH, 2, 3, "r", "i", "t")
        for option in _options.OPTIONS:
            flag = option.cli
            if option.python is None:
                continue
            value = getattr(settings, option.name)
            if value is None or value is False:
                self.assertNotIn(flag, args)
            elif value is True:
                self.assertIn(flag, args)
            else:
                self.assertEqual(1, args.count(flag), flag)
                self.assertEqual(_producer.option_arguments(option, value)[1], args[args.index(flag) + 1])
        self.assertEqual(["--partition-tail", "drop"], args[args.index("--partition-tail"):][:2])
        for option in _options.OPTIONS:  # the old spellings stay the Java side's, for old clients
            if option.deprecated_cli:
                self.assertNotIn(option.deprecated_cli, args)
        self.assertEqual("0.5,1.0", args[args.index("--scale") + 1])
        self.assertEqual("1.0", args[args.index("--flip") + 1])
        self.assertEqual("--sample-list-out", args[4])
        self.assertIn("--auto-workers-log", args)
        self.assertNotIn("--drop-last", args)
        self.assertIn("--shuffle", args)

    def test_the_package_keeps_no_test_aid(self):
        # What the tests reach is in tests/_aids.py: the loader's producer and ring, what was said.
        for owner, name in ((stoke.DataLoader, "_proc"), (stoke.DataLoader, "_ring"), (stoke.loader, "_SAID"),
                            (_settings, "SAID")):
            self.assertFalse(hasattr(owner, name), f"{owner.__name__}.{name}")

    def test_deprecated_keywords_work_and_say_once_naming_the_new_one(self):
        _aids.forget_what_was_said()
        for option in _options.OPTIONS:
            if option.deprecated_python is None:
                continue
            value = {"choice": "drop", "path": "/c", "size": "3G"}[option.type]
            extra = {"restart_cache_dir": "/c"} if option.name == "restart_cache_size" else {}
            with self.assertWarnsRegex(stoke.StokeWarning, f"{option.deprecated_python}= is deprecated: it is "
                                                           f"{option.python}= now"):
                settings = _settings.resolve(PATH, seed=1, **{option.deprecated_python: value}, **extra)
            self.assertEqual(value, getattr(settings, option.name))
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # once
                _settings.resolve(PATH, seed=1, **{option.deprecated_python: value}, **extra)
            with self.assertRaisesRegex(TypeError, f"{option.deprecated_python} and {option.python} given"):
                _settings.resolve(PATH, seed=1, **{option.deprecated_python: value, option.python: value}, **extra)
        unknown = r"^DataLoader.__init__\(\) got an unexpected keyword argument 'shard_tails'$"
        with self.assertRaisesRegex(TypeError, unknown):
            stoke.DataLoader(PATH, shard_tails="drop")


if __name__ == "__main__":
    unittest.main()
