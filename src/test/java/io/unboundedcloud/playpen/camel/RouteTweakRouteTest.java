package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** The README's worked example "add an audit log step to alloc" works as written. */
class RouteTweakRouteTest {
    /** The step exactly as README.md shows it. */
    static final String AUDIT_STEP = String.join("\n",
            "        - log:",
            "            logName: playpen.audit",
            "            loggingLevel: INFO",
            "            message: \"alloc pod=${body.pod.metadata.name} replay=${body.replay} user=${exchangeProperty.playpenIdentity.user}\"",
            "");

    @Test
    void auditStepLogsEachAllocationWithoutTheKey(@TempDir Path tmp) throws Exception {
        Path routes = tmp.resolve("routes");
        Files.createDirectories(routes);
        try (Stream<Path> files = Files.list(Path.of("routes"))) {
            for (Path f : files.toList()) {
                Files.copy(f, routes.resolve(f.getFileName()));
            }
        }
        Path alloc = routes.resolve("alloc.camel.yaml");
        String yaml = Files.readString(alloc);
        String anchor = "            method: allocate\n";
        assertThat(yaml).contains(anchor);
        Files.writeString(alloc, yaml.replace(anchor, anchor + AUDIT_STEP));
        assertThat(Files.readString(Path.of("README.md"))).contains(AUDIT_STEP);

        Logger audit = (Logger) LoggerFactory.getLogger("playpen.audit");
        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        captured.start();
        audit.addAppender(captured);
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            try (OperatorHarness op = new OperatorHarness(cluster, "--routes-dir=" + routes)) {
                cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
                op.awaitCache(c -> c.size() == 1);
                String body = "{\"idempotencyKey\":\"audit-secret\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}";
                assertThat(op.alloc(body).statusCode()).isEqualTo(200);
                assertThat(op.alloc(body).statusCode()).isEqualTo(200);
            }
        } finally {
            audit.detachAppender(captured);
        }
        assertThat(captured.list).extracting(ILoggingEvent::getFormattedMessage)
                .containsExactly("alloc pod=playpen-runner-amd64-51820 replay=false user=alice",
                        "alloc pod=playpen-runner-amd64-51820 replay=true user=alice");
        assertThat(captured.list).noneMatch(e -> e.getFormattedMessage().contains("audit-secret"));
    }
}
