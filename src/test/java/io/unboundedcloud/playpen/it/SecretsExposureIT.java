package io.unboundedcloud.playpen.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;

/**
 * The packaged jar as it runs in a pod: a password given on the command line (the reference's flag) is not readable
 * through the management listener, in any read of the runtime or of every MBean, and is never logged; the password's
 * environment variable reaches the configuration.
 */
class SecretsExposureIT {
    @Test
    void aPasswordOnTheCommandLineIsNeitherReadableThroughJolokiaNorLogged() throws Exception {
        String secret = "cmdline-secret-" + System.nanoTime();
        Path dir = Files.createTempDirectory(Path.of("target"), "it-secrets-");
        Path log = dir.resolve("operator.log");
        Process p = new ProcessBuilder(CommandLineIT.java("--dev", "--dev-dir=" + dir.resolve("dev"),
                "--runner-redfish-password=" + secret)).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        try {
            Path endpoints = dir.resolve("dev").resolve("endpoints.env");
            OperatorHarness.awaitTrue(() -> Files.isRegularFile(endpoints), Duration.ofSeconds(90), "dev playground ready");
            String url = Files.readAllLines(endpoints).stream().filter(l -> l.startsWith("MANAGEMENT_URL="))
                    .map(l -> l.substring("MANAGEMENT_URL=".length()).replace("\"", "")).findFirst().orElseThrow();
            HttpClient http = HttpClient.newHttpClient();
            for (String read : List.of("{\"type\":\"read\",\"mbean\":\"java.lang:type=Runtime\"}",
                    "{\"type\":\"read\",\"mbean\":\"java.lang:type=Runtime\",\"attribute\":\"SystemProperties\"}",
                    "{\"type\":\"read\",\"mbean\":\"java.lang:type=Runtime\",\"attribute\":\"InputArguments\"}",
                    "{\"type\":\"read\",\"mbean\":\"*:*\",\"config\":{\"ignoreErrors\":true}}")) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url + "/jolokia/"))
                        .POST(HttpRequest.BodyPublishers.ofString(read)).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.body()).as(read).doesNotContain(secret).doesNotContain("sun.java.command");
            }
            HttpResponse<String> ok = http.send(HttpRequest.newBuilder(URI.create(url + "/jolokia/read/java.lang:type=Runtime/Uptime"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(ok.body()).contains("\"status\":200");
        } finally {
            p.destroy();
            p.waitFor(20, TimeUnit.SECONDS);
        }
        assertThat(Files.readString(log)).doesNotContain(secret);
    }

    @Test
    void thePasswordsEnvironmentVariableReachesTheConfiguration() throws Exception {
        Path out = Files.createTempFile(Path.of("target"), "cli", ".log");
        ProcessBuilder pb = new ProcessBuilder(CommandLineIT.java("--runner-redfish-password=flag-value"))
                .redirectErrorStream(true).redirectOutput(out.toFile());
        pb.environment().put("PLAYPEN_RUNNER_REDFISH_PASSWORD", "env-value");
        Process p = pb.start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        String text = Files.readString(out).strip();
        assertThat(p.exitValue()).isEqualTo(2);
        assertThat(text).contains("more than one way").doesNotContain("flag-value").doesNotContain("env-value");
    }
}
