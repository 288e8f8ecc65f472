package io.stoke.pack;

/**
 * A pack cannot go on because of the data: a sample that does not decode under the fail policy,
 * two samples with one key, a path that makes no key, nothing decodable at all. The message names
 * the file(s) and the reason.
 */
public class PackException extends RuntimeException {
    public PackException(String message) {
        super(message);
    }
}
