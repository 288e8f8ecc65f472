"""A Hugging Face ``datasets.Dataset`` as ``stoke.DataLoader`` reads it: its own Arrow files, where they
lie, with the rows its indices mapping (``select``, ``shuffle``, ``filter``) or a slice picks; what Stoke
cannot read exactly is refused at construction, naming it and the way out. ``datasets`` is never imported:
a dataset is told by its class's module, so that this works (and says nothing) where it is absent."""

import json
import os
from typing import Any, Dict, List, NoReturn, Optional, Tuple

from ._torch_compat import UnsupportedError

__all__ = ["is_hf_dataset", "HfSource", "source"]

#: The way out of anything Stoke cannot read in place: a fresh Arrow file holding the dataset as it is.
FLATTEN = "ds = ds.flatten_indices() writes the dataset as it is into a new Arrow file, which Stoke reads"
SAVE = "ds.save_to_disk(folder) then datasets.load_from_disk(folder) gives a Dataset backed by Arrow files"


def _refuse(what: str, way_out: str) -> NoReturn:
    raise UnsupportedError(f"stoke.DataLoader cannot read {what}: {way_out}")


def _kind(obj: Any) -> Optional[str]:
    """The name of the ``datasets`` class ``obj`` is (or derives from), else None."""
    for cls in type(obj).__mro__:
        if cls.__module__.split(".")[0] == "datasets" and cls.__name__ in (
                "Dataset", "IterableDataset", "DatasetDict", "IterableDatasetDict"):
            return cls.__name__
    return None


def is_hf_dataset(obj: Any) -> bool:
    """Whether ``obj`` is one of the ``datasets`` library's datasets (without importing it)."""
    return _kind(obj) is not None


class HfSource:
    """What the producer reads for a ``datasets.Dataset``: its Arrow files in order, the row (over those
    files) of each sample where the dataset is not all of them in order (else None), and its columns."""

    def __init__(self, files: List[str], rows: Optional[Any], image_column: str,
                 label_column: Optional[str], transform: Any) -> None:
        self.files = files
        self.rows = rows
        self.image_column = image_column
        self.label_column = label_column
        self.transform = transform  # the torchvision transform passed as transform=, for translation

    def spec(self, indices_path: Optional[str]) -> str:
        """The producer's dataset argument: ``arrow:`` and the files (and indices file) as JSON."""
        return "arrow:" + json.dumps({"files": self.files, "indices": indices_path})

    def write_rows(self, fd: int) -> None:
        """Writes the rows as datasets keeps an indices mapping: an Arrow stream of one uint64 column."""
        import pyarrow as pa
        table = pa.table({"indices": pa.array(self.rows, type=pa.uint64())})
        with open(os.dup(fd), "wb") as f, pa.ipc.new_stream(f, table.schema) as writer:
            writer.write_table(table)


def _feature_kind(feature: Any) -> str:
    return type(feature).__name__


def _columns(ds: Any, image_column: Optional[str], label_column: Optional[str]) -> Tuple[str, Optional[str]]:
    features = ds.features
    if image_column is None:
        images = [name for name, f in features.items() if _feature_kind(f) == "Image"]
        if not images:
            _refuse(f"a datasets.Dataset with no Image column (its features: {dict(features)})",
                    "cast the image column to datasets.Image() (ds.cast_column(name, Image())), or name it with "
                    "image_column=")
        image_column = images[0]
    if image_column not in features:
        _refuse(f"the column {image_column!r}", f"the dataset's columns are {list(features)}")
    image = features[image_column]
    if _feature_kind(image) != "Image":
        _refuse(f"the column {image_column!r} as an image: it is {image!r}, not a datasets.Image feature",
                f"ds = ds.cast_column({image_column!r}, datasets.Image())")
    if getattr(image, "mode", None) not in (None, "RGB"):
        _refuse(f"Image(mode={image.mode!r}) in column {image_column!r}: Stoke decodes to RGB, as PIL's "
                "convert('RGB') does", f"ds = ds.cast_column({image_column!r}, datasets.Image())")
    if label_column is None:
        if "label" in features:
            label_column = "label"
        else:
            labels = [name for name, f in features.items() if _feature_kind(f) == "ClassLabel"]
            label_column = labels[0] if labels else None
    if label_column is not None:
        if label_column not in features:
            _refuse(f"the label column {label_column!r}", f"the dataset's columns are {list(features)}")
        label = features[label_column]
        dtype = getattr(label, "dtype", "")
        if _feature_kind(label) not in ("ClassLabel", "Value") or not str(dtype).startswith(("int", "uint")):
            _refuse(f"the label column {label_column!r}: it is {label!r}, not a ClassLabel or an integer Value",
                    "name an integer column with label_column=")
    return image_column, label_column


