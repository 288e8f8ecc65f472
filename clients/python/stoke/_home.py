"""Where Stoke's Java side lives, and the command that starts its producer.

Looked for, in order:

1. the Java runtime bundled in this package (``stoke/_java/``, in the wheel ``./stoke wheel``
   builds): a jlinked runtime, the build's lib folder and Stoke's native libraries; the runtime
   records its AOT cache at the first use (:func:`_aot_cache`). The producer is ``_java/runtime/bin/java [options] -p _java/lib
   -m io.stoke.cli/io.stoke.cli.Main serve ...``, on the module path with the options ``./stoke`` uses (``_java/jvm.options`` and ``_java/modules.options`` are the
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
from typing import List, Optional, Tuple

#: The bundled Java side, when this package came from the self-contained wheel.
BUNDLED = Path(__file__).resolve().parent / "_java"
_SAID_AOT = []
# Stoke's C libraries beside the bundled jar, opened in place rather than copied out of the jar.
_NATIVE = {"libstoke_pixels.so": "stoke.pixels.path", "libstoke_augment.so": "stoke.augment.path",
           "libstoke_jpeg.so": "stoke.jpeg.path",
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
    if java.is_file() and (BUNDLED / "lib").is_dir():
        if not os.access(java, os.X_OK):
            raise StokeNotFoundError(f"{java} is not executable: the wheel was unpacked without its file modes. "
                                     "Reinstall it with pip (pip install --force-reinstall stoke-*.whl)")
        return java
    return None


def bundled_command(record: bool = True) -> Optional[List[str]]:
    """The bundled runtime's command, to which a CLI command's arguments are added.

    Args:
        record: whether the AOT cache may be recorded now, where it is due (a few seconds).

    Returns:
        ``java [AOT cache] @jvm.options [native libraries] $STOKE_JAVA_OPTS @modules.options -p lib
        -m io.stoke.cli/io.stoke.cli.Main``, in the order ``./stoke`` gives its own (later options
        win; ``STOKE_AOT=0`` runs without the cache, as there); None where ``record`` is False and
        the cache is due.
    """
    java = bundled_java()
    options = [f"@{BUNDLED / 'jvm.options'}"]
    for lib, prop in _NATIVE.items():
        if (BUNDLED / "native" / lib).is_file():
            options.append(f"-D{prop}={BUNDLED / 'native' / lib}")
    run = [f"@{BUNDLED / 'modules.options'}", "-p", str(BUNDLED / "lib"), "-m", "io.stoke.cli/io.stoke.cli.Main"]
    aot = None
    if os.environ.get("STOKE_AOT", "1") != "0":
        aot = _aot_cache(java, options + run) if record else _fresh_aot_cache(java)
        if aot is None and not record:
            return None
    extra = os.environ.get("STOKE_JAVA_OPTS", "").split()  # word-split, as ./stoke's unquoted ${STOKE_JAVA_OPTS}
    return [str(java)] + ([f"-XX:AOTCache={aot}"] if aot else []) + options + extra + run


def _aot_cache_path(java: Path) -> Tuple[Path, List[Path]]:
    """Where this install's AOT cache lives, and the files it is recorded from (see :func:`_aot_cache`)."""
    import hashlib

    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stoke" / "aot"
    aot = home / (hashlib.sha256(str(BUNDLED).encode()).hexdigest()[:16] + ".aot")
    inputs = [BUNDLED / "jvm.options", BUNDLED / "modules.options", java] + sorted((BUNDLED / "lib").glob("*.jar"))
    return aot, inputs


def _is_fresh(aot: Path, inputs: List[Path]) -> bool:
    return aot.is_file() and all(f.stat().st_mtime <= aot.stat().st_mtime for f in inputs)


def _fresh_aot_cache(java: Path) -> Optional[Path]:
    """This install's AOT cache where it is recorded and up to date, else None (nothing recorded)."""
    try:
        aot, inputs = _aot_cache_path(java)
        return aot if _is_fresh(aot, inputs) else None
    except OSError:
        return None


def _aot_cache(java: Path, command: List[str]) -> Optional[Path]:
    """The JVM's AOT cache for this install, recorded at its first use (once, a few seconds), as
    ./stoke records one per build: JDK 25 takes a cache only where the module path is the one it was
    recorded at, so a cache made where the wheel was built would never be taken where pip put it.

    Kept in ``$XDG_CACHE_HOME/stoke/aot`` (``~/.cache``), one per install (the package's path), and
    recorded again when a jar or an options file is newer. Several producers starting at once (one
    per torchrun rank) record it once, under a lock.

    Returns:
        The cache, or None where it cannot be recorded (said once, loudly: a fresh producer then
        starts more slowly).
    """
    import fcntl
    import subprocess
    import sys

    aot, inputs = _aot_cache_path(java)
    home = aot.parent

    def fresh() -> bool:
        return _is_fresh(aot, inputs)

    try:
        if fresh():
            return aot
        home.mkdir(parents=True, exist_ok=True)
        with open(home / (aot.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if fresh():  # recorded by the producer we waited for
                return aot
            print(f"stoke: recording the JVM's AOT cache for this install in {aot} (once, a few seconds)...",
                  file=sys.stderr, flush=True)
            partial = aot.with_suffix(f".{os.getpid()}.tmp.aot")
            log = aot.with_suffix(".log")
            with open(log, "w") as out:
                rc = subprocess.run([str(java), f"-XX:AOTCacheOutput={partial}"] + command + ["aot-training"],
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
            if rc != 0 or not partial.is_file():
                partial.unlink(missing_ok=True)
                raise OSError(f"stoke aot-training exited {rc} (see {log})")
            os.replace(partial, aot)
            return aot
    except OSError as e:
        if not _SAID_AOT:
            _SAID_AOT.append(True)
            print(f"stoke: WARNING: no AOT cache for the bundled runtime ({e}); running without it, so a fresh "
                  "producer starts more slowly", file=sys.stderr)
        return None


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


def stoke_command(record: bool = True) -> Optional[List[str]]:
    """The command before a CLI command's arguments (``serve ...``).

    Args:
        record: whether the bundled runtime may record its AOT cache now, where it is due.

    Returns:
        The bundled runtime's (:func:`bundled_command`; None where ``record`` is False and its cache
        is due), else ``[<checkout>/stoke]``.

    Raises:
        StokeNotFoundError: no Java side was found, saying what to do.

    Example::

        subprocess.run(stoke_command() + ["--version"], check=True)
    """
    if bundled_java() is not None:
        return bundled_command(record)
    return [str(launcher())]
