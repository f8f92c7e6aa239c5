package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the process starts the operator: a start that fails stops what it had started before it exits; a SIGTERM
 * during the start is a normal stop too.
 */
class MainStartTest {
    @Test
    void aStartThatFailsClosesWhatItStartedSoTheLeaseIsReleased() {
        List<String> done = new ArrayList<>();
        assertThatThrownBy(() -> Main.startOrClose(() -> done.add("closed"), () -> {
            done.add("Lease elector started");
            throw new java.net.BindException("Address already in use");
        })).isInstanceOf(java.net.BindException.class).hasMessage("Address already in use");
        assertThat(done).containsExactly("Lease elector started", "closed");
    }

    @Test
    void aStartThatSucceedsLeavesItRunning() throws Exception {
        List<String> done = new ArrayList<>();
        AutoCloseable running = () -> done.add("closed");
        assertThat(Main.startOrClose(running, () -> done.add("started"))).isSameAs(running);
        assertThat(done).containsExactly("started");
    }

    /**
     * A replica deleted while it starts (a rollout undone, a scale-down, a drain): its API server calls hang here, an
     * API server that takes the connection and never answers. SIGTERM then stops it as it stops a running one: what
     * it started is closed, and it exits 0, not the JVM's 143.
     */
    @Test
    void aSigtermDuringTheStartExitsZero(@TempDir java.nio.file.Path dir) throws Exception {
        List<java.net.Socket> accepted = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.concurrent.CountDownLatch called = new java.util.concurrent.CountDownLatch(1);
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            Thread acceptor = new Thread(() -> {
                while (!silent.isClosed()) {
                    try {
                        accepted.add(silent.accept());
                        called.countDown();
                    } catch (java.io.IOException e) {
                        return;
                    }
                }
            }, "silent-api-server");
            acceptor.setDaemon(true);
            acceptor.start();
            java.nio.file.Path kubeconfig = dir.resolve("kubeconfig");
            java.nio.file.Files.writeString(kubeconfig, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                    + "    server: http://127.0.0.1:" + silent.getLocalPort() + "\ncontexts:\n- name: c\n  context:\n"
                    + "    cluster: c\n    user: u\n    namespace: playpen\ncurrent-context: c\nusers:\n- name: u\n"
                    + "  user:\n    token: not-a-real-token\n");
            List<String> cmd = new ArrayList<>(List.of(
                    java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", System.getProperty("java.class.path"), Main.class.getName(),
                    "--kubeconfig=" + kubeconfig, "--listen-addr=127.0.0.1:" + io.unboundedcloud.playpen.support
                            .OperatorHarness.freePort(), "--leader-elect=false", "--management-addr=",
                    "--routes-dir=" + System.getProperty("playpen.test.routesDir", "routes")));
            java.nio.file.Path log = dir.resolve("operator.log");
            Process operator = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            try {
                assertThat(called.await(60, java.util.concurrent.TimeUnit.SECONDS))
                        .as("the start calling the API server").isTrue();
                assertThat(operator.isAlive()).isTrue();
                operator.destroy(); // SIGTERM
                assertThat(operator.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)).as("exited").isTrue();
                assertThat(operator.exitValue()).as("exit code; output: %s", java.nio.file.Files.readString(log))
                        .isZero();
            } finally {
                operator.destroyForcibly();
                for (java.net.Socket sock : accepted) {
                    sock.close();
                }
            }
        }
    }
}
