package io.stoke.gpu;

import io.stoke.loader.resample.*;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.*;
import java.nio.file.*;
import java.util.*;

/**
 * The GPU decode thread's resize tables per image under the evaluation transform: drawn for each
 * image, as before EvalTableCache, against kept by size, over the image sizes of a dataset listed
 * one "WIDTH HEIGHT" a line in its order. A measurement, not part of Stoke; it sits in Stoke's
 * package to reach the package-private cache.
 *
 *   find DATA -name '*.jpg' | sort | xargs file | grep -o ', [0-9]*x[0-9]*,' | tr -d ', ' | tr x ' ' \
 *       | shuf --random-source=<(yes) > /tmp/sizes.txt
 *   ./stoke --help >/dev/null    # builds the jars
 *   J=JAVA_25_HOME/bin CP=gpu/target/classes:cli/target/stoke.jar
 *   $J/javac -cp $CP -d /tmp/probe benchmarks/gpu/eval-tables/io/stoke/gpu/EvalTablesProbe.java
 *   $J/java -XX:TieredStopAtLevel=1 -cp /tmp/probe:$CP io.stoke.gpu.EvalTablesProbe /tmp/sizes.txt
 */
public class EvalTablesProbe {
    public static void main(String[] a) throws Exception {
        List<int[]> sizes = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(a[0]))) {
            String[] p = line.trim().split("\\s+");
            sizes.add(new int[] {Integer.parseInt(p[0]), Integer.parseInt(p[1])});
        }
        int epochs = 5;
        MemorySegment staging = Arena.global().allocate(1 << 22);
        for (int round = 0; round < 6; round++) {
            Resampler r = new Resampler(TransformSpec.defaults());
            ResampleTables t = new ResampleTables();
            long t0 = System.nanoTime();
            for (int e = 0; e < epochs; e++) for (int[] s : sizes) { r.evalTables(s[0], s[1], t); t.writeTo(staging, 0); }
            long drawn = System.nanoTime() - t0;
            // A fresh cache, as a fresh process has: its first pass draws each size once (a first epoch).
            EvalTableCache cache = new EvalTableCache(new Resampler(TransformSpec.defaults()), 1L << 21);
            t0 = System.nanoTime();
            for (int[] s : sizes) { cache.get(s[0], s[1]).writeTo(staging, 0); }
            long first = System.nanoTime() - t0;
            t0 = System.nanoTime();
            for (int e = 1; e < epochs; e++) for (int[] s : sizes) { cache.get(s[0], s[1]).writeTo(staging, 0); }
            long later = System.nanoTime() - t0;
            double n = epochs * sizes.size();
            System.out.printf("round %d: drawn each time %.2f us/image; kept by size, first pass %.2f us/image, later"
                            + " passes %.2f (%d drawn, %d emptied)%n",
                    round, drawn / 1e3 / n, first / 1e3 / sizes.size(), later / 1e3 / ((epochs - 1) * sizes.size()),
                    cache.drawn(), cache.emptied());
        }
    }
}
