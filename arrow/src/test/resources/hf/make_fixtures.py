"""Writes the Arrow fixtures of ArrowDatasetsTest with pyarrow (25.0.1, the torch 2.14.1 stack's), as
datasets lays out an Image feature: struct<bytes: binary, path: string> and an int64 ClassLabel.

Run from this folder: ~/.cache/stoke/torch214-venv/bin/python make_fixtures.py
"""
import io

import numpy as np
import pyarrow as pa
from PIL import Image

N = 7
images = []
for i in range(N):
    a = np.random.default_rng(i).integers(0, 256, (3 + i, 4, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    images.append(buf.getvalue())
    with open(f"img{i}.png", "wb") as f:
        f.write(buf.getvalue())

image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
schema = pa.schema([("image", image_type), ("label", pa.int64())])


def table(rows):
    return pa.table({"image": pa.array(rows, type=image_type), "label": pa.array([i % 3 for i in range(N)], pa.int64())},
                    schema=schema)


def write(name, t, chunk, **options):
    with pa.OSFile(name, "wb") as sink, pa.ipc.new_stream(sink, t.schema, options=pa.ipc.IpcWriteOptions(**options)) as w:
        w.write_table(t, max_chunksize=chunk)


# Bytes in two record batches (4 + 3 rows); row 5's image is null.
rows = [{"bytes": b, "path": f"img{i}.png"} for i, b in enumerate(images)]
rows[5] = None
write("bytes.arrow", table(rows), 4)
# Paths only, relative to the working folder, as datasets opens them.
write("paths.arrow", table([{"bytes": None, "path": f"src/test/resources/hf/img{i}.png"} for i in range(N)]), 4)
# Rows 0-2 as bytes, the rest as paths: refused, one dataset is read one way.
write("mixed.arrow", table([{"bytes": b, "path": None} if i < 3 else {"bytes": None, "path": f"img{i}.png"}
                            for i, b in enumerate(images)]), 4)
write("compressed.arrow", table([{"bytes": b, "path": None} for b in images]), 4, compression="lz4")
# An indices mapping as datasets keeps one: sample i is row indices[i].
with pa.OSFile("indices.arrow", "wb") as sink, pa.ipc.new_stream(sink, pa.schema([("indices", pa.uint64())])) as w:
    w.write_table(pa.table({"indices": pa.array([6, 0, 3, 3, 1], pa.uint64())}))
