"""The Python client's Agrona queue against corrupt positions: refused with RingFormatError, never
an out-of-range read or a record read from the middle of another."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import numpy  # noqa: F401
    from stoke import ring
except ImportError:  # numpy: ./stoke test installs it
    ring = None


@unittest.skipIf(ring is None, "numpy is not installed for this interpreter")
class QueueTest(unittest.TestCase):
    CAPACITY = 1024

    def queue(self):
        buf = bytearray(self.CAPACITY + ring.QUEUE_TRAILER_LENGTH)
        return buf, ring._Queue(buf, 0, self.CAPACITY, slot_count=4)

    def test_offer_then_poll_round_trips_every_slot_across_the_wrap(self):
        _, q = self.queue()
        for i in range(500):  # 16 bytes a record: wraps the 1,024-byte queue several times
            self.assertTrue(q.offer(i % 4))
            self.assertEqual(i % 4, q.poll())
        self.assertEqual(-1, q.poll())

    def test_a_head_off_a_record_boundary_is_refused(self):
        buf, q = self.queue()
        q.offer(1)
        q.trailer[ring.QUEUE_HEAD_POSITION_OFFSET // 8] = 4
        with self.assertRaisesRegex(ring.RingFormatError, "not a record boundary"):
            q.poll()

    def test_a_tail_off_a_record_boundary_is_refused(self):
        _, q = self.queue()
        q.trailer[ring.QUEUE_TAIL_POSITION_OFFSET // 8] = 12
        with self.assertRaisesRegex(ring.RingFormatError, "not a record boundary"):
            q.offer(1)

    def test_a_slot_number_out_of_range_is_refused(self):
        _, q = self.queue()
        q.offer(1)
        q.rec[2] = 99  # the first record's payload
        with self.assertRaisesRegex(ring.RingFormatError, "slot number 99"):
            q.poll()


if __name__ == "__main__":
    unittest.main()
