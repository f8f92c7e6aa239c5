package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

/** What the playground's replicas inherit from its command line. (The replicas themselves: DocsIT.) */
class DevReplicasTest {
    @Test
    void replicasTakeTheOperatorFlagsButNotTheDevAddressOrKubeconfigOnes() {
        assertThat(DevReplicas.operatorFlags(List.of("--listen-addr=127.0.0.1:1", "--management-addr", "127.0.0.1:2",
                "--audit-log-path=x", "--control-plane-count=1", "--dev", "--dev-replicas=3", "--dev-dir", "d",
                "--runner-amd64-count", "2", "--kubeconfig=k", "--leader-elect=false", "--routes-reload",
                "--playpen-ttl=5m")))
                .containsExactly("--control-plane-count=1", "--runner-amd64-count", "2", "--leader-elect=false",
                        "--routes-reload", "--playpen-ttl=5m");
    }

    @Test
    void theRestartCommandIsOneAPersonCanPaste() {
        assertThat(DevReplicas.printable(List.of(System.getProperty("java.home") + "/bin/java", "-jar",
                java.nio.file.Path.of("target/playpen-operator.jar").toAbsolutePath().toString(), "--listen-addr=127.0.0.1:9441",
                "--runner-label-selector=a in (x)")))
                .isEqualTo("java -jar target/playpen-operator.jar --listen-addr=127.0.0.1:9441 '--runner-label-selector=a in (x)'");
    }
}
