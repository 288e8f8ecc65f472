/**
 * The shared-memory ring: its layout (drawn once, behind flyweights), its free and ready queues and
 * its header. The loader's builder takes a ring factory and hands out its geometry, so the ring's
 * types are API; its memory is reached only through them. Other processes read it through the C
 * header and the Python client.
 */
module io.stoke.ring {
    requires transitive io.stoke.ffm;
    requires transitive org.agrona;

    exports io.stoke.ring;
}
