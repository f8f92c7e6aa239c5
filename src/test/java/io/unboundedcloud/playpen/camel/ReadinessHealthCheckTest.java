package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.camel.health.HealthCheck;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/**
 * The operator's readiness in Camel's health-check registry: up while ready, down with what is missing while not,
 * and a readiness check only: a replica that lost its trust bundle is not to be restarted for it.
 */
class ReadinessHealthCheckTest {

    @Test
    void upWhileReadyDownWithTheReasonWhileNotAndNeverALivenessCheck() throws Exception {
        AtomicBoolean ready = new AtomicBoolean();
        try (DefaultCamelContext camel = new DefaultCamelContext()) {
            String why = "not ready: the pod and node caches are not synced yet (the test's reason)";
            ReadinessHealthCheck check = new ReadinessHealthCheck(() -> ready.get() ? null : why);
            check.setCamelContext(camel);
            assertThat(check.getId()).isEqualTo("playpen-ready");
            assertThat(check.isReadiness()).isTrue();
            assertThat(check.isLiveness()).isFalse();

            HealthCheck.Result down = check.call();
            assertThat(down.getState()).isEqualTo(HealthCheck.State.DOWN);
            assertThat(down.getMessage()).as("why, as the replica says it").hasValue(why);

            ready.set(true);
            HealthCheck.Result up = check.call();
            assertThat(up.getState()).isEqualTo(HealthCheck.State.UP);
            assertThat(up.getMessage()).isEmpty();
        }
    }

    /** A replica whose caches have not synced says so, and what to check if that lasts; no trust bundle is blamed. */
    @Test
    void aReplicaWhoseCachesHaveNotSyncedSaysSoAndWhatToCheck() {
        OperatorApp app = new OperatorApp(io.unboundedcloud.playpen.config.OperatorConfig.parse(), null,
                java.time.Clock.systemUTC(), java.util.Map.of());
        assertThat(app.ready()).isFalse();
        assertThat(app.notReady()).startsWith("not ready: the pod and node caches are not synced yet")
                .contains("check that the API server is reachable from this pod",
                        "may list and watch pods and nodes")
                .doesNotContain("trust bundle");
    }
}
