package io.stoke.lakehouse;

import io.stoke.remote.ObjectStore;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** A real store whose every call is counted by kind, so that a test sees what a read asked of the server. */
final class RecordingStore implements ObjectStore {
    private final ObjectStore store;
    final Map<String, AtomicLong> calls = new ConcurrentHashMap<>();
    final Map<String, AtomicLong> rangedBytes = new ConcurrentHashMap<>();

    RecordingStore(ObjectStore store) {
        this.store = store;
    }

    private void count(String kind) {
        calls.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
    }

    long calls(String kind) {
        AtomicLong n = calls.get(kind);
        return n == null ? 0 : n.get();
    }

    @Override
    public Stat stat(String url) {
        count("stat");
        return store.stat(url);
    }

    @Override
    public void read(String url, MemorySegment dst) {
        count("read-whole");
        store.read(url, dst);
    }

    @Override
    public String read(String url, MemorySegment dst, String etag) {
        count("read-whole");
        return store.read(url, dst, etag);
    }

    @Override
    public String readRange(String url, long offset, long objectSize, MemorySegment dst, String etag) {
        count("read-range");
        rangedBytes.computeIfAbsent(url, k -> new AtomicLong()).addAndGet(dst.byteSize());
        return store.readRange(url, offset, objectSize, dst, etag);
    }

    @Override
    public void write(String url, byte[] bytes) {
        count("write");
        store.write(url, bytes);
    }

    @Override
    public boolean create(String url, byte[] bytes) {
        count("write");
        return store.create(url, bytes);
    }

    @Override
    public void delete(String url) {
        count("write");
        store.delete(url);
    }

    @Override
    public List<String> list(String prefixUrl, String suffix) {
        count("list");
        return store.list(prefixUrl, suffix);
    }

    @Override
    public List<Listed> listFrom(String prefixUrl, String startAfter) {
        count("list");
        return store.listFrom(prefixUrl, startAfter);
    }

    @Override
    public void close() {
        store.close();
    }
}
