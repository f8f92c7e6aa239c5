package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One playground per dev dir; the lock goes with its holder. (A second process: DevModeIT.) */
class DevDirLockTest {
    @TempDir
    Path tmp;

    @Test
    void aSecondPlaygroundOnTheSameDirIsRefusedWithWhatToDo() throws Exception {
        Path dir = tmp.resolve("dev");
        try (DevDirLock first = DevDirLock.acquire(dir)) {
            assertThat(Files.readString(dir.resolve(DevDirLock.FILE))).startsWith("pid " + ProcessHandle.current().pid());
            assertThatThrownBy(() -> DevDirLock.acquire(dir)).isInstanceOf(DevDirLock.InUseException.class)
                    .hasMessageContaining(dir + " is in use by another --dev playground (pid "
                            + ProcessHandle.current().pid())
                    .hasMessageContaining("stop that one first").hasMessageContaining("--dev-dir=" + dir + "-2");
            // another directory is fine
            try (DevDirLock other = DevDirLock.acquire(tmp.resolve("dev-2"))) {
                assertThat(other).isNotNull();
            }
        }
        try (DevDirLock again = DevDirLock.acquire(dir)) {
            assertThat(again).as("free again once the first one is gone").isNotNull();
        }
    }

    @Test
    void aSecondDevClusterOnTheSameDirDoesNotTouchTheFirstOnesFiles() throws Exception {
        Path dir = tmp.resolve("dev");
        try (DevCluster first = DevCluster.start(DevCluster.Options.defaults().devDir(dir).noOperatorInProcess())) {
            first.writeEndpointsEnv(java.util.Map.of());
            String kubeconfig = Files.readString(dir.resolve("kubeconfig"));
            assertThatThrownBy(() -> DevCluster.start(DevCluster.Options.defaults().devDir(dir).noOperatorInProcess()))
                    .isInstanceOf(DevDirLock.InUseException.class);
            assertThat(Files.readString(dir.resolve("kubeconfig"))).isEqualTo(kubeconfig);
            assertThat(first.kubeconfigPath()).exists();
            assertThat(dir.resolve("endpoints.env")).as("the refused one leaves the first one's ready file alone").exists();
        }
    }

    @Test
    void aStoppedPlaygroundNoLongerSaysItIsReady() throws Exception {
        // scripts wait for endpoints.env (docs/getting-started.md); one left by the last run would announce the next
        // run before it is up, with the last run's ports
        Path dir = tmp.resolve("dev");
        DevCluster cluster = DevCluster.start(DevCluster.Options.defaults().devDir(dir).noOperatorInProcess());
        cluster.writeEndpointsEnv(java.util.Map.of());
        assertThat(dir.resolve("endpoints.env")).exists();
        cluster.close();
        assertThat(dir.resolve("endpoints.env")).doesNotExist();
        assertThat(dir.resolve("kubeconfig")).as("the other files stay for a look afterwards").exists();
    }
}
