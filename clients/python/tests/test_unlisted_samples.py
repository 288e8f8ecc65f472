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


if __name__ == "__main__":
    unittest.main()
