package io.unboundedcloud.playpen.fakerunner;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The admin kubeconfig the stand-in k3s writes: never readable by others on the way, never written through a link. */
class StandInK3sKubeconfigTest {
    @TempDir
    Path dir;

    /**
     * A link planted where a fixed temporary name would be does not receive the kubeconfig: the temporary file is a
     * new one with a name of its own, created owner-only.
     */
    @Test
    void aLinkAtTheOldTemporaryNameIsNotWrittenThrough() throws Exception {
        Path victim = Files.writeString(dir.resolve("elsewhere"), "untouched");
        Files.setPosixFilePermissions(victim, PosixFilePermissions.fromString("rw-rw-rw-"));
        Path kubeconfig = dir.resolve("k3s.yaml");
        Files.createSymbolicLink(dir.resolve(".k3s.yaml.tmp"), victim);

        StandInK3s.writeKubeconfig(kubeconfig, "0600", "secret-kubeconfig");

        assertThat(Files.readString(victim)).as("the planted link's target").isEqualTo("untouched");
        assertThat(Files.getPosixFilePermissions(victim)).isEqualTo(PosixFilePermissions.fromString("rw-rw-rw-"));
        assertThat(Files.isSymbolicLink(kubeconfig)).isFalse();
        assertThat(Files.readString(kubeconfig)).isEqualTo("secret-kubeconfig");
        assertThat(Files.getPosixFilePermissions(kubeconfig)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
    }

    /** The requested mode is the file's mode in the end, and no temporary file is left behind. */
    @Test
    void theRequestedModeIsAppliedAndNoTemporaryFileStays() throws Exception {
        Path kubeconfig = dir.resolve("sub/k3s.yaml");
        StandInK3s.writeKubeconfig(kubeconfig, "0644", "first");
        StandInK3s.writeKubeconfig(kubeconfig, "0644", "second");
        assertThat(Files.readString(kubeconfig)).isEqualTo("second");
        assertThat(Files.getPosixFilePermissions(kubeconfig)).isEqualTo(PosixFilePermissions.fromString("rw-r--r--"));
        try (var files = Files.list(kubeconfig.getParent())) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("k3s.yaml");
        }
    }
}
