"""The loader's options as the project declares them once: ``options.json`` beside this module (a
link, in a checkout, to the serve module's ``serve/src/main/resources/io/stoke/serve/options.json``,
which picocli's options and ``Loader.Builder`` are read from too; see docs/options.md).

Each entry says an option's name (the settings attribute), its type, its default in the command
line's syntax, its ``stoke serve`` flag, its ``stoke.DataLoader`` keyword (or none), the builder
method that receives it, its deprecated spellings and its help. ``_settings.resolve`` checks
``stoke.DataLoader``'s keywords from these records, and ``_producer.serve_arguments`` passes them
by their flags; the table is read once, at import.
"""

import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["OPTIONS", "Option", "TABLE", "TYPES", "load"]

#: The table, as installed beside this module (a checkout links it to the serve module's).
TABLE = Path(__file__).resolve().parent / "options.json"

#: The types an option may have: what a value of each is on the command line.
TYPES = ("workers", "int", "long", "float", "floats", "bool", "choice", "size", "path", "string", "json")

_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class Option:
    """One loader option, as the table declares it.

    Args:
        name: the settings attribute (``loader.<name>``).
        type: one of :data:`TYPES`.
        default: the default in the command line's syntax (``"0.08,1.0"``, ``"64G"``); None: none.
        python_default: ``stoke.DataLoader``'s default where it differs from the command line's.
        cli: the ``stoke serve`` flag.
        label: the flag's value as help shows it (None for a bool, which takes no value).
        python: the ``stoke.DataLoader`` keyword, or None where Python does not take the option.
        builder: the ``Loader.Builder`` method that receives it, or None (the server's own).
        help: what it does.
        min, max: the bounds of a number, where it has them.
        choices: a choice's values.
        count: how many numbers a ``floats`` takes.
        deprecated_cli, deprecated_python: the old spellings, kept one release.
    """

    name: str
    type: str
    default: Optional[str]
    cli: str
    python: Optional[str]
    builder: Optional[str]
    help: str
    label: Optional[str] = None
    python_default: Optional[str] = None
    min: Optional[float] = None
    max: Optional[float] = None
    choices: Optional[Tuple[str, ...]] = None
    count: Optional[int] = None
    deprecated_cli: Optional[str] = None
    deprecated_python: Optional[str] = None

    def python_value(self) -> Any:
        """``stoke.DataLoader``'s default as a Python value of this option's type (None: none)."""
        text = self.default if self.python_default is None else self.python_default
        return None if text is None else parse(self, text)


def parse(option: Option, text: str) -> Any:
    """``text``, in the command line's syntax, as a Python value of ``option``'s type."""
    kind = option.type
    if kind in ("int", "long"):
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "floats":
        return [float(v) for v in text.split(",")]
    if kind == "bool":
        return text == "true"
    if kind == "workers":
        return text if text == "auto" else int(text)
    return text


_REQUIRED = ("name", "type", "default", "cli", "python", "builder", "help")
_KNOWN = set(_REQUIRED) | {"label", "python_default", "min", "max", "choices", "count", "deprecated"}


def load(path: Path = TABLE) -> Tuple[Option, ...]:
    """The options of the table at ``path``.

    Raises:
        ValueError: the file is not such a table, naming the file and the entry and why.
    """
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read the options table ({e})") from None
    if not isinstance(table, dict) or table.get("format") != _FORMAT or not isinstance(table.get("options"), list):
        raise ValueError(f"{path}: not an options table of format {_FORMAT} (an object with \"format\": {_FORMAT} "
                         "and a list of \"options\")")
    options: List[Option] = []
    seen: Dict[str, str] = {}
    for i, entry in enumerate(table["options"]):
        where = f"{path}: option {i} ({entry.get('name', '?') if isinstance(entry, dict) else '?'})"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: not an object")
        missing = [k for k in _REQUIRED if k not in entry]
        unknown = sorted(set(entry) - _KNOWN)
        problems = ([f"lacks {', '.join(missing)}"] if missing else []) + (
            [f"has unknown {', '.join(unknown)}"] if unknown else [])
        if problems:
            raise ValueError(f"{where}: {'; '.join(problems)}")
        if entry["type"] not in TYPES:
            raise ValueError(f"{where}: type {entry['type']!r} is not one of {', '.join(TYPES)}")
        if entry["type"] == "choice" and not entry.get("choices"):
            raise ValueError(f"{where}: a choice without choices")
        if entry["type"] == "floats" and not isinstance(entry.get("count"), int):
            raise ValueError(f"{where}: floats without a count")
        deprecated = entry.get("deprecated") or {}
        for spelling in (entry["name"], entry["cli"], entry["python"], deprecated.get("cli"), deprecated.get("python")):
            if spelling is not None and spelling in seen and seen[spelling] != entry["name"]:
                raise ValueError(f"{where}: {spelling!r} is {seen[spelling]}'s already")
            if spelling is not None:
                seen[spelling] = entry["name"]
        choices = entry.get("choices")
        options.append(Option(
            name=entry["name"], type=entry["type"], default=entry["default"], cli=entry["cli"],
            python=entry["python"], builder=entry["builder"], help=entry["help"], label=entry.get("label"),
            python_default=entry.get("python_default"), min=entry.get("min"), max=entry.get("max"),
            choices=None if choices is None else tuple(choices), count=entry.get("count"),
            deprecated_cli=deprecated.get("cli"), deprecated_python=deprecated.get("python")))
    return tuple(options)


#: Every loader option, in the table's order.
OPTIONS: Tuple[Option, ...] = load()
