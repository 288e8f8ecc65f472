package io.stoke.bench.harness;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class StatsTest {
    @Test
    void quantilesInterpolateLinearlyAsNumpyDoes() {
        double[] v = {10, 1, 4, 3, 2}; // sorted: 1 2 3 4 10
        assertEquals(3, Stats.median(v), 1e-12);
        assertEquals(1, Stats.quantile(v, 0), 1e-12);
        assertEquals(10, Stats.quantile(v, 1), 1e-12);
        // numpy.quantile([1,2,3,4,10], 0.99) = 4 + 0.96 * 6 = 9.76
        assertEquals(9.76, Stats.quantile(v, 0.99), 1e-12);
        assertEquals(2.5, Stats.median(new double[] {1, 2, 3, 4}), 1e-12);
        assertEquals(7, Stats.median(new double[] {7}), 1e-12);
        assertTrue(Double.isNaN(Stats.median(new double[0])));
        assertArrayEquals(new double[] {10, 1, 4, 3, 2}, v, "the input is not sorted in place");
        assertThrows(IllegalArgumentException.class, () -> Stats.quantile(v, 1.5));
    }

    @Test
    void spreadIgnoresNonFiniteValuesAndFormatsMedianWithRange() {
        Stats.Spread s = Stats.Spread.of(new double[] {300, Double.NaN, 100, 200});
        assertEquals(200, s.median(), 1e-12);
        assertEquals(100, s.min(), 1e-12);
        assertEquals(300, s.max(), 1e-12);
        assertEquals("200 [100–300]", s.format("%.0f"));
        assertEquals("5.0", Stats.Spread.of(new double[] {5}).format("%.1f"));
        assertEquals("n/a", Stats.Spread.of(new double[0]).format("%.1f"));
    }
}
