package io.stoke.ring;

import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * A path that names a descriptor this process inherited ({@code /dev/fd/N} or {@code
 * /proc/self/fd/N}), such as the anonymous file ({@code memfd_create}) that {@code stoke.DataLoader}
 * creates and hands to the producer it starts. Such a file is written in place: it has no
 * directory to hold a temporary name, and it is never renamed or removed, since its lifetime is
 * that of the descriptors open on it.
 */
public final class InheritedDescriptor {
    private static final Pattern DESCRIPTOR = Pattern.compile("/(dev|proc/self)/fd/[0-9]+");

    private InheritedDescriptor() {}

    /** Whether {@code path} names an inherited descriptor rather than a directory entry. */
    public static boolean names(Path path) {
        return DESCRIPTOR.matcher(path.toString()).matches();
    }
}
