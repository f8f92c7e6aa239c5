package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import ch.qos.logback.classic.spi.ILoggingEvent;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;

/** What the playground's replicas inherit from its command line. (The replicas themselves: DocsIT.) */
class DevReplicasTest {
    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(DevReplicas.class);

    @Test
    void replicasTakeTheOperatorFlagsButNotTheDevAddressOrKubeconfigOnes() {
        assertThat(DevReplicas.operatorFlags(List.of("--listen-addr=127.0.0.1:1", "--management-addr", "127.0.0.1:2",
                "--audit-log-path=x", "--control-plane-count=1", "--dev", "--dev-replicas=3", "--dev-dir", "d",
                "--runner-amd64-count", "2", "--kubeconfig=k", "--leader-elect=false", "--routes-reload",
                "--playpen-ttl=5m")))
                .containsExactly("--control-plane-count=1", "--runner-amd64-count", "2", "--leader-elect=false",
                        "--routes-reload", "--playpen-ttl=5m");
    }

    /**
     * The replicas are child processes, which the JVM leaves running when it exits: a playground ended by SIGTERM
     * before it was ready (the hook of Main that closes it is registered only then) orphaned them. DevReplicas
     * registers a shutdown hook of its own before it starts the first one, and that hook stops them.
     */
    @Test
    void aShutdownHookRegisteredBeforeTheFirstReplicaStartsStopsThem() throws Exception {
        List<DevReplicas.Replica> started = new java.util.ArrayList<>();
        DevReplicas all = new DevReplicas(started);
        Thread hook = all.stopOnExit();
        assertThat(Runtime.getRuntime().removeShutdownHook(hook)).as("registered as a shutdown hook").isTrue();
        Process child = new ProcessBuilder("sleep", "3600").start();
        started.add(new DevReplicas.Replica(0, "127.0.0.1:1", 2, Path.of("replica-0.log"), List.of("sleep", "3600"),
                child));
        hook.run();
        // the hook waits for the replicas it stops: nothing is left running when it returns
        assertThat(child.isAlive()).as("replica process alive after the hook ran").isFalse();
    }

    @Test
    void closingTheReplicasTakesBackTheirShutdownHook() {
        DevReplicas all = new DevReplicas(new java.util.ArrayList<>());
        all.close();
        assertThat(Runtime.getRuntime().removeShutdownHook(all.stopOnExit())).as("still registered").isFalse();
    }

    @Test
    void theRestartCommandIsOneAPersonCanPaste() {
        assertThat(DevReplicas.printable(List.of(System.getProperty("java.home") + "/bin/java", "-jar",
                java.nio.file.Path.of("target/playpen-operator.jar").toAbsolutePath().toString(), "--listen-addr=127.0.0.1:9441",
                "--runner-label-selector=a in (x)")))
                .isEqualTo("java -jar target/playpen-operator.jar --listen-addr=127.0.0.1:9441 '--runner-label-selector=a in (x)'");
    }

    /**
     * A Redfish password given to the playground as a flag reaches its replicas in an owner-only file: it is on no
     * replica's command line (which anyone on the machine can list) and not in the line that says how to start a
     * replica again once one has exited.
     */
    @Test
    void aRedfishPasswordFlagIsNeitherOnAReplicasCommandLineNorInTheRestartLine(@TempDir Path devDir) throws Exception {
        String password = "replica-password-" + System.nanoTime();
        try (DevReplicas replicas = DevReplicas.start(List.of("127.0.0.1:" + FreePorts.pick()), devDir,
                devDir.resolve("operator-kubeconfig"), devDir.resolve("audit.log"),
                DevReplicas.operatorFlags(List.of("--dev", "--runner-redfish-password", password, "--leader-elect=false")))) {
            DevReplicas.Replica replica = replicas.replicas().get(0);
            assertThat(replica.command()).noneMatch(part -> part.contains(password))
                    .contains("--runner-redfish-password-file=" + devDir.resolve("runner-redfish-password").toAbsolutePath());
            Path file = devDir.resolve("runner-redfish-password");
            assertThat(io.unboundedcloud.playpen.config.OperatorConfig.parse(
                    "--runner-redfish-password-file=" + file).network().redfishPassword()).isEqualTo(password);
            assertThat(Files.getPosixFilePermissions(file))
                    .containsExactlyInAnyOrder(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);
            replica.process().destroyForcibly();
            OperatorHarness.awaitTrue(() -> restartLine() != null, Duration.ofSeconds(30), "the replica's exit logged");
            assertThat(restartLine()).doesNotContain(password).contains("--runner-redfish-password-file=")
                    .contains("a replica you start is yours to stop");
        }
    }

    @Test
    void theLastPasswordGivenGoesIntoTheFileAndTheOtherFlagsStayAsGiven(@TempDir Path devDir) throws Exception {
        assertThat(DevReplicas.passwordInAFile(List.of("--runner-redfish-password=first", "--playpen-ttl", "5m",
                "-runner-redfish-password=second\r", "--routes-reload"), devDir))
                .containsExactly("--playpen-ttl", "5m", "--routes-reload",
                        "--runner-redfish-password-file=" + devDir.resolve("runner-redfish-password").toAbsolutePath());
        assertThat(io.unboundedcloud.playpen.config.OperatorConfig.parse("--runner-redfish-password-file="
                + devDir.resolve("runner-redfish-password")).network().redfishPassword()).isEqualTo("second\r");
        assertThat(DevReplicas.passwordInAFile(List.of("--playpen-ttl=5m"), devDir)).containsExactly("--playpen-ttl=5m");
    }

    private String restartLine() {
        return logs.lines().stream().map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("start it again with"))
                .findFirst().orElse(null);
    }
}