def _blocks(ds: Any) -> List[Tuple[str, int, Optional[int], List[Any]]]:
    """Each memory-mapped table under the dataset's table: its file, the slice of it kept (offset,
    length or None: to the end) and its replays; refuses a table held in memory."""
    table = ds._data
    kind = type(table).__name__
    if kind == "MemoryMappedTable":
        tables = [table]
    elif kind == "ConcatenationTable":
        tables = []
        for row in table.blocks:
            if len(row) != 1:
                _refuse("a dataset whose columns come from different tables (concatenate_datasets(axis=1), "
                        "add_column)", FLATTEN)
            tables.append(row[0])
    else:
        _refuse("a datasets.Dataset held in memory (no Arrow file under it)", SAVE)
    blocks = []
    for t in tables:
        if type(t).__name__ != "MemoryMappedTable":
            _refuse("a datasets.Dataset held partly in memory (a table with no Arrow file under it)", SAVE)
        offset, length = 0, None
        for name, args, kwargs in t.replays:
            if name == "slice":
                o, n = (list(args) + [0, None])[:2]
                o, n = kwargs.get("offset", o) or 0, kwargs.get("length", n)
                left = None if length is None else max(length - o, 0)
                offset, length = offset + o, (left if n is None else n if left is None else min(n, left))
            elif name not in ("cast", "replace_schema_metadata"):
                _refuse(f"a dataset changed in memory after its Arrow file was written ({name})", FLATTEN)
        blocks.append((t.path, offset, length, t.replays))
    return blocks


def source(ds: Any, transform: Any, image_column: Optional[str], label_column: Optional[str]) -> HfSource:
    """What the producer reads for ``ds``, checked.

    Args:
        ds: a ``datasets.Dataset`` (anything else of ``datasets`` is refused, naming the way out).
        transform: the torchvision transform passed as ``transform=`` (None: none).
        image_column: the Image column (default: the first one).
        label_column: the label column (default: ``label``, else the first ClassLabel, else none).

    Raises:
        UnsupportedError: what Stoke cannot read exactly, named with the way out.
    """
    kind = _kind(ds)
    if kind in ("IterableDataset", "IterableDatasetDict"):
        _refuse("a streaming datasets.IterableDataset: Stoke reads a dataset's Arrow files where they lie",
                "load it without streaming=True, or " + SAVE)
    if kind == "DatasetDict":
        _refuse(f"a datasets.DatasetDict (splits {list(ds)})", "pass one split, e.g. ds['train']")
    fmt = ds.format
    if fmt.get("type") is not None:
        what = ("ds.with_transform / ds.set_transform(fn): fn is arbitrary Python run on each row"
                if fmt["type"] == "custom" else f"ds.set_format({fmt['type']!r})")
        _refuse(what, "pass the torchvision transform as stoke.DataLoader(ds, transform=T.Compose([...])), which "
                      "Stoke translates into its own pipeline, and call ds.reset_format() (ds.with_format(None))")
    image_column, label_column = _columns(ds, image_column, label_column)
    if not ds.cache_files:
        _refuse("a datasets.Dataset held in memory (ds.cache_files is empty)", SAVE)
    import numpy as np
    blocks = _blocks(ds)
    files, ranges, whole, first = [], [], True, 0
    for path, offset, length, _ in blocks:
        rows_in_file, stored = _rows_and_schema(path)
        _check_stored(path, stored, image_column, label_column)
        n = rows_in_file - offset if length is None else length
        files.append(os.path.abspath(path))
        ranges.append(np.arange(first + offset, first + offset + n, dtype=np.int64))
        whole &= offset == 0 and n == rows_in_file
        first += rows_in_file
    rows = None
    if ds._indices is not None or not whole:
        rows = np.concatenate(ranges) if ranges else np.zeros(0, np.int64)
        if ds._indices is not None:
            rows = rows[ds._indices.column("indices").to_numpy()]
    return HfSource(files, rows, image_column, label_column, transform)


def _rows_and_schema(path: str) -> Tuple[int, Any]:
    """The rows and schema of an Arrow stream file, from its messages (the file is mapped, not read)."""
    import pyarrow as pa
    with pa.memory_map(path) as source:
        reader = pa.ipc.open_stream(source)
        return sum(batch.num_rows for batch in reader), reader.schema


def _check_stored(path: str, schema: Any, image_column: str, label_column: Optional[str]) -> None:
    """Refuses a file whose columns are not what the dataset's features say they are: a cast done in
    memory (``cast_column`` of a string column to ``Image()``), which Stoke, reading the file, would not see."""
    import pyarrow as pa
    if image_column not in schema.names:
        _refuse(f"the column {image_column!r}: {path} has no such column (renamed in memory)", FLATTEN)
    stored = schema.field(image_column).type
    image = pa.types.is_struct(stored) and {stored.field(i).name for i in range(stored.num_fields)} >= {"bytes", "path"}
    if not (image or pa.types.is_binary(stored) or pa.types.is_large_binary(stored)):
        _refuse(f"the column {image_column!r} as images: {path} stores it as {stored}, cast to Image() in memory",
                FLATTEN)
    if label_column is not None and (label_column not in schema.names
                                     or not pa.types.is_integer(schema.field(label_column).type)):
        _refuse(f"the label column {label_column!r}: {path} does not store it as integers", FLATTEN)
