package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Swap in place: the Go operator's Deployment overrides the entrypoint with {@code /unbounded/bin/playpen-operator};
 * the image ships that path as a launcher running the same JVM as ENTRYPOINT with the Deployment's args.
 */
class DockerfileGoCommandTest {
    static final Path SCRIPT = RenderedDeploy.projectDir().resolve("src/main/docker/playpen-operator");

    static List<String> logicalDockerfileLines() throws Exception {
        List<String> out = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String raw : Files.readAllLines(RenderedDeploy.projectDir().resolve("Dockerfile"), StandardCharsets.UTF_8)) {
            String line = raw.strip();
            if (line.startsWith("#") || current.length() == 0 && line.isEmpty()) {
                continue;
            }
            if (line.endsWith("\\")) {
                current.append(line, 0, line.length() - 1).append(' ');
                continue;
            }
            out.add(current.append(line).toString().strip());
            current.setLength(0);
        }
        return out;
    }

    static List<String> entrypoint() throws Exception {
        List<String> lines = logicalDockerfileLines();
        String last = lines.stream().filter(l -> l.startsWith("ENTRYPOINT ")).reduce((a, b) -> b).orElseThrow();
        return new ObjectMapper().readValue(last.substring("ENTRYPOINT ".length()), new TypeReference<List<String>>() { });
    }

    @Test
    void theImageInstallsTheLauncherAtTheGoOperatorsPathBeforeDroppingRoot() throws Exception {
        List<String> lines = logicalDockerfileLines();
        int copy = -1;
        int user = -1;
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i);
            if (l.startsWith("COPY ") && l.endsWith(" /src/src/main/docker/playpen-operator /unbounded/bin/playpen-operator")) {
                assertThat(l).contains("--from=build").contains("--chmod=0755");
                copy = i;
            }
            if (l.startsWith("USER ")) {
                user = i;
            }
        }
        assertThat(copy).as("COPY of the launcher").isPositive().isLessThan(user);
        assertThat(Files.isExecutable(SCRIPT)).isTrue();
    }

    @Test
    void theLauncherRunsExactlyTheEntrypointWithTheDeploymentsArgs(@TempDir Path dir) throws Exception {
        // a stand-in java on PATH that prints what it was started with
        Path java = dir.resolve("java");
        Files.writeString(java, "#!/bin/sh\nfor a in \"$0\" \"$@\"; do printf '%s\\n' \"$a\"; done\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        List<String> args = List.of("--listen-addr=:8443", "--namespace=playpen", "--runner-label-selector=a=b c");
        List<String> cmd = new ArrayList<>(List.of("/bin/sh", SCRIPT.toString()));
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("PATH", dir + ":/usr/bin:/bin");
        Process p = pb.start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        List<String> printed = Arrays.asList(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).split("\n"));
        assertThat(p.exitValue()).isZero();
        List<String> want = new ArrayList<>(entrypoint());
        assertThat(want.get(0)).endsWith("java");
        want.set(0, java.toString());
        want.addAll(args);
        assertThat(printed).containsExactlyElementsOf(want);
    }
}
