/** Datasets on object stores: S3 (and S3-compatible servers) and HTTP, read as WebDataset shards. */
module io.stoke.remote {
    requires transitive io.stoke.loader;
    requires java.net.http;
    requires software.amazon.awssdk.auth;
    requires software.amazon.awssdk.awscore;
    requires software.amazon.awssdk.core;
    requires software.amazon.awssdk.http;
    requires software.amazon.awssdk.http.urlconnection;
    requires software.amazon.awssdk.profiles;
    requires software.amazon.awssdk.regions;
    requires software.amazon.awssdk.services.s3;

    provides io.stoke.loader.source.UrlDatasetProvider with
            io.stoke.remote.RemoteDatasets;

    exports io.stoke.remote;
}
