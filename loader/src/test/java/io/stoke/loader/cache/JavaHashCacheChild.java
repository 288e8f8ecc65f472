package io.stoke.loader.cache;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.transform.TransformSpec;
import java.nio.file.Path;

/**
 * Run by {@link CacheEntryHashTest} in a JVM without the pixel library ({@code -Dstoke.pixels.path=none}),
 * where the restart cache hashes in Java: one epoch of the folder {@code args[0]} through the cache
 * in {@code args[1]}, the filler's copies awaited, then {@code hits=H misses=M copied=C damaged=D}.
 */
final class JavaHashCacheChild {
    private JavaHashCacheChild() {}

    public static void main(String[] args) throws Exception {
        try (RestartCache cache = RestartCache.open(Path.of(args[1]), 1L << 30, System.out::println);
                Loader l = Loader.builder(ImageFolder.scan(Path.of(args[0])))
                        .transform(TransformSpec.defaults().withResize(48, 40))
                        .batchSize(4)
                        .workers(2)
                        .restartCache(cache)
                        .build()) {
            for (Batch b : l) {
                b.close();
            }
            if (!cache.awaitFilled(60_000)) {
                throw new IllegalStateException("the filler did not finish");
            }
            RestartCache.Stats s = cache.stats();
            System.out.println(
                    "hits=" + s.hits() + " misses=" + s.misses() + " copied=" + s.copied() + " damaged=" + s.damaged());
        }
        System.out.flush();
    }
}
