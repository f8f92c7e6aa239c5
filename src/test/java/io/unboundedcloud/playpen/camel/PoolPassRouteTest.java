package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import org.apache.camel.api.management.ManagedCamelContext;
import org.apache.camel.api.management.mbean.ManagedRouteMBean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

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

    /**
     * The routes are meant to be edited and reloaded: a step added between the pass's steps that fails ends the
     * exchange before pool-finish. The pass still ends (the lock that keeps passes from overlapping is released), so
     * a pass on another thread (the timer's, a refill's) is not blocked for good.
     */
    @Test
    void aStepThatFailsBetweenThePassStepsStillEndsThePass(@TempDir Path tmp) throws Exception {
        Path routes = OperatorHarness.copyOfRoutes(tmp);
        Path file = routes.resolve("pool-reconcile.camel.yaml");
        String yaml = Files.readString(file);
        String edited = yaml.replaceFirst("(?m)^( *)- bean:\n( *)id: pool-delete\n", "$1- throwException:\n"
                + "$2id: pool-edited-step\n$2exceptionType: java.lang.IllegalStateException\n"
                + "$2message: an edited step that fails\n$0");
        assertThat(edited).as("the step added before pool-delete").isNotEqualTo(yaml);
        Files.writeString(file, edited);
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--routes-dir=" + routes, "--runner-amd64-count=1",
                "--runner-arm64-count=0", "--reconcile-interval=10m");
        ManagedRouteMBean passes = route("pool-pass");
        OperatorHarness.awaitTrue(() -> passes.getExchangesFailed() >= 1, Duration.ofSeconds(60),
                "a pass through the edited route failed");
        assertThat(cluster.pods()).as("no step after the failing one ran").isEmpty();

        // a pass on another thread (this test's own) gets the pass lock and creates the pod
        PoolReconciler reconciler = op.app.poolReconciler();
        CompletableFuture<PoolReconciler.Result> other = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                other.complete(reconciler.reconcile());
            } catch (RuntimeException e) {
                other.completeExceptionally(e);
            }
        }, "another-pass");
        t.setDaemon(true);
        t.start();
        OperatorHarness.awaitTrue(other::isDone, Duration.ofSeconds(60), "the other thread's pass ended");
        assertThat(other.get().created()).isEqualTo(1);
        assertThat(cluster.pods()).hasSize(1);
    }
}
