"""Builds the self-contained wheel: ``./stoke wheel`` runs this once the build's lib folder is made.

    /usr/bin/python3 clients/python/build_wheel.py --lib cli/target/lib --java-home $JAVA_HOME \
        --jvm-options cli/jvm.options --module-options cli/modules.options --out clients/python/dist

writes ``dist/stoke-<version>-py3-none-linux_<arch>.whl`` (the version from pyproject.toml) with

- the Python package (``stoke/*.py``; no tests, no benchmarks, no .pyc) and its ``stoke/options.json``, the
  loader's options table (the file's content: in a checkout it is a link to the serve module's);
- ``stoke/_java/runtime/``: a Java runtime made by ``jlink`` with only the modules the lib needs
  (``jdeps --print-module-deps`` on it, plus jdk.unsupported, which libraries reach by
  reflection; its ``release`` file lists them with those they require);
- ``stoke/_java/lib/``: the build's lib folder, run as ./stoke runs it (``-p lib -m
  io.stoke.cli/io.stoke.cli.Main``), less what the package never runs (LEFT_OUT);
- ``stoke/_java/jvm.options`` and ``stoke/_java/modules.options`` (./stoke's, cli/jvm.options and
  cli/modules.options);
- ``stoke/_java/native/``: Stoke's C libraries (libstoke_pixels.so, libstoke_augment.so, libstoke_jpeg.so, libstoke_image.so), taken out of
  the bindings' jar, which the producer opens in place (``-Dstoke.pixels.path``, ``-Dstoke.jpeg.path``);
- no AOT cache: JDK 25 takes one only where the module path is the one it was recorded at, so the
  installed package's runtime records its own at the first use (``stoke._home._aot_cache``).

The wheel is written with the standard library alone (zipfile, with the RECORD, WHEEL and METADATA
of the wheel spec, PEP 427/491), so it builds offline with no setuptools or wheel package.
"""

import argparse
import base64
import csv
import hashlib
import io
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent  # clients/python
# Modules reached only by reflection, which jdeps cannot see: sun.misc.Unsafe (Agrona, Netty).
EXTRA_MODULES = ["jdk.unsupported"]
NATIVE = {"libstoke_pixels.so": "stoke.pixels.path", "libstoke_augment.so": "stoke.augment.path",
          "libstoke_jpeg.so": "stoke.jpeg.path",
          "libstoke_image.so": "stoke.image.path"}


def say(msg):
    print(f"stoke wheel: {msg}", file=sys.stderr, flush=True)


