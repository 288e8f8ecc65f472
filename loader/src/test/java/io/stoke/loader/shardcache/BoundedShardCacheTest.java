package io.stoke.loader.shardcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BoundedShardCacheTest {
    /** Shards of 16 bytes each; freeing {@code failing} throws, as a shared arena a thread still reads does. */
    static final class Shards extends BoundedShardCache<BoundedShardCache.Entry> {
        final Arena arena = Arena.ofAuto();
        final List<Integer> freed = new ArrayList<>();
        final List<Entry> order = new ArrayList<>();
        final int failing;

        Shards(int shards, int failing) {
            super(shards, 1 << 20);
            this.failing = failing;
        }

        @Override
        protected Entry newEntry(int shard) {
            Entry e = new Entry(16);
            order.add(e);
            return e;
        }

        @Override
        public long size(int shard) {
            return 16;
        }

        @Override
        protected MemorySegment load(int shard, Entry entry) {
            return arena.allocate(16);
        }

        @Override
        protected void free(Entry entry) {
            int shard = order.indexOf(entry);
            freed.add(shard);
            if (shard == failing) {
                throw new IllegalStateException("shard " + shard + " is still read in a native call");
            }
        }
    }

    @Test
    void closeFreesEveryShardThoughOneFailsAndThenSaysWhy() {
        Shards cache = new Shards(4, 1);
        for (int s = 0; s < 4; s++) {
            cache.acquire(s);
            cache.release(s);
        }
        IllegalStateException thrown = assertThrows(IllegalStateException.class, cache::close);
        assertEquals("shard 1 is still read in a native call", thrown.getMessage());
        // Each of the four was freed: the shards after the failing one too (a shard left unfreed is a
        // file left in a shared shard-cache folder).
        assertEquals(List.of(0, 1, 2, 3), cache.freed);
        cache.close(); // closed already: nothing freed twice
        assertEquals(4, cache.freed.size());
        assertSame(
                IllegalStateException.class,
                assertThrows(IllegalStateException.class, () -> cache.acquire(0))
                        .getClass());
    }
}
