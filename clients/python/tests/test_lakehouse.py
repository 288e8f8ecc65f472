"""stoke.DataLoader over a Delta Lake table written by Delta Lake itself (tests/data/delta-images,
written by delta-spark: see lakehouse's DeltaFixtures): each version's rows, by ``table_version``
and ``as_of``, as the table's own log names them, with torchvision's pixels of the same images; a
resumed run reads the snapshot its state was taken over, though the table moved on since; and the
rows a deletion vector deletes (tests/data/delta-deletion-vectors) are left out. And the same of an
Apache Iceberg table written by Iceberg's Java library (tests/data/iceberg-images: see lakehouse's
IcebergFixtures), read where it was copied to.

The reference snapshot is computed here from the log's JSON commits (each ``add`` less each
``remove``, the Delta protocol's replay), independently of Delta Kernel, which Stoke replays with;
the Iceberg table's, from how IcebergFixtures wrote it (which data files each snapshot holds), since
its manifests are Avro, which nothing here reads but Iceberg's library.
"""

import json
import os
import shutil
import sys
import tempfile
import unittest
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))
TABLE = HERE / "data" / "delta-images"
#: The same 24 rows with deletion vectors on, and a DELETE of label 3 that marks rows in place.
DELETION_VECTORS = HERE / "data" / "delta-deletion-vectors"
#: An Iceberg table: 24 rows, then 18 after a delete of label 3 (copy-on-write), then 24 after an append.
ICEBERG = HERE / "data" / "iceberg-images"
#: Its snapshots' ids, oldest first, and the data files of each, as IcebergFixtures committed them.
ICEBERG_SNAPSHOTS = {
    2645794702169323198: ["part-0.parquet", "part-1.parquet"],
    6115693495836072155: ["part-0-deleted.parquet", "part-1-deleted.parquet"],
    7613922452491425802: ["part-0-deleted.parquet", "part-1-deleted.parquet", "part-2.parquet"],
}

try:
    import numpy as np
    import torch
    import stoke
    MISSING = None
except ImportError as e:  # numpy or torch not installed: skip, loudly
    MISSING = f"{e.name} is not installed"

try:
    import pyarrow.parquet as pq
    from PIL import Image
    import io
except ImportError:
    pq = None

SMALL = dict(resize=20, crop=16, dct_scaling="none")


