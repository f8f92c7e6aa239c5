package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;

import org.apache.camel.ServiceStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * With --routes-reload, an edit that cannot be loaded is refused and the running route stays (docs/routes.md): an
 * edit of alloc.camel.yaml naming a bean that does not exist leaves the alloc route serving, with its error handling,
 * and says so in the log; the file saved again without the mistake is loaded.
 */
class RoutesReloadRouteTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @RegisterExtension
    final CapturedLogs camelLogs = CapturedLogs.named("org.apache.camel");

    @RegisterExtension
    final CapturedLogs keptLog = CapturedLogs.of(KeepingRouteReload.class);

    @Test
    void anEditNamingAnUnknownBeanIsRefusedAndTheRunningRouteStays(@TempDir Path tmp) throws Exception {
        Path routes = OperatorHarness.copyOfRoutes(tmp);
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            try (OperatorHarness op = new OperatorHarness(cluster, "--routes-dir=" + routes, "--routes-reload")) {
                cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
                op.awaitCache(c -> c.size() == 1);

                Path alloc = routes.resolve("alloc.camel.yaml");
                String yaml = Files.readString(alloc);
                String broken = yaml.replace("            id: alloc-parse\n            ref: apiFlows",
                        "            id: alloc-parse\n            ref: noSuchBean");
                assertThat(broken).isNotEqualTo(yaml);
                Path edit = alloc.resolveSibling(".alloc.tmp");
                Files.writeString(edit, broken);
                Files.move(edit, alloc, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                OperatorHarness.awaitTrue(() -> camelLogs.lines().stream()
                        .anyMatch(l -> String.valueOf(l.getFormattedMessage()).contains("alloc.camel.yaml")
                                || l.getThrowableProxy() != null
                                        && String.valueOf(l.getThrowableProxy().getMessage()).contains("noSuchBean")),
                        WAIT, "the refused reload logged");

                assertThat(op.app.camelContext().getRouteController().getRouteStatus("alloc"))
                        .as("the running alloc route").isEqualTo(ServiceStatus.Started);
                HttpResponse<String> answer = op.alloc("{\"idempotencyKey\":\"reload-1\",\"wireGuardPublicKey\":\""
                        + TestCluster.wgKey(1) + "\"}");
                assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
                // the errors configuration is still the route's: a refusal is a Status
                HttpResponse<String> refused = op.alloc("{\"idempotencyKey\":\"reload-2\"}");
                assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);
                assertThat(refused.body()).contains("\"kind\":\"Status\"").contains("wireGuardPublicKey is required");
                // a good edit after it is loaded: the alloc route is replaced
                org.apache.camel.Route kept = op.app.camelContext().getRoute("alloc");
                Files.writeString(edit, yaml);
                Files.move(edit, alloc, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                OperatorHarness.awaitTrue(() -> {
                    org.apache.camel.Route now = op.app.camelContext().getRoute("alloc");
                    return now != null && now != kept && op.app.camelContext().getRouteController()
                            .getRouteStatus("alloc") == ServiceStatus.Started;
                }, WAIT, "the fixed alloc.camel.yaml loaded");
                assertThat(op.alloc("{\"idempotencyKey\":\"reload-1\",\"wireGuardPublicKey\":\""
                        + TestCluster.wgKey(1) + "\"}").statusCode()).as("a replay on the reloaded route").isEqualTo(200);
                assertThat(keptLog.lines()).anyMatch(l -> l.getFormattedMessage().contains("alloc.camel.yaml not loaded,"
                        + " its routes run as before"));
            }
        }
    }
}
