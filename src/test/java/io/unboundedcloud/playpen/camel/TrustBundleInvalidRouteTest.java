package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The TrustBundleInvalid Warning goes through kube-event like every other Event (its own route,
 * trust-bundle-invalid), so a step added inside kube-event's split, as docs/routes.md says to see each Event, sees it.
 */
class TrustBundleInvalidRouteTest {
    @RegisterExtension
    final CapturedLogs seen = CapturedLogs.named("test.kube-events");

    @Test
    void aStepAddedToKubeEventSeesTheTrustBundleInvalidWarning(@TempDir Path tmp) throws Exception {
        Path routes = OperatorHarness.copyOfRoutes(tmp);
        Path kubeEvent = routes.resolve("kube-event.camel.yaml");
        String yaml = Files.readString(kubeEvent);
        assertThat(yaml).endsWith("                  method: record\n");
        Files.writeString(kubeEvent, yaml + String.join("\n",
                "              - log:",
                "                  id: each-event-seen",
                "                  logName: test.kube-events",
                "                  message: \"${body.reason}\"", ""));
        try (TestCluster cluster = TestCluster.start();
                OperatorHarness op = new OperatorHarness(cluster, "--routes-dir=" + routes)) {
            cluster.client.configMaps().inNamespace("kube-system").withName("extension-apiserver-authentication")
                    .delete();
            OperatorHarness.awaitTrue(() -> cluster.client.v1().events().inAnyNamespace().list().getItems().stream()
                    .anyMatch(e -> "TrustBundleInvalid".equals(e.getReason())), Duration.ofSeconds(60),
                    "the TrustBundleInvalid Event written");
            // the split's step runs just after the Event is queued for writing, on the caller's thread
            OperatorHarness.awaitTrue(() -> seen.lines().stream()
                    .anyMatch(l -> l.getFormattedMessage().equals("TrustBundleInvalid")), Duration.ofSeconds(60),
                    "the TrustBundleInvalid Event seen by kube-event's split");
        }
    }
}
