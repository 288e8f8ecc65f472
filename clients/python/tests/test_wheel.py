"""The self-contained wheel (``./stoke wheel``) is the whole install (run by ./stoke test).

Builds the wheel once for this module (or takes ``$STOKE_TEST_WHEEL``), checks its RECORD and what
it leaves out, installs it into a fresh venv with pip, and runs a ``stoke.DataLoader`` epoch over
JPEGs made here, in a mount namespace where every JDK is hidden (``/usr/lib/jvm`` and this checkout
are empty tmpfs mounts, no java on PATH, no JAVA_HOME or STOKE_HOME, cwd outside the checkout): the
producer must be the wheel's own java. A second run hides libturbojpeg too and expects an error
that names the package to install. Needs root (for ``unshare -m``), python3-venv, numpy, torch and
PIL; where one is missing the tests skip and say why.
"""

import base64
import csv
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
CLASSES = {"ant": 4, "bee": 6, "cow": 5}  # ImageFolder: class folders in sorted order are labels 0, 1, 2
BUNDLED_JAVA = "stoke/_java/runtime/bin/java"

TMP = None
WHEEL = None
VENV = None
DATA = None
SKIP = None


def _why_not():
    """Why the install test cannot run here, or None."""
    for module in ("numpy", "torch", "PIL"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed for {sys.executable}"
    if os.geteuid() != 0:
        return "hiding the JDKs needs a mount namespace with tmpfs mounts (unshare -m), which needs root"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "none", "/mnt"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare -m with a tmpfs mount is not allowed here: {probe.stderr.strip()}"
    try:
        import ensurepip  # noqa: F401  (Debian leaves it out of python3 without python3-venv)
    except ImportError:
        return "python3-venv is not installed (sudo apt-get install -y python3-venv)"
    return None


def make_venv_seeing_these_packages(venv):
    """A fresh venv that imports the numpy, torch and PIL of the Python running these tests.

    From the system's Python, ``--system-site-packages`` does it. From a venv (./stoke test's torch
    2.14.1 stack) it would not: the new venv's system packages are the base Python's (Debian's torch
    1.13), so it gets none and a ``.pth`` file holding this venv's site-packages instead.
    """
    import site
    in_venv = sys.prefix != sys.base_prefix
    subprocess.run([sys.executable, "-m", "venv", *([] if in_venv else ["--system-site-packages"]), str(venv)],
                   check=True)
    if in_venv:
        (pth,) = venv.glob("lib/python*/site-packages")
        (pth / "_stoke_test_packages.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))


def setUpModule():
    global TMP, WHEEL, VENV, DATA, SKIP
    SKIP = _why_not()
    if SKIP:
        print(f"[stoke] SKIPPING the wheel install tests: {SKIP}", file=sys.stderr)
        return
    TMP = Path(tempfile.mkdtemp(prefix="stoke-wheel-test-")).resolve()
    assert CHECKOUT not in TMP.parents, f"the test's folder {TMP} must lie outside the checkout"
    started = time.monotonic()
    if os.environ.get("STOKE_TEST_WHEEL"):
        WHEEL = Path(os.environ["STOKE_TEST_WHEEL"]).resolve()
    else:
        out = subprocess.run([str(CHECKOUT / "stoke"), "wheel", "--out", str(TMP / "dist")], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        WHEEL = Path(out.strip().splitlines()[-1])
    built = time.monotonic()
    VENV = TMP / "venv"
    make_venv_seeing_these_packages(VENV)
    subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--disable-pip-version-check", str(WHEEL)], check=True)
    print(f"[stoke] wheel {WHEEL.name} ({WHEEL.stat().st_size / 1e6:.1f} MB): built in {built - started:.0f} s, "
          f"venv and pip install in {time.monotonic() - built:.0f} s", file=sys.stderr)
    from PIL import Image
    DATA = TMP / "data"
    for c, (name, count) in enumerate(sorted(CLASSES.items())):
        (DATA / name).mkdir(parents=True)
        for i in range(count):
            size = (40 + 7 * i + c, 33 + 5 * i)
            mode = "L" if i == 1 else "RGB"  # a grayscale JPEG among them
            Image.new(mode, size, 40 * c + 3 * i if mode == "L" else (40 * c, 10 * i, 200)).save(
                DATA / name / f"x{i}.jpg", quality=90)


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def run_hidden(script, hide_turbojpeg=False):
    """Runs ``script`` with the venv's python where no JDK, no checkout and (optionally) no
    libturbojpeg can be seen; returns the JSON it prints last."""
    (TMP / "script.py").write_text(textwrap.dedent(script))
    hidden = ["/usr/lib/jvm", str(CHECKOUT)]
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.isdir(java_home) and not Path(java_home).resolve().is_relative_to("/usr/lib/jvm"):
        hidden.append(str(Path(java_home).resolve()))  # the JDK ./stoke test runs with, where it lies elsewhere
    mounts = [f"mount -t tmpfs none {shlex.quote(d)}" for d in hidden if os.path.isdir(d)]
    if hide_turbojpeg:
        lib = Path("/usr/lib/x86_64-linux-gnu/libturbojpeg.so.0").resolve()
        mounts.append(f"mount --bind /dev/null {shlex.quote(str(lib))}")
    env = {"PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": str(TMP), "LANG": "C.UTF-8",
           "CHECKOUT": str(CHECKOUT), "DATA": str(DATA)}
    proc = subprocess.run(["unshare", "-m", "sh", "-c", " && ".join(mounts) + ' && exec "$@"', "sh",
                           str(VENV / "bin" / "python"), str(TMP / "script.py")],
                          cwd=TMP, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"the script exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


class WheelTest(unittest.TestCase):
    def setUp(self):
        if SKIP:
            self.skipTest(SKIP)

    def test_record_metadata_and_contents(self):
        text = (PACKAGE_ROOT / "pyproject.toml").read_text()
        version = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)
        self.assertEqual(WHEEL.name, f"stoke-{version}-py3-none-linux_x86_64.whl")
        with zipfile.ZipFile(WHEEL) as z:
            names = z.namelist()
            dist_info = f"stoke-{version}.dist-info"
            self.assertIn("Tag: py3-none-linux_x86_64", z.read(f"{dist_info}/WHEEL").decode())
            self.assertIn("Root-Is-Purelib: false", z.read(f"{dist_info}/WHEEL").decode())
            meta = z.read(f"{dist_info}/METADATA").decode()
            self.assertIn(f"Name: stoke\nVersion: {version}\n", meta)
            record = list(csv.reader(io.StringIO(z.read(f"{dist_info}/RECORD").decode())))
            self.assertEqual(sorted(r[0] for r in record), sorted(names))
            for name, digest, size in record:
                if name == f"{dist_info}/RECORD":
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = z.read(name)
                self.assertEqual(int(size), len(data), name)
                self.assertEqual(digest, "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest())
                                 .rstrip(b"=").decode(), name)
            for needed in ("stoke/__init__.py", "stoke/loader.py", "stoke/_java/jvm.options", "stoke/_java/modules.options",
                           BUNDLED_JAVA, "stoke/_java/runtime/lib/modules"):
                self.assertIn(needed, names)
            # No AOT cache: one recorded on the module path where the wheel was built would never be
            # taken where pip puts it; the install records its own (test_the_cli_runs_from_the_wheel).
            self.assertEqual([], [n for n in names if n.endswith(".aot")])
            # The build's lib folder (the module path), jar for jar, less ONNX Runtime's and the
            # module that requires it; the shaded stoke.jar is not in the wheel.
            lib = CHECKOUT / "cli" / "target" / "lib"
            self.assertEqual(sorted(f"stoke/_java/lib/{j.name}" for j in lib.glob("*.jar")
                                    if not j.name.startswith(("onnxruntime-", "stoke-embed-"))),
                             sorted(n for n in names if n.startswith("stoke/_java/lib/")))
            self.assertNotIn("stoke/_java/stoke.jar", names)
            # The C libraries the checkout's jar carries (none where it was built without gcc, which
            # ./stoke wheel says; the producer then falls back as ./stoke's does).
            with zipfile.ZipFile(CHECKOUT / "cli" / "target" / "stoke.jar") as jar:
                built = sorted(n.rsplit("/", 1)[1] for n in jar.namelist()
                               if n.startswith("io/stoke/ffm/native/") and n.endswith(".so"))
            self.assertEqual([f"stoke/_java/native/{lib}" for lib in built],
                             sorted(n for n in names if n.startswith("stoke/_java/native/")))
            # A JDK's separate debug symbols (Debian's jmods carry .debuginfo files) stay out.
            self.assertEqual([], [n for n in names if n.endswith(".debuginfo")])
            self.assertEqual(z.getinfo(BUNDLED_JAVA).external_attr >> 16 & 0o111, 0o111, "java must be executable")
            left_out = [n for n in names if n.endswith(".pyc") or "__pycache__" in n or "tests/" in n
                        or "benchmark" in n or n.endswith(".java")]
            self.assertEqual(left_out, [])
            # Test aids (the ring dumper the Java suite drives, tests/_dump.py) ship to no user: the
            # wheel's Python files are the package's modules, every one of them, and nothing else.
            aids = [n for n in names if n.startswith("tests/") or "/tests/" in n or n.rsplit("/", 1)[-1]
                    in ("dump.py", "_dump.py")]
            self.assertEqual([], aids, "no test aid in the wheel")
            self.assertEqual(sorted(f"stoke/{p.name}" for p in (PACKAGE_ROOT / "stoke").glob("*.py")),
                             sorted(n for n in names if n.endswith(".py")))
            # The options table, the file's content where the checkout holds a link to the serve module's.
            self.assertEqual((CHECKOUT / "serve/src/main/resources/io/stoke/serve/options.json").read_bytes(),
                             z.read("stoke/options.json"))
            self.assertEqual(stat.S_IFREG, stat.S_IFMT(z.getinfo("stoke/options.json").external_attr >> 16))
            release = z.read("stoke/_java/runtime/release").decode()
            self.assertNotIn("jdk.compiler", release)  # a runtime, not a JDK: no javac
            self.assertNotIn("stoke/_java/runtime/bin/javac", names)

    def test_epoch_without_any_jdk(self):
        result = run_hidden("""
            import json, os, shutil
            import numpy, torch
            import stoke
            out = {"torch": torch.__version__, "numpy": numpy.__version__, "java_on_path": shutil.which("java"), "jvm_dir": os.listdir("/usr/lib/jvm") if os.path.isdir("/usr/lib/jvm") else [],
                   "checkout": os.listdir(os.environ["CHECKOUT"]), "cwd": os.getcwd(),
                   "env": sorted(k for k in ("JAVA_HOME", "STOKE_HOME", "PYTHONPATH") if k in os.environ),
                   "package": os.path.dirname(stoke.__file__), "batches": []}
            with stoke.DataLoader(os.environ["DATA"], batch_size=4, resize=40, crop=32, num_workers=2,
                                  with_indices=True) as loader:
                out["exe"] = os.readlink(f"/proc/{loader._producer.proc.pid}/exe")
                out["args"] = loader._producer.proc.args
                out["samples"] = [list(s) for s in loader.samples]
                for images, labels, indices in loader:
                    out["batches"].append({"shape": list(images.shape), "dtype": str(images.dtype),
                                           "labels": labels.tolist(), "indices": indices.tolist()})
            print(json.dumps(out))
            """)
        # The venv ran the torch and numpy of the stack under test, not another found on the machine.
        import numpy
        import torch
        self.assertEqual((result["torch"], result["numpy"]), (torch.__version__, numpy.__version__))
        # Nothing to fall back on was visible.
        self.assertIsNone(result["java_on_path"])
        self.assertEqual(result["jvm_dir"], [])
        self.assertEqual(result["checkout"], [])
        self.assertEqual(result["env"], [])
        self.assertFalse(result["cwd"].startswith(str(CHECKOUT)))
        # The producer was the wheel's java, with the wheel's jars and options, and the AOT cache
        # this install recorded at its first use, in the user's cache folder (HOME is TMP here).
        package = Path(result["package"])
        self.assertTrue(package.is_relative_to(VENV), package)
        self.assertEqual(result["exe"], str(package / "_java" / "runtime" / "bin" / "java"))
        args = result["args"]
        # Started through the parent-death wrapper, which exec'd the java in its own process.
        self.assertEqual(args[1:4], ["-S", "-I", str(package / "_parent_death.py")])
        args = args[args.index("--") + 1:]
        self.assertEqual(args[0], result["exe"])
        caches = [a for a in args if a.startswith("-XX:AOTCache=")]
        self.assertEqual(1, len(caches), args)
        self.assertEqual(TMP / ".cache" / "stoke" / "aot", Path(caches[0].split("=", 1)[1]).parent)
        self.assertIn(f"@{package / '_java' / 'jvm.options'}", args)
        # On the module path, as ./stoke runs it.
        self.assertNotIn("-jar", args)
        self.assertIn(f"@{package / '_java' / 'modules.options'}", args)
        self.assertEqual(args[args.index("-p") + 1], str(package / "_java" / "lib"))
        # `serve`, or `prestart` where `import stoke` found this install's AOT cache recorded (by an
        # earlier test's first use) and started the producer then (stoke/_prestart.py).
        self.assertEqual(args[args.index("-m") + 1], "io.stoke.cli/io.stoke.cli.Main")
        self.assertIn(args[args.index("-m") + 2], ("serve", "prestart"), args)
        # Every sample exactly once, with its folder's label, at the asked shape.
        classes = sorted(CLASSES)
        samples = result["samples"]
        self.assertEqual(sorted(os.path.relpath(p, DATA) for p, _ in samples),
                         sorted(f"{c}/x{i}.jpg" for c, n in CLASSES.items() for i in range(n)))
        for path, label in samples:
            self.assertEqual(label, classes.index(Path(path).parent.name), path)
        seen = []
        for batch in result["batches"]:
            self.assertEqual(batch["shape"], [len(batch["labels"]), 32, 32, 3])
            self.assertEqual(batch["dtype"], "torch.uint8")
            for index, label in zip(batch["indices"], batch["labels"]):
                self.assertEqual(label, samples[index][1], samples[index][0])
            seen += batch["indices"]
        self.assertEqual(sorted(seen), list(range(sum(CLASSES.values()))))
        self.assertEqual(len(seen), len(set(seen)))

    def test_a_parquet_epoch_from_the_wheel(self):
        # The Hub's layout, written and read by the wheel's own runtime and jar (parquet-java in it).
        result = run_hidden("""
            import json, subprocess, sys
            import stoke
            made = subprocess.run([sys.executable, "-m", "stoke", "make-dataset", "--images", "9", "--classes", "3",
                                   "--seed", "5", "--format", "parquet", "--rows-per-group", "4", "pq"],
                                  capture_output=True, text=True)
            out = {"code": made.returncode, "err": made.stderr, "indices": [], "labels": []}
            if made.returncode == 0:
                with stoke.DataLoader("pq", batch_size=4, resize=40, crop=32, with_indices=True) as loader:
                    for images, labels, indices in loader:
                        out["indices"] += indices.tolist()
                        out["labels"] += labels.tolist()
            print(json.dumps(out))
            """)
        self.assertEqual(result["code"], 0, result["err"])
        self.assertEqual(list(range(9)), result["indices"])
        # make-dataset deals the images out to the classes in turn; the rows are in the folder's order.
        self.assertEqual([0, 0, 0, 1, 1, 1, 2, 2, 2], result["labels"])

    def test_the_cli_runs_from_the_wheel(self):
        # python -m stoke: the whole command line from the bundled runtime, no JDK or checkout visible.
        result = run_hidden("""
            import json, os, subprocess, sys
            out = subprocess.run([sys.executable, "-m", "stoke", "make-dataset", "--images", "3", "--classes", "1",
                                  "--seed", "5", "made"], capture_output=True, text=True)
            files = [os.path.join(d, f) for d, _, names in os.walk("made") for f in names]
            usage = subprocess.run([sys.executable, "-m", "stoke", "--help"], capture_output=True, text=True)
            embed = subprocess.run([sys.executable, "-m", "stoke", "embed", "made"], capture_output=True, text=True)
            loads = subprocess.run([sys.executable, "-m", "stoke", "--version"], capture_output=True, text=True,
                                   env=dict(os.environ, STOKE_JAVA_OPTS="-Xlog:class+load=info -Xlog:aot=warning"))
            print(json.dumps({"code": out.returncode, "err": out.stderr, "files": sorted(files),
                              "loads": [loads.returncode, loads.stdout, loads.stderr],
                              "usage": [usage.returncode, usage.stdout, usage.stderr],
                              "embed": [embed.returncode, embed.stdout, embed.stderr]}))
            """)
        self.assertEqual(result["code"], 0, result["err"])
        self.assertEqual(result["files"], [f"made/n00000000/n00000000_0000000{i}.jpg" for i in range(3)])
        # The AOT cache this install recorded on its module path holds the CLI's classes, and the
        # JVM takes it (its checks of the module path and the jars passed).
        code, loads, err = result["loads"]
        self.assertEqual(code, 0, err)
        self.assertIn("io.stoke.cli.Main source: shared objects file", loads, loads[-3000:] + err)
        # The wheel's jar leaves ONNX Runtime out: --help lists every other command and names those absent,
        # and running one says so in a sentence.
        code, usage, err = result["usage"]
        self.assertEqual((code, err), (0, ""), usage)
        for command in ("bench", "serve", "gpu-check", "make-dataset", "tune"):
            self.assertIn(f"  {command} ", usage)
        self.assertIn("Not in this build", usage)
        self.assertIn("embed", usage.split("Not in this build")[1])
        self.assertNotIn("tune", usage.split("Not in this build")[1])
        code, out, err = result["embed"]
        self.assertEqual((code, out), (1, ""), err)
        self.assertRegex(err, r"^stoke: the embed command is not in this build: the class (ai/onnxruntime|io/stoke/embed)/\w+"
                              r" it needs is "
                              r"missing .* run it from a Stoke checkout's ./stoke\n$")

    def test_tune_runs_from_the_wheel_with_a_sleep_step(self):
        # The tuner needs no ONNX Runtime unless its step is a model: stoke.tune works from the wheel.
        result = run_hidden("""
            import json, subprocess, sys
            import stoke
            subprocess.run([sys.executable, "-m", "stoke", "make-dataset", "--images", "16", "--classes", "2",
                            "--seed", "5", "tune-data"], check=True, capture_output=True)
            report = stoke.tune("tune-data", "tuned", step_ms=1, batch_sizes=(4, 8), max_workers=2,
                                seconds_per_point=0.3, candidates=1)
            try:
                stoke.tune("tune-data", "tuned-model", model="m.onnx")
                model = "no error"
            except stoke.TuneError as e:
                model = str(e)
            print(json.dumps({"best": report["recommendation"], "model": model}))
            """)
        self.assertIn(result["best"]["batch_size"], (4, 8), result)
        self.assertIn("needs ONNX Runtime", result["model"])

    def test_missing_libturbojpeg_names_the_package(self):
        result = run_hidden("""
            import json, os
            import stoke
            try:
                stoke.DataLoader(os.environ["DATA"], batch_size=4, resize=40, crop=32, num_workers=1).close()
                print(json.dumps({"error": None}))
            except stoke.ProducerError as e:
                print(json.dumps({"error": str(e)}))
            """, hide_turbojpeg=True)
        self.assertIsNotNone(result["error"], "the producer started without libturbojpeg")
        self.assertIn("libturbojpeg was not found", result["error"])
        self.assertIn("apt-get install -y libturbojpeg0", result["error"])


if __name__ == "__main__":
    unittest.main()
