package io.unboundedcloud.playpen.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.support.OperatorHarness;

/** The packaged jar's command line: bad configuration stops startup with one line naming the flag; JSON logs. */
class CommandLineIT {
    static String jar() {
        String jar = System.getProperty("playpen.jar", "target/playpen-operator.jar");
        assumeTrue(new File(jar).isFile(), "packaged jar not found");
        return jar;
    }

    static List<String> java(String... args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", jar()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--runner-amd64-count=-1|--runner-amd64-count",
        "--runner-wireguard-host-port-start=51900|--runner-wireguard-host-port-end",
        "--control-plane-versions=1.x|--control-plane-versions",
        "--playpen-ttl=soon|--playpen-ttl",
        "--no-such-flag=1|--no-such-flag",
        "--log-format=xml|--log-format",
        "--runner-label-selector=env in (a|--runner-label-selector",
        "--version=maybe|--version"})
    void badConfigurationStopsWithOneLineNamingTheFlag(String arg, String named) throws Exception {
        Path out = Files.createTempFile(Path.of("target"), "cli", ".log");
        Process p = new ProcessBuilder(java(arg)).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        String text = Files.readString(out).strip();
        assertThat(p.exitValue()).isEqualTo(2);
        assertThat(text.lines()).hasSize(1);
        assertThat(text).startsWith("playpen-operator: ").contains(named);
    }

    static String run(int exitCode, String... args) throws Exception {
        Path out = Files.createTempFile(Path.of("target"), "cli", ".out");
        Path err = Files.createTempFile(Path.of("target"), "cli", ".err");
        Process p = new ProcessBuilder(java(args)).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("exit code; stderr: %s", Files.readString(err)).isEqualTo(exitCode);
        assertThat(Files.readString(err)).isEmpty();
        return Files.readString(out);
    }

    @Test
    void helpPrintsUsageToStdoutAndExitsZero() throws Exception {
        String usage = run(0, "--namespace=x", "--help");
        assertThat(usage).startsWith("Aggregated Kubernetes API allocator for playpen runner pods\n")
                .contains("  -h, --help ").contains("--runner-redfish-password string ").contains("--control-plane-versions strings ");
        assertThat(run(0, "-h")).isEqualTo(usage);
    }

    @Test
    void versionPrintsTheManifestVersionAndExitsZero() throws Exception {
        String version = run(0, "--version");
        // the packaged jar carries its Maven version; the commit is "unknown" unless the build passed -Dgit.commit
        assertThat(version).matches("\\d+\\.\\d+\\.\\d+(-SNAPSHOT)? \\(commit: [^)\\s]+\\)\n");
        assertThat(run(0, "-v")).isEqualTo(version);
    }

    /** The args the reference's own Deployment passes start this operator (here in --dev mode, on a free port). */
    @Test
    void theReferenceDeploymentArgsStartTheOperator() throws Exception {
        Path dir = Files.createTempDirectory(Path.of("target"), "it-refargs-");
        Path log = dir.resolve("operator.log");
        List<String> args = new ArrayList<>(List.of("--dev", "--dev-dir=" + dir.resolve("dev")));
        for (String a : io.unboundedcloud.playpen.config.OperatorConfigTest.REFERENCE_DEPLOYMENT_ARGS) {
            // the one fixed port: tests never bind it; dev mode picks a free one
            if (!a.startsWith("--listen-addr=")) {
                args.add(a);
            }
        }
        Process p = new ProcessBuilder(java(args.toArray(String[]::new))).redirectErrorStream(true).redirectOutput(log.toFile())
                .start();
        try {
            // --runner-amd64-count=2 and --runner-arm64-count=2 from those args: two warm runners of each
            OperatorHarness.awaitTrue(() -> {
                try {
                    String text = Files.readString(log);
                    return text.contains("playpen-runner-amd64-51821") && text.contains("playpen-runner-arm64-")
                            && text.lines().filter(l -> l.contains("outcome=created") && l.contains("playpen-runner-")).count() >= 4;
                } catch (Exception e) {
                    return false;
                }
            }, Duration.ofSeconds(90), "four runner pods created");
            assertThat(p.isAlive()).isTrue();
        } finally {
            p.destroy();
            p.waitFor(20, TimeUnit.SECONDS);
        }
        assertThat(Files.readString(log)).doesNotContain("invalid value").doesNotContain("unknown flag");
    }

    @Test
    void jsonLogFormatWritesOneJsonObjectPerLine() throws Exception {
        Path dir = Files.createTempDirectory(Path.of("target"), "it-json-");
        Path log = dir.resolve("operator.log");
        Process p = new ProcessBuilder(java("--dev", "--dev-dir=" + dir.resolve("dev"), "--log-format=json"))
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            OperatorHarness.awaitTrue(() -> {
                try {
                    return Files.readString(log).contains("claimed") || Files.readString(log).contains("outcome=created");
                } catch (Exception e) {
                    return false;
                }
            }, Duration.ofSeconds(60), "pool activity in the log");
        } finally {
            p.destroy();
            p.waitFor(20, TimeUnit.SECONDS);
        }
        ObjectMapper m = new ObjectMapper();
        List<String> jsonLines = Files.readAllLines(log).stream().filter(l -> l.startsWith("{")).toList();
        assertThat(jsonLines).isNotEmpty();
        for (String line : jsonLines) {
            var node = m.readTree(line);
            assertThat(node.has("level")).as(line).isTrue();
            assertThat(node.has("formattedMessage") || node.has("message")).as(line).isTrue();
        }
        assertThat(jsonLines).anyMatch(l -> l.contains("outcome=created"));
    }
}