def project():
    """(name, version, summary, requires-python, dependencies, optional dependencies) from pyproject.toml."""
    text = (HERE / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
        p = tomllib.loads(text)["project"]
    except ImportError:  # Python < 3.11: the few fields this needs
        def field(name):
            m = re.search(rf'^{name}\s*=\s*"([^"]*)"', text, re.M)
            return m.group(1) if m else None
        deps = re.search(r'^dependencies\s*=\s*\[([^\]]*)\]', text, re.M)
        p = {"name": field("name"), "version": field("version"), "description": field("description"),
             "requires-python": field("requires-python"),
             "dependencies": re.findall(r'"([^"]+)"', deps.group(1)) if deps else [],
             "optional-dependencies": {k: re.findall(r'"([^"]+)"', v)
                                       for k, v in re.findall(r'^(\w+)\s*=\s*\[([^\]]*)\]', text.split(
                                           "[project.optional-dependencies]", 1)[-1].split("\n[", 1)[0], re.M)}}
    return p


# What the lib carries that the Python package never runs: the package starts `serve`, which the AOT
# training covers. ONNX Runtime's jar (75 MB, most of it its native libraries) is left out whole, with
# every module that requires it (io.stoke.embed): `stoke embed` and `spark-embed` alone use them, and
# from the wheel they are named as not in this build.
LEFT_OUT_JARS = ("onnxruntime-",)
# Of the other jars, by jar (the file name's start), the entries left out, as the shaded stoke.jar's
# filters (cli/pom.xml) leave them out:
# - zstd-jni's and snappy-java's libraries for other platforms than Linux x86-64;
# - of Hadoop's client jar, the eleven classes parquet-java's read options load (never run: Stoke
#   reads Parquet with no Hadoop). parquet-java stays whole: stoke.DataLoader reads Parquet datasets.
ZSTD_OTHER_PLATFORMS = ("aix/", "darwin/", "freebsd/", "win/", "linux/aarch64/", "linux/arm/", "linux/i386/",
                        "linux/loongarch64/", "linux/mips64/", "linux/ppc64/", "linux/ppc64le/", "linux/riscv64/",
                        "linux/s390x/")
HADOOP_KEPT = re.compile(r"META-INF/MANIFEST\.MF|org/apache/hadoop/(mapreduce/InputFormat|mapreduce/lib/input/FileInputFormat"
                         r"|mapreduce/lib/input/FileInputFormat\$.*|mapreduce/lib/input/InvalidInputException"
                         r"|mapreduce/MRJobConfig|mapreduce/JobContext|mapreduce/RecordReader|fs/PathFilter"
                         r"|fs/FileStatus|fs/LocatedFileStatus|io/Writable)\.class")
LEFT_OUT = {
    "zstd-jni-": lambda name: name.startswith(ZSTD_OTHER_PLATFORMS),
    "snappy-java-": lambda name: name.startswith("org/xerial/snappy/native/")
    and not name.startswith("org/xerial/snappy/native/Linux/x86_64/"),
    "hadoop-client-api-": lambda name: not HADOOP_KEPT.fullmatch(name),
}


# Prints each module of a module path folder: its jar's name, its name, and the modules it requires
# other than statically (java's own ModuleFinder, run as a source file by the JDK's java).
DESCRIBE = """
import java.lang.module.*;
import java.nio.file.Path;

class Describe {
    public static void main(String[] args) {
        for (ModuleReference m : ModuleFinder.of(Path.of(args[0])).findAll()) {
            StringBuilder line = new StringBuilder(Path.of(m.location().orElseThrow()).getFileName() + " "
                    + m.descriptor().name());
            m.descriptor().requires().stream()
                    .filter(r -> !r.modifiers().contains(ModuleDescriptor.Requires.Modifier.STATIC))
                    .forEach(r -> line.append(' ').append(r.name()));
            System.out.println(line);
        }
    }
}
"""


def describe(java_home, folder):
    """{jar name: (module name, the modules it requires other than statically)} of a module path folder."""
    with tempfile.TemporaryDirectory(prefix="stoke-describe-") as tmp:
        source = Path(tmp) / "Describe.java"
        source.write_text(DESCRIBE)
        out = subprocess.run([str(java_home / "bin" / "java"), str(source), str(folder)], check=True,
                             capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        jar, name, *requires = line.split()
        found[jar] = (name, set(requires))
    return found


def left_out(mods):
    """The module path's jars the wheel leaves out: LEFT_OUT_JARS, and every jar whose module requires
    one left out (else the JVM would refuse to start, not finding it)."""
    out = {jar for jar in mods if jar.startswith(LEFT_OUT_JARS)}
    while True:
        gone = {mods[jar][0] for jar in out}
        more = {jar for jar, (_, requires) in mods.items() if jar not in out and requires & gone}
        if not more:
            return out
        out |= more


def module_options(src, dst, present):
    """./stoke's module options, less the modules the wheel leaves out (the JVM warns of each one it
    is told of and does not find)."""
    lines = []
    for line in src.read_text(encoding="utf-8").splitlines():
        if line.startswith("--enable-native-access="):
            names = line.split("=", 1)[1].split(",")
            line = "--enable-native-access=" + ",".join(n for n in names if n in present)
        lines.append(line)
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")


def copy_lib(src, dst, leave_out):
    """The lib folder less the jars ``leave_out`` names and LEFT_OUT's entries; returns the jars it wrote."""
    written = []
    dst.mkdir(parents=True)
    for jar in sorted(src.glob("*.jar")):
        if jar.name in leave_out or jar.name.startswith(LEFT_OUT_JARS):
            continue
        out = dst / jar.name
        drop = next((f for start, f in LEFT_OUT.items() if jar.name.startswith(start)), None)
        if drop is None:
            shutil.copyfile(jar, out)
        else:
            with zipfile.ZipFile(jar) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
                for info in zin.infolist():
                    if not drop(info.filename):
                        zout.writestr(info, zin.read(info.filename))
        written.append(out)
    return written


def modules(java_home, lib):
    """The JDK's modules that the lib's modules need (the jlinked runtime's)."""
    out = subprocess.run([str(java_home / "bin" / "jdeps"), "--print-module-deps", "--ignore-missing-deps",
                          "--multi-release", "25", "--module-path", str(lib), "--add-modules", "ALL-MODULE-PATH"],
                         check=True, capture_output=True, text=True).stdout
    found = [m for m in out.strip().split(",") if m]
    return sorted(set(found) | set(EXTRA_MODULES))


def jlink(java_home, mods, out):
    # No --compress: jlink's per-class zip-6 left lib/modules at 26 MB in the wheel, where the
    # wheel's own deflate of the whole uncompressed file makes 18 MB; installed it is 59 MB instead
    # of 27, and classes are read without inflating them.
    # Debian's JDK ships separate debug symbols beside each native library (lib/*.debuginfo, 260 MB
    # of a 313 MB wheel): --strip-debug leaves those files, so they are excluded by name.
    subprocess.run([str(java_home / "bin" / "jlink"), "--add-modules", ",".join(mods), "--strip-debug",
                    "--exclude-files=**.debuginfo", "--no-header-files", "--no-man-pages", "--output", str(out)],
                   check=True)


def take_native(jar, native_dir):
    """Copies Stoke's C libraries out of the bindings' jar; returns {file: property} of those it held."""
    found = {}
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        for lib, prop in NATIVE.items():
            entry = f"io/stoke/ffm/native/{lib}"
            if entry in names:
                native_dir.mkdir(parents=True, exist_ok=True)
                (native_dir / lib).write_bytes(z.read(entry))
                (native_dir / lib).chmod(0o755)
                found[lib] = prop
            else:
                say(f"WARNING: the jar holds no {lib} (built without gcc, or without the headers it needs?): the wheel's "
                    "producer will say so and fall back as ./stoke's does")
    return found


def metadata(p):
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}"]
    if p.get("description"):
        lines.append(f"Summary: {p['description']}")
    if p.get("requires-python"):
        lines.append(f"Requires-Python: {p['requires-python']}")
    for dep in p.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {dep}; extra == "{extra}"' for dep in deps]
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + (HERE / "README.md").read_text(encoding="utf-8")


def wheel_text(tag):
    return (f"Wheel-Version: 1.0\nGenerator: stoke build_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n")


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(path, files, dist_info, texts):
    """files: [(archive name, file on disk)]; texts: {name in dist-info: str}. RECORD last."""
    rows = []
    stamp = time.localtime(max(int(os.environ.get("SOURCE_DATE_EPOCH", time.time())), 315532800))[:6]

    def add(z, name, data, mode):
        info = zipfile.ZipInfo(name, date_time=stamp)
        info.external_attr = (stat.S_IFREG | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, data, compresslevel=6)
        rows.append((name, digest(data), str(len(data))))

    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w") as z:
        for name, src in files:
            mode = 0o755 if os.access(src, os.X_OK) else 0o644
            add(z, name, src.read_bytes(), mode)
        for name, text in texts.items():
            add(z, f"{dist_info}/{name}", text.encode("utf-8"), 0o644)
        record = io.StringIO()
        writer = csv.writer(record, lineterminator="\n")
        writer.writerows(rows)
        writer.writerow((f"{dist_info}/RECORD", "", ""))
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=stamp)
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, record.getvalue())
    tmp.replace(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", type=Path, required=True, help="the build's lib folder (cli/target/lib)")
    ap.add_argument("--java-home", type=Path, required=True, help="the JDK whose jlink and jdeps to use (>= 25)")
    ap.add_argument("--jvm-options", type=Path, required=True, help="./stoke's java argument file (cli/jvm.options)")
    ap.add_argument("--module-options", type=Path, required=True,
                    help="./stoke's module path options (cli/modules.options)")
    ap.add_argument("--out", type=Path, default=HERE / "dist")
    args = ap.parse_args()

    p = project()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    tag = f"py3-none-linux_{arch}"
    name = re.sub(r"[-_.]+", "_", p["name"]).lower()
    dist_info = f"{name}-{p['version']}.dist-info"
    args.out.mkdir(parents=True, exist_ok=True)
    wheel = args.out.resolve() / f"{name}-{p['version']}-{tag}.whl"

    started = time.monotonic()
    stage = Path(tempfile.mkdtemp(prefix="stoke-wheel-"))
    try:
        java_dir = stage / "stoke" / "_java"
        java_dir.mkdir(parents=True)
        described = describe(args.java_home, args.lib)
        leave_out = left_out(described)
        say(f"left out of the lib: {', '.join(sorted(leave_out))} (the package never runs them)")
        cli = [jar for jar in leave_out if described[jar][0] == "io.stoke.cli"]
        if cli:
            raise SystemExit(f"stoke wheel: io.stoke.cli would be left out, since it requires a module the wheel leaves "
                             f"out ({', '.join(sorted(leave_out))}): require that one statically")
        jars = copy_lib(args.lib, java_dir / "lib", leave_out)
        mods = modules(args.java_home, java_dir / "lib")
        say(f"jlink: a Java runtime of {len(mods)} modules ({', '.join(mods)})")
        jlink(args.java_home, mods, java_dir / "runtime")
        shutil.copy2(args.jvm_options, java_dir / "jvm.options")
        module_options(args.module_options, java_dir / "modules.options",
                       {name for jar, (name, _) in described.items() if jar not in leave_out})
        bindings = [j for j in jars if j.name.startswith("stoke-ffm-bindings-")]
        if len(bindings) != 1:
            raise SystemExit(f"stoke wheel: {args.lib}/modules holds {len(bindings)} stoke-ffm-bindings jars, not one")
        take_native(bindings[0], java_dir / "native")
        # No AOT cache: JDK 25 takes one only where the module path is the one it was recorded at,
        # so the installed package records its own at its first use (stoke._home._aot_cache).

        files = []
        for src in sorted((HERE / "stoke").glob("*.py")):
            files.append((f"stoke/{src.name}", src))
        # The options table: in a checkout a link to the serve module's; the wheel holds its content.
        files.append(("stoke/options.json", (HERE / "stoke" / "options.json").resolve(strict=True)))
        for entry in sorted(java_dir.rglob("*")):
            if entry.is_file():  # follows links: jlink's legal/ links to java.base's notices
                files.append((entry.relative_to(stage).as_posix(), entry.resolve()))
        write_wheel(wheel, files, dist_info, {"METADATA": metadata(p), "WHEEL": wheel_text(tag)})
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    size = wheel.stat().st_size
    say(f"wrote {wheel} ({size / 1e6:.1f} MB, {time.monotonic() - started:.0f} s)")
    print(wheel)


if __name__ == "__main__":
    main()
