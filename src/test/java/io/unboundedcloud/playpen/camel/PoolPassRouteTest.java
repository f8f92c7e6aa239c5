package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.apache.camel.api.management.ManagedCamelContext;
import org.apache.camel.api.management.mbean.ManagedRouteMBean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** How the pool-pass route ends a pass that failed. */
class PoolPassRouteTest {
    static final String POST_PODS = "POST /api/v1/namespaces/playpen/pods";
    @RegisterExtension
    final CapturedLogs camel = CapturedLogs.named("org.apache.camel");
    @RegisterExtension
    final CapturedLogs pool = CapturedLogs.of(PoolReconciler.class);
    TestCluster cluster;
    OperatorHarness op;

    @AfterEach
    void down() {
        if (op != null) {
            op.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    long poolLines(String start) {
        return pool.lines().stream().map(ILoggingEvent::getFormattedMessage).filter(m -> m.startsWith(start)).count();
    }

    ManagedRouteMBean route(String id) {
        return op.app.camelContext().getCamelContextExtension().getContextPlugin(ManagedCamelContext.class)
                .getManagedRoute(id);
    }

    /**
     * A pass whose create is refused (a quota, RBAC) is a failed pass, and says so in its own lines (the WARN
     * outcome=create-refused, pool pass failed) and metrics; a steady refusal repeats it every pause. Camel's error
     * handler must not add an ERROR with a stack trace ("Failed delivery") for each of those passes.
     */
    @Test
    void aFailedPassLogsItsOwnLinesAndNoErrorOfCamels() throws Exception {
        cluster = TestCluster.start();
        cluster.forbidden = key -> key.equals(POST_PODS);
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--runner-amd64-count=1", "--runner-arm64-count=0",
                "--reconcile-interval=10m");
        ManagedRouteMBean passes = route("pool-pass");
        // the first pass and the one after its pause (1 s), both through the route, both refused, both ended
        OperatorHarness.awaitTrue(() -> poolLines("pool pass failed") >= 2 && passes.getExchangesInflight() == 0,
                Duration.ofSeconds(60), "two failed passes ended");
        assertThat(poolLines("pool=runner/amd64 outcome=create-refused")).isGreaterThanOrEqualTo(2);
        assertThat(passes.getExchangesTotal()).as("passes through the route").isPositive();
        assertThat(camel.lines()).filteredOn(e -> e.getLevel().isGreaterOrEqual(Level.ERROR))
                .extracting(ILoggingEvent::getFormattedMessage).isEmpty();
        assertThat(passes.getExchangesFailed()).as("route exchanges failed").isZero();
    }
}
