/**
 * Apache Iceberg's Java library ({@code iceberg-api}, {@code -common}, {@code -core} and
 * {@code -bundled-guava}) as one module: {@code org.apache.iceberg} is a package of both api and core,
 * so neither jar could be required by a named module. The classes are Iceberg's own, unchanged and
 * not relocated; only this descriptor is Stoke's.
 *
 * <p>It exports Iceberg's API, every package but the Guava it bundles, which stays its own.
 */
module org.apache.iceberg {
    requires transitive com.fasterxml.jackson.databind; // TableMetadataParser's JsonNode
    requires org.apache.avro; // manifest lists and manifests are Avro files
    requires com.github.benmanes.caffeine; // ManifestFiles' content cache
    requires roaringbitmap; // deletion vectors' bitmaps
    requires org.slf4j;
    requires java.logging; // the bundled Guava's
    requires jdk.unsupported; // the bundled Guava's Unsafe
    requires java.sql; // its Timestamp and Date literals
    requires static hadoop.client.api; // org.apache.iceberg.hadoop, where the application brings Hadoop

    exports org.apache.iceberg;
    exports org.apache.iceberg.actions;
    exports org.apache.iceberg.avro;
    exports org.apache.iceberg.catalog;
    exports org.apache.iceberg.common;
    exports org.apache.iceberg.data;
    exports org.apache.iceberg.data.avro;
    exports org.apache.iceberg.deletes;
    exports org.apache.iceberg.encryption;
    exports org.apache.iceberg.events;
    exports org.apache.iceberg.exceptions;
    exports org.apache.iceberg.expressions;
    exports org.apache.iceberg.hadoop;
    exports org.apache.iceberg.inmemory;
    exports org.apache.iceberg.io;
    exports org.apache.iceberg.jdbc;
    exports org.apache.iceberg.mapping;
    exports org.apache.iceberg.metrics;
    exports org.apache.iceberg.puffin;
    exports org.apache.iceberg.schema;
    exports org.apache.iceberg.transforms;
    exports org.apache.iceberg.types;
    exports org.apache.iceberg.util;
    exports org.apache.iceberg.variants;
    exports org.apache.iceberg.view;
    // Its API names the bundled Guava's collections (ImmutableList and the like) in signatures.
    exports org.apache.iceberg.relocated.com.google.common.base;
    exports org.apache.iceberg.relocated.com.google.common.collect;
}
