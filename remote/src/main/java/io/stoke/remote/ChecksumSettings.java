package io.stoke.remote;

import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import software.amazon.awssdk.core.SdkSystemSetting;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.profiles.ProfileFile;
import software.amazon.awssdk.profiles.ProfileFileSystemSetting;
import software.amazon.awssdk.profiles.ProfileProperty;

/**
 * When the S3 client computes request checksums and asks for response checksums, and where that
 * was decided.
 *
 * <p>Stoke's default is {@code when_required} for both: AWS SDK 2.30+ defaults to
 * {@code when_supported}, which puts checksum headers on every GET ({@code x-amz-checksum-crc32}
 * of the empty body, {@code x-amz-te: append-md5}) and upload, and older S3-compatible servers
 * (older MinIO, Ceph RGW, s3proxy 2.x) refuse those with 501 NotImplemented or 400. Stoke reads whole shards by ranged GETs, for which
 * S3 returns no whole-object checksum anyway, so nothing is lost. A user who set the standard AWS
 * settings still wins, in the SDK's own order: the JVM system property, then the environment
 * variable, then the key in the active profile.
 *
 * @param request        request checksum calculation for the client
 * @param requestSource  where {@code request} came from, for messages
 * @param response       response checksum validation for the client
 * @param responseSource where {@code response} came from, for messages
 */
record ChecksumSettings(
        RequestChecksumCalculation request,
        String requestSource,
        ResponseChecksumValidation response,
        String responseSource) {
    static final String STOKE_DEFAULT = "Stoke's default";

    /** The settings of this JVM: system properties, environment, and the active profile of the SDK's profile files. */
    static ChecksumSettings fromEnvironment() {
        return resolve(System::getProperty, System::getenv, activeProfile(System::getProperty, System::getenv));
    }

    /**
     * The decision, from the three places the SDK reads: {@code properties} and {@code environment}
     * look up a name, {@code profile} a key of the active profile. Parameters for the tests.
     */
    static ChecksumSettings resolve(
            UnaryOperator<String> properties,
            UnaryOperator<String> environment,
            Function<String, Optional<String>> profile) {
        Setting request = setting(
                SdkSystemSetting.AWS_REQUEST_CHECKSUM_CALCULATION,
                ProfileProperty.REQUEST_CHECKSUM_CALCULATION,
                properties,
                environment,
                profile);
        Setting response = setting(
                SdkSystemSetting.AWS_RESPONSE_CHECKSUM_VALIDATION,
                ProfileProperty.RESPONSE_CHECKSUM_VALIDATION,
                properties,
                environment,
                profile);
        return new ChecksumSettings(
                request == null
                        ? RequestChecksumCalculation.WHEN_REQUIRED
                        : parse(request, RequestChecksumCalculation::fromValue),
                request == null ? STOKE_DEFAULT : request.source,
                response == null
                        ? ResponseChecksumValidation.WHEN_REQUIRED
                        : parse(response, ResponseChecksumValidation::fromValue),
                response == null ? STOKE_DEFAULT : response.source);
    }

    /** Both in words, for messages: {@code request checksums when_supported (from ...), ...}. */
    String describe() {
        return "request checksum calculation " + request.name().toLowerCase(Locale.ROOT) + " (" + requestSource
                + "), response checksum validation " + response.name().toLowerCase(Locale.ROOT) + " (" + responseSource
                + ")";
    }

    /** What a user does about a server that refuses the checksum headers, naming the settings in force. */
    String remedy() {
        return "set AWS_REQUEST_CHECKSUM_CALCULATION=when_required and AWS_RESPONSE_CHECKSUM_VALIDATION=when_required"
                + " (or request_checksum_calculation / response_checksum_validation = when_required in the AWS profile,"
                + " or the system properties aws.requestChecksumCalculation / aws.responseChecksumValidation, whichever"
                + " is set now; here: " + describe() + ")";
    }

    /** One value as set by the user and where; null when none of the three places sets it. */
    private record Setting(String value, String source) {}

    private static Setting setting(
            SdkSystemSetting systemSetting,
            String profileKey,
            UnaryOperator<String> properties,
            UnaryOperator<String> environment,
            Function<String, Optional<String>> profile) {
        String property = properties.apply(systemSetting.property());
        if (property != null) {
            return new Setting(property, "system property " + systemSetting.property());
        }
        String variable = environment.apply(systemSetting.environmentVariable());
        if (variable != null) {
            return new Setting(variable, "environment variable " + systemSetting.environmentVariable());
        }
        return profile.apply(profileKey)
                .map(v -> new Setting(v, "profile key " + profileKey))
                .orElse(null);
    }

    /** The SDK's own parsing (case-insensitive), with the place named when the value is not one it knows. */
    private static <T> T parse(Setting setting, Function<String, T> fromValue) {
        try {
            return fromValue.apply(setting.value.strip());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    setting.source + " is '" + setting.value + "': expected when_supported or when_required", e);
        }
    }

    /**
     * A key of the profile named by {@code aws.profile} / {@code AWS_PROFILE} (else "default") in
     * the SDK's profile files ({@code ~/.aws/config} and {@code credentials}, or where
     * {@code AWS_CONFIG_FILE} and {@code AWS_SHARED_CREDENTIALS_FILE} point), read by the SDK
     * when a key is asked for, that is when neither a system property nor a variable decided.
     */
    private static Function<String, Optional<String>> activeProfile(
            UnaryOperator<String> properties, UnaryOperator<String> environment) {
        ProfileFileSystemSetting setting = ProfileFileSystemSetting.AWS_PROFILE;
        String name = properties.apply(setting.property());
        if (name == null) {
            name = environment.apply(setting.environmentVariable());
        }
        String profileName = name == null ? setting.defaultValue() : name;
        return key -> ProfileFile.defaultProfileFile().profile(profileName).flatMap(p -> p.property(key));
    }
}
