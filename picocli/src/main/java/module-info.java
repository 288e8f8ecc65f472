/** picocli, compiled for Java 25 from its source, with the descriptor its own jar carries. */
module info.picocli {
    requires static java.sql; // its converters for java.sql's types, where that module is there

    exports picocli;
}
