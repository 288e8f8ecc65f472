package io.stoke.ffm;

import io.stoke.ffm.testing.LibFuzzerRun;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short libFuzzer run (clang, AddressSanitizer, UndefinedBehaviorSanitizer) over the PNG and
 * WebP decoder ({@code native/fuzz/fuzz_decode_image.c}), from the committed seeds in
 * {@code native/fuzz/regressions-image}: PNGs of every colour type, depth and interlacing, WebP
 * lossy, lossless and with alpha, and the hostile ones (a header claiming 65500 x 65500, palette
 * indices past the palette, truncated files). The long runs are done by hand (native/fuzz/README.md).
 */
class ImageDecoderFuzzTest {
    private static final int SECONDS = 20;

    @TempDir
    Path tmp;

    @Test
    void aShortFuzzRunFindsNothing() throws Exception {
        LibFuzzerRun.run(
                "the PNG and WebP decoder",
                "build_image.sh",
                "fuzz_decode_image",
                tmp,
                SECONDS,
                List.of(),
                List.of(LibFuzzerRun.nativeDir().resolve("fuzz/regressions-image")));
    }
}
