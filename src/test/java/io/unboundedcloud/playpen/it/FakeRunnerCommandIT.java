package io.unboundedcloud.playpen.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The packaged jar's fake-runner mode, as the image's launchers start it: {@code java -jar … fake-runner [args]} reaches
 * the stand-in, not the operator's flag parser (which would refuse these flags), prints its usage, and stops with exit
 * 2 naming a bad flag or 1 naming what the pod must provide.
 */
class FakeRunnerCommandIT {
    record Result(int code, String out, String err) {
    }

    static Result run(Map<String, String> env, String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(CommandLineIT.java("fake-runner"));
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile(Path.of("target"), "fake-runner", ".out");
        Path err = Files.createTempFile(Path.of("target"), "fake-runner", ".err");
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
            pb.environment().remove("POD_NAME");
            pb.environment().remove("POD_NAMESPACE");
            pb.environment().putAll(env);
            Process p = pb.start();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    @Test
    void theJarStartsTheStandInWithItsOwnCommandLine() throws Exception {
        Result help = run(Map.of(), "k3s", "--help");
        assertThat(help.code()).isZero();
        assertThat(help.out()).startsWith("Usage: playpen-operator fake-runner");

        Result bad = run(Map.of(), "--architecture=amd64", "--wireguard-listen-port=51820", "--vm-cpus=2");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err().strip()).isEqualTo("playpen-operator fake-runner: unknown flag --vm-cpus for the runner stand-in");

        Result noPod = run(Map.of("POD_NAMESPACE", "playpen"), "--architecture=amd64",
                "--wireguard-private-key-file=target/fake-runner-it/privatekey", "--wireguard-listen-port=51820");
        assertThat(noPod.code()).isEqualTo(1);
        assertThat(noPod.err()).contains("POD_NAME is not set");
    }
}
