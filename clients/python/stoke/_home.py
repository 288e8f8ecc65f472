"""Where Stoke's Java side lives, and the command that starts its producer.

Looked for, in order:

1. the Java runtime bundled in this package (``stoke/_java/``, in the wheel ``./stoke wheel``
   builds): a jlinked runtime, the build's lib folder, Stoke's native libraries and the AOT cache
   that runtime recorded. The producer is ``_java/runtime/bin/java [options] -p _java/lib/modules
   -cp _java/lib/classpath/* -m io.stoke.cli/io.stoke.cli.Main serve ...``, on the module path with
   the options ``./stoke`` uses (``_java/jvm.options`` and ``_java/modules.options`` are the
   checkout's ``cli/jvm.options`` and ``cli/modules.options``), so neither a JDK nor a checkout is
   needed; libturbojpeg0 from the OS is;
2. ``$STOKE_HOME`` (a checkout: the folder holding ``./stoke``);
3. the checkout this package was installed from (pip records it in ``direct_url.json``, PEP 610);
4. the checkout this file lies in (``clients/python/stoke/`` on ``PYTHONPATH``).

From a checkout the producer is ``<checkout>/stoke serve ...``: the launcher finds a JDK >= 25 and
libturbojpeg, builds when sources changed, and runs the CLI.
"""

import json
import os
from pathlib import Path
from typing import List, Optional

#: The bundled Java side, when this package came from the self-contained wheel.
BUNDLED = Path(__file__).resolve().parent / "_java"
#: The modification time the wheel's jars have when its AOT cache is recorded (2000-01-01). The JVM
#: refuses a cache whose jars' times have changed, and pip gives installed files the install's time.
JAR_MTIME = 946684800
_SAID_AOT = []
# Stoke's C libraries beside the bundled jar, opened in place rather than copied out of the jar.
_NATIVE = {"libstoke_pixels.so": "stoke.pixels.path", "libstoke_jpeg.so": "stoke.jpeg.path",
           "libstoke_image.so": "stoke.image.path"}


class StokeNotFoundError(RuntimeError):
    """No ``./stoke`` launcher was found; the message says what to run."""


def _launcher_in(checkout: Optional[Path]) -> Optional[Path]:
    if checkout is None:
        return None
    launcher = Path(checkout) / "stoke"
    return launcher if launcher.is_file() and os.access(launcher, os.X_OK) else None


def _installed_from() -> Optional[Path]:
    """The checkout pip installed this package from, when it recorded a local directory."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution
    except ImportError:  # Python < 3.8
        return None
    try:
        text = distribution("stoke").read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    if not text:
        return None
    url = json.loads(text).get("url", "")
    if not url.startswith("file://"):
        return None
    # The package's project is clients/python inside the checkout.
    return Path(url[len("file://"):]).parent.parent


def bundled_java() -> Optional[Path]:
    """The bundled runtime's ``java``.

    Returns:
        Its path, or None when this package carries none (installed from a checkout).

    Raises:
        StokeNotFoundError: it is there and not executable (the wheel unpacked without file modes).
    """
    java = BUNDLED / "runtime" / "bin" / "java"
    if java.is_file() and (BUNDLED / "lib" / "modules").is_dir():
        if not os.access(java, os.X_OK):
            raise StokeNotFoundError(f"{java} is not executable: the wheel was unpacked without its file modes. "
                                     "Reinstall it with pip (pip install --force-reinstall stoke-*.whl)")
        return java
    return None


def bundled_command() -> List[str]:
    """The bundled runtime's command, to which a CLI command's arguments are added.

    Returns:
        ``java [AOT cache] @jvm.options [native libraries] $STOKE_JAVA_OPTS @modules.options -p
        lib/modules -cp lib/classpath/* -m io.stoke.cli/io.stoke.cli.Main``, in the order ``./stoke``
        gives its own (later options win; ``STOKE_AOT=0`` runs without the cache, as there).
    """
    java = bundled_java()
    cmd = [str(java)]
    aot = BUNDLED / "stoke.aot"
    if os.environ.get("STOKE_AOT", "1") != "0" and aot.is_file() and _jar_as_recorded():
        cmd.append(f"-XX:AOTCache={aot}")
    cmd.append(f"@{BUNDLED / 'jvm.options'}")
    for lib, prop in _NATIVE.items():
        if (BUNDLED / "native" / lib).is_file():
            cmd.append(f"-D{prop}={BUNDLED / 'native' / lib}")
    cmd += os.environ.get("STOKE_JAVA_OPTS", "").split()  # word-split, as ./stoke's unquoted ${STOKE_JAVA_OPTS}
    lib = BUNDLED / "lib"
    return cmd + [f"@{BUNDLED / 'modules.options'}", "-p", str(lib / "modules"), "-cp", str(lib / "classpath" / "*"),
                  "-m", "io.stoke.cli/io.stoke.cli.Main"]


def _jar_as_recorded() -> bool:
    """Sets the installed jars' modification times back to the one the AOT cache was recorded
    against; False, said once, where one cannot be (a read-only install): the cache is then not used."""
    import sys

    jar = BUNDLED / "lib"
    try:
        for jar in sorted((BUNDLED / "lib").glob("*/*.jar")):
            if int(jar.stat().st_mtime) != JAR_MTIME:
                os.utime(jar, (JAR_MTIME, JAR_MTIME))
        return True
    except OSError as e:
        if not _SAID_AOT:
            _SAID_AOT.append(True)
            print(f"stoke: WARNING: the wheel's AOT cache is not used, since {jar}'s time cannot be set back to "
                  f"the one it was recorded against ({e}); a fresh producer starts more slowly", file=sys.stderr)
        return False


def launcher() -> Path:
    """A checkout's ``./stoke``: ``$STOKE_HOME``'s, else the checkout pip installed from, else the one
    this file lies in.

    Returns:
        The launcher's path.

    Raises:
        StokeNotFoundError: none was found (or ``$STOKE_HOME`` holds none), saying what to do.
    """
    home = os.environ.get("STOKE_HOME")
    if home:
        found = _launcher_in(home)
        if found is None:
            raise StokeNotFoundError(
                f"STOKE_HOME={home} holds no executable ./stoke launcher. Point STOKE_HOME at a Stoke "
                "checkout (the folder with ./stoke and README.md), e.g. export STOKE_HOME=/path/to/stoke")
        return found
    for candidate in (_installed_from(), Path(__file__).resolve().parents[3]):
        found = _launcher_in(candidate)
        if found is not None:
            return found
    raise StokeNotFoundError(
        "Stoke's Java side was not found: stoke.DataLoader runs `<checkout>/stoke serve`, or the Java runtime "
        "bundled in the wheel (./stoke wheel builds it). Install that wheel (pip install stoke-*.whl), or set "
        "STOKE_HOME to a Stoke checkout, e.g.\n  export STOKE_HOME=/path/to/stoke\nor install this package from "
        "one: pip install --no-build-isolation /path/to/stoke/clients/python")


def stoke_command() -> List[str]:
    """The command before a CLI command's arguments (``serve ...``).

    Returns:
        The bundled runtime's (:func:`bundled_command`), else ``[<checkout>/stoke]``.

    Raises:
        StokeNotFoundError: no Java side was found, saying what to do.

    Example::

        subprocess.run(stoke_command() + ["--version"], check=True)
    """
    if bundled_java() is not None:
        return bundled_command()
    return [str(launcher())]