def setUpModule():
    if MISSING:
        print(f"[stoke] SKIPPING the lakehouse tests: {MISSING}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))


def live_files(table: Path, version: int):
    """The data files of ``version``: the JSON commits' adds less their removes, in path order."""
    live = set()
    for v in range(version + 1):
        with open(table / "_delta_log" / f"{v:020d}.json") as f:
            for line in f:
                action = json.loads(line)
                if "add" in action:
                    live.add(action["add"]["path"])
                elif "remove" in action:
                    live.discard(action["remove"]["path"])
    return sorted(live)


def reference_rows(table: Path, version: int):
    """(image bytes, label) of each row of ``version``, in Stoke's order: files by path, then rows."""
    rows = []
    for name in live_files(table, version):
        t = pq.read_table(table / name, columns=["image", "label"]).to_pylist()
        rows += [(r["image"]["bytes"], r["label"]) for r in t]
    return rows


def epoch(loader):
    """(indices, labels) of one epoch, in order."""
    seen, labels = [], []
    for images, batch_labels, indices in loader:
        seen += indices.tolist()
        labels += batch_labels.tolist()
    return seen, labels


#: The settings of the resume tests' loaders: shuffled, so that the order resumed is the seed's.
RESUMED = dict(batch_size=4, shuffle=True, seed=5, with_indices=True, **SMALL)


def assert_a_resumed_run_keeps_its_snapshot(test, table: Path, before, commit, pinned: str):
    """Over ``table`` as ``before()`` leaves it (its second snapshot, 18 rows, the latest), a run's
    state after two batches names that snapshot (``pinned``); ``commit()`` then writes the third (24
    rows), which a new loader opens, and the state takes it back: the resumed run's batches are the
    rest of the uninterrupted run's. Returns the state."""
    before()
    with stoke.DataLoader(str(table), **RESUMED) as whole:
        uninterrupted = epoch(whole)
        test.assertEqual(18, len(whole.samples))
    with stoke.DataLoader(str(table), **RESUMED) as loader:
        it = iter(loader)
        head = [next(it) for _ in range(2)]
        state = loader.state_dict()
    test.assertTrue(state["table"].endswith(pinned), state)
    commit()
    with stoke.DataLoader(str(table), **RESUMED) as resumed:
        test.assertEqual(24, len(resumed.samples))
        resumed.load_state_dict(state)
        test.assertEqual(18, len(resumed.samples))
        rest = epoch(resumed)
    head_indices = [i for _, _, indices in head for i in indices.tolist()]
    test.assertEqual(uninterrupted[0], head_indices + rest[0])
    return state


@unittest.skipIf(MISSING, MISSING or "")
class DeltaTableTest(unittest.TestCase):
    def test_each_version_is_its_own_rows_once(self):
        expected = {0: Counter({0: 6, 1: 6, 2: 6, 3: 6}), 1: Counter({0: 6, 1: 6, 2: 6}),
                    2: Counter({0: 6, 1: 6, 2: 6, 4: 6})}
        for version, labels in expected.items():
            with stoke.DataLoader(str(TABLE), table_version=version, batch_size=8, with_indices=True, **SMALL) as loader:
                seen, got = epoch(loader)
                self.assertEqual(sum(labels.values()), len(loader.samples))
                self.assertEqual(sorted(seen), list(range(len(loader.samples))), f"version {version}: each row once")
                self.assertEqual(labels, Counter(got), f"version {version}")
                self.assertTrue(loader.state_dict()["table"].endswith(f"delta-images@v{version}"))
        with stoke.DataLoader(str(TABLE), batch_size=8, **SMALL) as latest:
            self.assertTrue(latest.state_dict()["table"].endswith("@v2"))
        # After the last commit no snapshot is named, as in Delta Lake's own readers (the times of a
        # checked-out table's commits are its files': lakehouse's DeltaTableTest reads one between two).
        with self.assertRaisesRegex(Exception, "after the latest available version"):
            stoke.DataLoader(str(TABLE), as_of="2100-01-01", batch_size=8, **SMALL)

    def assert_torchvisions_pixels(self, loader, reference):
        """Each sample of one epoch of ``loader`` (``with_indices``, ``SMALL``) is ``reference[index]``'s
        label and its image as torchvision resizes and crops it, and every sample comes once, in order."""
        from torchvision import transforms
        eval_ = transforms.Compose([transforms.Resize(20), transforms.CenterCrop(16)])
        checked = []
        for images, labels, indices in loader:
            for j, index in enumerate(indices.tolist()):
                data, label = reference[index]
                self.assertEqual(label, int(labels[j]))
                picture = eval_(Image.open(io.BytesIO(data)).convert("RGB"))
                self.assertTrue(torch.equal(torch.from_numpy(np.array(picture)), images[j]), f"sample {index}")
                checked.append(index)
        self.assertEqual(list(range(len(reference))), checked)

    @unittest.skipIf(pq is None, "pyarrow and Pillow are not installed")
    def test_the_pixels_are_torchvisions_of_the_snapshots_images(self):
        reference = reference_rows(TABLE, 1)
        self.assertEqual(18, len(reference))
        with stoke.DataLoader(str(TABLE), table_version=1, batch_size=8, with_indices=True, **SMALL) as loader:
            self.assert_torchvisions_pixels(loader, reference)

    def test_a_resumed_run_reads_the_snapshot_its_state_was_taken_over(self):
        tmp = Path(tempfile.mkdtemp(prefix="stoke-py-test-delta-"))
        try:
            table = tmp / "table"
            shutil.copytree(TABLE, table)
            later = tmp / "later"
            later.mkdir()

            def before():
                # The table as it was at version 1: version 2's commit and checkpoint not yet written
                # (its data file, in the folder already, is no part of version 1).
                for f in list((table / "_delta_log").iterdir()):
                    if f.name.startswith(f"{2:020d}.") or f.name == "_last_checkpoint":
                        shutil.move(str(f), later / f.name)

            def commit():
                for f in later.iterdir():
                    shutil.move(str(f), table / "_delta_log" / f.name)

            state = assert_a_resumed_run_keeps_its_snapshot(self, table, before, commit, "@v1")
            # A version named by the user is kept: a state over another fails the dataset check.
            with stoke.DataLoader(str(table), table_version=2, **RESUMED) as named:
                with self.assertRaisesRegex(ValueError, "another dataset"):
                    named.load_state_dict(state)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    @unittest.skipIf(pq is None, "pyarrow and Pillow are not installed")
    def test_rows_a_deletion_vector_deletes_are_left_out(self):
        # Version 1 DELETEd label 3 by a deletion vector per part: the parts are version 0's, whole,
        # and their label-3 rows are what the vectors mark.
        self.assertEqual(live_files(DELETION_VECTORS, 0), sorted(
            p.name for p in DELETION_VECTORS.iterdir() if p.suffix == ".parquet"))
        kept = [(data, label) for data, label in reference_rows(DELETION_VECTORS, 0) if label != 3]
        self.assertEqual(18, len(kept))
        with stoke.DataLoader(str(DELETION_VECTORS), batch_size=8, with_indices=True, **SMALL) as loader:
            self.assertEqual(18, len(loader.samples))
            self.assertTrue(loader.state_dict()["table"].endswith("delta-deletion-vectors@v1"))
            self.assert_torchvisions_pixels(loader, kept)
        with stoke.DataLoader(str(DELETION_VECTORS), table_version=0, batch_size=8, **SMALL) as before:
            self.assertEqual(24, len(before.samples))

    def test_a_snapshot_of_what_is_not_a_table_is_refused(self):
        with self.assertRaisesRegex(Exception, "names a snapshot of a Delta Lake or Apache Iceberg table"):
            stoke.DataLoader(str(TABLE / "_delta_log"), table_version=1, batch_size=8)


@unittest.skipIf(MISSING, MISSING or "")
class IcebergTableTest(unittest.TestCase):
    def test_each_snapshot_is_its_own_rows_once(self):
        expected = [Counter({0: 6, 1: 6, 2: 6, 3: 6}), Counter({0: 6, 1: 6, 2: 6}),
                    Counter({0: 6, 1: 6, 2: 6, 4: 6})]
        for snapshot, labels in zip(ICEBERG_SNAPSHOTS, expected):
            with stoke.DataLoader(str(ICEBERG), table_version=snapshot, batch_size=8, with_indices=True,
                                  **SMALL) as loader:
                seen, got = epoch(loader)
                self.assertEqual(sorted(seen), list(range(len(loader.samples))), f"snapshot {snapshot}: each row once")
                self.assertEqual(labels, Counter(got), f"snapshot {snapshot}")
                self.assertTrue(loader.state_dict()["table"].endswith(f"iceberg-images@v{snapshot}"))
        with stoke.DataLoader(str(ICEBERG), batch_size=8, **SMALL) as latest:
            self.assertTrue(latest.state_dict()["table"].endswith("@v7613922452491425802"))
        with self.assertRaisesRegex(Exception, "no snapshot committed at or before"):
            stoke.DataLoader(str(ICEBERG), as_of="2000-01-01", batch_size=8, **SMALL)

    def test_a_resumed_run_reads_the_snapshot_its_state_was_taken_over(self):
        tmp = Path(tempfile.mkdtemp(prefix="stoke-py-test-iceberg-"))
        try:
            table = tmp / "table"
            shutil.copytree(ICEBERG, table)
            metadata = table / "metadata"
            later = (metadata / "v4.metadata.json").read_bytes()

            def before():
                # The table as it was at its second snapshot: the third's metadata file not yet
                # written, and the version hint naming the one before it.
                (metadata / "v4.metadata.json").unlink()
                (metadata / "version-hint.text").write_text("3")

            def commit():
                (metadata / "v4.metadata.json").write_bytes(later)
                (metadata / "version-hint.text").write_text("4")

            assert_a_resumed_run_keeps_its_snapshot(self, table, before, commit, "@v6115693495836072155")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    @unittest.skipIf(pq is None, "pyarrow and Pillow are not installed")
    def test_the_pixels_are_torchvisions_of_the_snapshots_images(self):
        files = ICEBERG_SNAPSHOTS[6115693495836072155]
        reference = []
        for name in files:
            t = pq.read_table(ICEBERG / "data" / name, columns=["image", "label"]).to_pylist()
            reference += [(r["image"]["bytes"], r["label"]) for r in t]
        self.assertEqual(18, len(reference))
        with stoke.DataLoader(str(ICEBERG), table_version=6115693495836072155, batch_size=8, with_indices=True,
                              **SMALL) as loader:
            DeltaTableTest.assert_torchvisions_pixels(self, loader, reference)


if __name__ == "__main__":
    unittest.main()
