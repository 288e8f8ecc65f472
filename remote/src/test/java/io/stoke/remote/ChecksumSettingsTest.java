package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;

/** Stoke's checksum default (when_required) and the AWS settings that win over it, in the SDK's order. */
class ChecksumSettingsTest {
    final Map<String, String> properties = new HashMap<>();
    final Map<String, String> environment = new HashMap<>();
    final Map<String, String> profile = new HashMap<>();

    ChecksumSettings resolve() {
        return ChecksumSettings.resolve(
                properties::get, environment::get, key -> Optional.ofNullable(profile.get(key)));
    }

    @Test
    void withNothingSetBothAreWhenRequired() {
        ChecksumSettings s = resolve();
        assertEquals(RequestChecksumCalculation.WHEN_REQUIRED, s.request());
        assertEquals(ResponseChecksumValidation.WHEN_REQUIRED, s.response());
        assertEquals(ChecksumSettings.STOKE_DEFAULT, s.requestSource());
        assertEquals(ChecksumSettings.STOKE_DEFAULT, s.responseSource());
    }

    @Test
    void thePropertyBeatsTheVariableWhichBeatsTheProfile() {
        profile.put("request_checksum_calculation", "when_supported");
        assertEquals(RequestChecksumCalculation.WHEN_SUPPORTED, resolve().request());
        assertEquals("profile key request_checksum_calculation", resolve().requestSource());

        environment.put("AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED");
        assertEquals(RequestChecksumCalculation.WHEN_REQUIRED, resolve().request());
        assertEquals(
                "environment variable AWS_REQUEST_CHECKSUM_CALCULATION",
                resolve().requestSource());

        properties.put("aws.requestChecksumCalculation", "when_supported");
        assertEquals(RequestChecksumCalculation.WHEN_SUPPORTED, resolve().request());
        assertEquals("system property aws.requestChecksumCalculation", resolve().requestSource());
        // Setting one leaves the other at Stoke's default.
        assertEquals(ResponseChecksumValidation.WHEN_REQUIRED, resolve().response());
        assertEquals(ChecksumSettings.STOKE_DEFAULT, resolve().responseSource());
    }

    @Test
    void theResponseSettingComesFromItsOwnNames() {
        environment.put("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_supported");
        assertEquals(ResponseChecksumValidation.WHEN_SUPPORTED, resolve().response());
        assertEquals(RequestChecksumCalculation.WHEN_REQUIRED, resolve().request());
        properties.put("aws.responseChecksumValidation", "when_required");
        assertEquals(ResponseChecksumValidation.WHEN_REQUIRED, resolve().response());
        properties.clear();
        environment.clear();
        profile.put("response_checksum_validation", "when_supported");
        assertEquals(ResponseChecksumValidation.WHEN_SUPPORTED, resolve().response());
    }

    @Test
    void anUnknownValueIsAnErrorNamingWhereItIsSet() {
        environment.put("AWS_RESPONSE_CHECKSUM_VALIDATION", "sometimes");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, this::resolve);
        assertTrue(
                e.getMessage().contains("AWS_RESPONSE_CHECKSUM_VALIDATION")
                        && e.getMessage().contains("sometimes")
                        && e.getMessage().contains("when_required"),
                e.getMessage());
    }

    @Test
    void theRemedyNamesTheSettingsAndWhatIsInForce() {
        properties.put("aws.responseChecksumValidation", "when_supported");
        String remedy = resolve().remedy();
        assertTrue(
                remedy.contains("AWS_REQUEST_CHECKSUM_CALCULATION=when_required")
                        && remedy.contains("AWS_RESPONSE_CHECKSUM_VALIDATION=when_required")
                        && remedy.contains("response_checksum_validation")
                        && remedy.contains(
                                "response checksum validation when_supported (system property aws.responseChecksumValidation)"),
                remedy);
    }

    /** The real lookup: the SDK reads the profile that aws.profile names from the file aws.configFile names. */
    @Test
    void fromEnvironmentReadsTheActiveProfileThroughTheSdk(@TempDir Path home) throws Exception {
        Path config = Files.writeString(home.resolve("config"), """
                [default]
                request_checksum_calculation = when_required
                [profile old-minio]
                request_checksum_calculation = when_supported
                response_checksum_validation = WHEN_SUPPORTED
                """);
        String[] names = {
            "aws.configFile",
            "aws.sharedCredentialsFile",
            "aws.profile",
            "aws.requestChecksumCalculation",
            "aws.responseChecksumValidation"
        };
        Map<String, String> saved = new HashMap<>();
        for (String name : names) {
            saved.put(name, System.getProperty(name));
            System.clearProperty(name);
        }
        try {
            System.setProperty("aws.configFile", config.toString());
            System.setProperty("aws.sharedCredentialsFile", home.resolve("none").toString());
            System.setProperty("aws.profile", "old-minio");
            // The variables of this process are not the test's to set: only check when they are absent.
            Assumptions.assumeTrue(
                    System.getenv("AWS_REQUEST_CHECKSUM_CALCULATION") == null
                            && System.getenv("AWS_RESPONSE_CHECKSUM_VALIDATION") == null,
                    "the environment sets checksum variables");
            ChecksumSettings s = ChecksumSettings.fromEnvironment();
            assertEquals(RequestChecksumCalculation.WHEN_SUPPORTED, s.request());
            assertEquals(ResponseChecksumValidation.WHEN_SUPPORTED, s.response());
            assertEquals("profile key response_checksum_validation", s.responseSource());
            System.setProperty("aws.profile", "default");
            assertEquals(
                    ResponseChecksumValidation.WHEN_REQUIRED,
                    ChecksumSettings.fromEnvironment().response());
            assertEquals(
                    "profile key request_checksum_calculation",
                    ChecksumSettings.fromEnvironment().requestSource());
        } finally {
            saved.forEach((k, v) -> {
                if (v == null) {
                    System.clearProperty(k);
                } else {
                    System.setProperty(k, v);
                }
            });
        }
    }
}
