package io.stoke.lakehouse;

import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;

/**
 * Which snapshot of a table to read: a version, a time (the latest snapshot committed at or before
 * it), or, when both are null, the latest at open. Written after the table's location as
 * {@code @v12} or {@code @2026-11-29T06:00:00Z} ({@code @2026-11-29}: that day's start, UTC), as
 * Delta Lake's SQL names a version ({@code table@v12}); {@code --table-version} and {@code --as-of},
 * and {@code stoke.DataLoader}'s {@code table_version=} and {@code as_of=}, write that suffix.
 *
 * @param version the table version (Delta's log version, Iceberg's snapshot id), or null
 * @param asOf the time, or null
 */
public record SnapshotChoice(Long version, Instant asOf) {
    /** The latest snapshot at open. */
    public static final SnapshotChoice LATEST = new SnapshotChoice(null, null);

    public SnapshotChoice {
        if (version != null && asOf != null) {
            throw new IllegalArgumentException("a table is read at a version or as of a time, not both");
        }
        if (version != null && version < 0) {
            throw new IllegalArgumentException("a table version is not negative: " + version);
        }
    }

    /** A table's location and the snapshot chosen by its suffix. */
    public record Spec(String location, SnapshotChoice choice) {}

    /** Splits {@code spec} into its location and the snapshot its suffix names (none: the latest). */
    public static Spec parse(String spec) {
        String location = io.stoke.loader.source.Datasets.withoutSnapshot(spec);
        if (location.length() == spec.length()) {
            return new Spec(spec, LATEST);
        }
        String suffix = spec.substring(location.length() + 1);
        if (suffix.charAt(0) == 'v') {
            try {
                return new Spec(location, new SnapshotChoice(Long.parseLong(suffix.substring(1)), null));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("table version " + suffix + " in " + spec + " is not a number");
            }
        }
        return new Spec(location, new SnapshotChoice(null, parseTime(suffix)));
    }

    /** An ISO-8601 instant ({@code 2026-11-29T06:00:00Z}, an offset allowed) or date (its start, UTC). */
    public static Instant parseTime(String text) {
        try {
            if (text.length() == 10) {
                return LocalDate.parse(text).atStartOfDay(ZoneOffset.UTC).toInstant();
            }
            return java.time.OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("the time " + text + " is not ISO-8601, such as 2026-11-29T06:00:00Z"
                    + " or 2026-11-29: " + e.getMessage());
        }
    }

    /** The suffix that names this choice after a table's location: "" for the latest. */
    public String suffix() {
        return version != null ? "@v" + version : asOf != null ? "@" + asOf : "";
    }
}
