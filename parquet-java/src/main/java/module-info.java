/**
 * parquet-java ({@code parquet-common}, {@code -encoding}, {@code -format-structures}, {@code -column},
 * {@code -hadoop} and {@code -jackson}) as one module: its published jars split packages among
 * themselves ({@code org.apache.parquet} is in column, common and hadoop), so none of them could be
 * required by a named module. The classes are parquet-java's own, unchanged and not relocated; only
 * this descriptor is Stoke's.
 *
 * <p>It exports parquet-java's public API, every package but its {@code internal} ones and the
 * libraries it shades (Jackson, Thrift, fastutil), which stay its own.
 */
module org.apache.parquet {
    // ParquetWriter's builder takes a Configuration; the read options name Hadoop's input format.
    requires transitive hadoop.client.api;
    requires org.slf4j;
    requires org.locationtech.jts; // parquet-column's geospatial statistics
    requires static snappy.java; // parquet-hadoop's SNAPPY codec, where the application brings it
    requires static com.github.luben.zstd_jni; // and its ZSTD codec

    exports org.apache.parquet;
    exports org.apache.parquet.bytes;
    exports org.apache.parquet.column;
    exports org.apache.parquet.column.impl;
    exports org.apache.parquet.column.page;
    exports org.apache.parquet.column.schema;
    exports org.apache.parquet.column.statistics;
    exports org.apache.parquet.column.statistics.geospatial;
    exports org.apache.parquet.column.values;
    exports org.apache.parquet.column.values.bitpacking;
    exports org.apache.parquet.column.values.bloomfilter;
    exports org.apache.parquet.column.values.bytestreamsplit;
    exports org.apache.parquet.column.values.delta;
    exports org.apache.parquet.column.values.deltalengthbytearray;
    exports org.apache.parquet.column.values.deltastrings;
    exports org.apache.parquet.column.values.dictionary;
    exports org.apache.parquet.column.values.factory;
    exports org.apache.parquet.column.values.fallback;
    exports org.apache.parquet.column.values.plain;
    exports org.apache.parquet.column.values.rle;
    exports org.apache.parquet.compression;
    exports org.apache.parquet.conf;
    exports org.apache.parquet.crypto;
    exports org.apache.parquet.crypto.keytools;
    exports org.apache.parquet.example;
    exports org.apache.parquet.example.data;
    exports org.apache.parquet.example.data.simple;
    exports org.apache.parquet.example.data.simple.convert;
    exports org.apache.parquet.filter;
    exports org.apache.parquet.filter2.bloomfilterlevel;
    exports org.apache.parquet.filter2.compat;
    exports org.apache.parquet.filter2.dictionarylevel;
    exports org.apache.parquet.filter2.predicate;
    exports org.apache.parquet.filter2.recordlevel;
    exports org.apache.parquet.filter2.statisticslevel;
    exports org.apache.parquet.format;
    exports org.apache.parquet.format.converter;
    exports org.apache.parquet.format.event;
    exports org.apache.parquet.glob;
    exports org.apache.parquet.hadoop;
    exports org.apache.parquet.hadoop.api;
    exports org.apache.parquet.hadoop.codec;
    exports org.apache.parquet.hadoop.example;
    exports org.apache.parquet.hadoop.mapred;
    exports org.apache.parquet.hadoop.metadata;
    exports org.apache.parquet.hadoop.rewrite;
    exports org.apache.parquet.hadoop.util;
    exports org.apache.parquet.hadoop.util.counters;
    exports org.apache.parquet.hadoop.util.counters.mapred;
    exports org.apache.parquet.hadoop.util.counters.mapreduce;
    exports org.apache.parquet.hadoop.util.wrapped.io;
    exports org.apache.parquet.io;
    exports org.apache.parquet.io.api;
    exports org.apache.parquet.schema;
    exports org.apache.parquet.util;
}
