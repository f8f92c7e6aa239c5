package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PodTemplates;

/**
 * The image starts the stand-in runner under the paths the operator's pod templates run (deploy/components/fake-runner
 * names the operator's image as runner and k3s image): /unbounded/bin/playpen-runner and /bin/k3s, installed before
 * root is dropped, each running the packaged jar's fake-runner mode with the container's args.
 */
class DockerfileFakeRunnerTest {
    static final Path DOCKER = RenderedDeploy.projectDir().resolve("src/main/docker");

    @Test
    void theLaunchersSitAtThePathsThePodTemplatesRun() throws Exception {
        Pod runner = new PodTemplates(OperatorConfig.parse(), Map.of()).runner("amd64", 51820);
        Pod cp = new PodTemplates(OperatorConfig.parse(), Map.of()).controlPlane("v1.33.0", 16443);
        assertThat(runner.getSpec().getContainers().get(0).getCommand()).containsExactly("/unbounded/bin/playpen-runner");
        assertThat(cp.getSpec().getContainers().get(0).getCommand()).containsExactly("/bin/k3s");
        assertThat(cp.getSpec().getContainers().get(1).getCommand()).containsExactly("/unbounded/bin/playpen-runner");

        List<String> lines = DockerfileGoCommandTest.logicalDockerfileLines();
        int user = indexOf(lines, l -> l.startsWith("USER "));
        int runnerCopy = indexOf(lines, l -> l.equals(
                "COPY --from=build --chmod=0755 /src/src/main/docker/playpen-runner /unbounded/bin/playpen-runner"));
        // /bin is a link to usr/bin in the Ubuntu-based runtime image: /usr/bin/k3s is /bin/k3s
        int k3sCopy = indexOf(lines, l -> l.equals("COPY --from=build --chmod=0755 /src/src/main/docker/k3s /usr/bin/k3s"));
        assertThat(runnerCopy).as("COPY of the runner launcher").isNotNegative().isLessThan(user);
        assertThat(k3sCopy).as("COPY of the k3s launcher").isNotNegative().isLessThan(user);
        String runtimeBase = lines.stream().filter(l -> l.startsWith("FROM ")).reduce((a, b) -> b).orElseThrow();
        assertThat(runtimeBase).as("an Ubuntu-based image (merged /usr)").isEqualTo("FROM eclipse-temurin:17-jre");
    }

    static int indexOf(List<String> lines, java.util.function.Predicate<String> p) {
        for (int i = 0; i < lines.size(); i++) {
            if (p.test(lines.get(i))) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void eachLauncherRunsTheJarsFakeRunnerModeWithTheContainersArgs(@TempDir Path dir) throws Exception {
        Path java = dir.resolve("java");
        Files.writeString(java, "#!/bin/sh\nfor a in \"$0\" \"$@\"; do printf '%s\\n' \"$a\"; done\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        List<String> args = List.of("server", "--tls-san=192.168.200.1", "--disable=a,b c");
        for (String[] launcher : new String[][] {{"playpen-runner"}, {"k3s", "k3s"}}) {
            Path script = DOCKER.resolve(launcher[0]);
            assertThat(Files.isExecutable(script)).as(script.toString()).isTrue();
            List<String> cmd = new ArrayList<>(List.of("/bin/sh", script.toString()));
            cmd.addAll(args);
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            pb.environment().put("PATH", dir + ":/usr/bin:/bin");
            Process p = pb.start();
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            List<String> printed = Arrays.asList(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8)
                    .split("\n"));
            assertThat(p.exitValue()).isZero();
            assertThat(printed.get(0)).isEqualTo(java.toString());
            int jar = printed.indexOf("-jar");
            assertThat(jar).isPositive();
            List<String> after = new ArrayList<>(List.of("/opt/playpen/playpen-operator.jar", "fake-runner"));
            if (launcher.length > 1) {
                after.add(launcher[1]);
            }
            after.addAll(args);
            assertThat(printed.subList(jar + 1, printed.size())).containsExactlyElementsOf(after);
            // a small heap, never the operator's share of the pod's memory limit
            assertThat(printed.subList(1, jar)).contains("-Xmx128m", "-XX:+ExitOnOutOfMemoryError", "-Xshare:auto");
        }
    }
}
