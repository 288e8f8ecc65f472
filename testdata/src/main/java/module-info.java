/** Synthetic datasets for the demo, the benchmarks and the tests (stoke make-dataset). */
module io.stoke.testdata {
    requires io.stoke.ffm;
    requires java.desktop;

    exports io.stoke.testdata;
}
