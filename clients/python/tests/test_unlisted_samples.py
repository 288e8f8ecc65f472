"""What ``stoke serve`` tells the Python loader about the samples (its --sample-list-out file): a header,
then every sample's name and label, except for remote shards opened from their index.json, whose
samples are counted but not listed (listing them would fetch every shard before the first batch)."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

try:
    import numpy  # noqa: F401
    from stoke import _producer as stoke_producer
    from stoke import loader as stoke_loader
except ImportError:  # numpy: ./stoke test installs it
    stoke_loader = None


def read_index(lines, root="s3://bucket/train/"):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write("\n".join(json.dumps(x) for x in lines) + "\n")
    try:
        return stoke_loader._samples_of(stoke_producer.read_sample_list(f.name), root)
    finally:
        os.unlink(f.name)


@unittest.skipIf(stoke_loader is None, "numpy is not installed for this interpreter")
class UnlistedSamplesTest(unittest.TestCase):
    def test_a_listed_index_gives_every_name_and_label(self):
        samples = read_index([{"samples": 2, "listed": True}, ["a/0.jpg", 3], ["b/1.jpg", -1]])
        self.assertEqual([("a/0.jpg", 3), ("b/1.jpg", -1)], samples)

    def test_an_unlisted_index_counts_the_samples_and_says_why_it_lists_none(self):
        samples = read_index([{"samples": 1000, "listed": False}])
        self.assertEqual(1000, len(samples))
        with self.assertRaises(LookupError) as e:
            samples[0]
        self.assertIn("index.json", str(e.exception))
        dataset = stoke_loader._PathDataset("s3://bucket/train/", samples)
        self.assertEqual(1000, len(dataset))
        with self.assertRaises(LookupError):
            dataset.targets[5]


@unittest.skipIf(stoke_loader is None, "numpy is not installed for this interpreter")
class GivenSamplesTest(unittest.TestCase):
    """A dataset object's samples: written by the Python loader, listed back by the producer."""

    def test_each_path_is_what_abspath_makes_of_it(self):
        from stoke import _torch_compat
        paths = ["/a/b.jpg", "/a//b.jpg", "//a/b.jpg", "/a/./b.jpg", "/a/../b.jpg", "/a/b/", "/a/.hidden/b.jpg",
                 "rel/b.jpg", "./b.jpg", "/caf\u00e9/b.jpg", "/a/b.c/d.jpg", "/a/b..jpg", "/"]
        dataset = type("Paths", (), {"samples": [(p, i) for i, p in enumerate(paths)]})()
        self.assertEqual([(os.path.abspath(p), i) for i, p in enumerate(paths)], _torch_compat.dataset_samples(dataset))
        numpy_label = type("NumpyLabel", (), {"samples": [("/a.jpg", numpy.int64(3)), (b"/b.jpg".decode(), True)]})()
        self.assertEqual([("/a.jpg", 3), ("/b.jpg", 1)], _torch_compat.dataset_samples(numpy_label))

    def list_file(self, lines):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8")
        with f:
            f.write("\n".join(json.dumps(x) for x in lines) + "\n")
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_a_sample_list_agrees_only_where_its_count_and_both_ends_are_the_given_ones(self):
        given = [(f"/d/caf\u00e9 {i}.jpg", i % 7) for i in range(5000)]  # past the 64 KiB the tail is read from
        header = {"samples": len(given), "listed": True, "dataset": "x", "shuffle_window": 0}
        agrees = stoke_producer.sample_list_agrees
        self.assertTrue(agrees(self.list_file([header] + [list(s) for s in given]), given))
        self.assertTrue(agrees(self.list_file([dict(header, samples=1), list(given[0])]), given[:1]))
        # Another count, another first or last sample, another label, unlisted: read whole.
        self.assertFalse(agrees(self.list_file([header] + [list(s) for s in given[:-1]]), given))
        self.assertFalse(agrees(self.list_file([header] + [list(s) for s in given[1:]] + [list(given[0])]), given))
        moved = [list(s) for s in given]
        moved[-1] = [given[-1][0], given[-1][1] + 1]
        self.assertFalse(agrees(self.list_file([header] + moved), given))
        self.assertFalse(agrees(self.list_file([dict(header, listed=False)]), given))
        self.assertFalse(agrees(self.list_file([dict(header, samples=0)]), []))
        # A last line longer than the tail read is not taken for agreement (the whole list is read).
        long = [("/" + "x" * 70000 + ".jpg", 1)]
        self.assertFalse(agrees(self.list_file([dict(header, samples=1), list(long[0])]), long))


if __name__ == "__main__":
    unittest.main()
