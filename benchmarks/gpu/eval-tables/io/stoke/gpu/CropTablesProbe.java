package io.stoke.gpu;

import io.stoke.loader.resample.ResampleTables;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The training transform's resize tables per image (CropTableDraw: the box and flip drawn from
 * (seed, epoch, sample), then the resampler's coefficients), the work a GPU decode reader thread
 * takes off the decode thread since 2026-12-03, over the image sizes of a dataset listed one
 * "WIDTH HEIGHT" a line, as for EvalTablesProbe. A measurement, not part of Stoke; it sits in
 * Stoke's package to reach the package-private class.
 *
 *   $J/javac -cp $CP -d /tmp/probe benchmarks/gpu/eval-tables/io/stoke/gpu/CropTablesProbe.java
 *   $J/java -XX:TieredStopAtLevel=1 -cp /tmp/probe:$CP io.stoke.gpu.CropTablesProbe /tmp/sizes.txt
 */
public class CropTablesProbe {
    public static void main(String[] a) throws Exception {
        List<int[]> sizes = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(a[0]))) {
            String[] p = line.trim().split("\\s+");
            sizes.add(new int[] {Integer.parseInt(p[0]), Integer.parseInt(p[1])});
        }
        TransformSpec train = TransformSpec.defaults().withTrain(224, RandomResizedCrop.defaults());
        CropTableDraw draw = new CropTableDraw(train, 7);
        ResampleTables t = new ResampleTables();
        for (int epoch = 0; epoch < 6; epoch++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < sizes.size(); i++) {
                draw.draw(epoch, i, sizes.get(i)[0], sizes.get(i)[1], t);
            }
            System.out.printf(
                    "epoch %d: %d images, %.2f us an image drawn%n",
                    epoch, sizes.size(), (System.nanoTime() - t0) / 1e3 / sizes.size());
        }
    }
}
