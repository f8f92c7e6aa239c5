package io.unboundedcloud.playpen.camel;

import static io.unboundedcloud.playpen.support.OperatorHarness.awaitTrue;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.ServiceStatus;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.RoutePolicySupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.unboundedcloud.playpen.support.CapturedLogs;

/**
 * The {@code leaderOnly} route policy on its own, in a plain Camel context: routes that use it run while this
 * replica leads and stop when it no longer does; routes without it are left alone; a route initialised while
 * this replica already leads starts once the context runs; and a change of leadership that is already undone by
 * the time its turn comes is skipped, so routes end as the last change says and are never started for a
 * leadership that has already ended. A route removed from the context is forgotten.
 */
class LeaderRoutePolicyTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(LeaderRoutePolicy.class);

    private final LeaderRoutePolicy policy = new LeaderRoutePolicy();
    private final Recorder recorder = new Recorder();
    private CamelContext context;

    @AfterEach
    void stop() throws Exception {
        recorder.release.countDown();
        policy.close();
        if (context != null) {
            context.stop();
        }
    }

    @Test
    void routesRunWhileThisReplicaLeadsAndOthersAreLeftAlone() throws Exception {
        context = contextWithRoutes();
        context.start();
        assertThat(status("leader-only")).isEqualTo(ServiceStatus.Stopped);

        policy.leadershipChanged(true);
        awaitStatus("leader-only", ServiceStatus.Started);
        awaitStatus("also-leader-only", ServiceStatus.Started);
        assertThat(status("not-mine")).as("a route without the policy").isEqualTo(ServiceStatus.Stopped);

        policy.leadershipChanged(false);
        awaitStatus("leader-only", ServiceStatus.Stopped);
        awaitStatus("also-leader-only", ServiceStatus.Stopped);

        context.getRouteController().startRoute("not-mine");
        policy.leadershipChanged(true);
        awaitStatus("leader-only", ServiceStatus.Started);
        policy.leadershipChanged(false);
        awaitStatus("leader-only", ServiceStatus.Stopped);
        assertThat(status("not-mine")).as("a route without the policy is not stopped either")
                .isEqualTo(ServiceStatus.Started);
        assertThat(recorder.starts).hasValue(2);
        assertThat(recorder.stops).hasValue(2);
    }

    @Test
    void aReplicaThatLeadsBeforeItsRoutesExistStartsThemOnceTheContextRuns() throws Exception {
        policy.leadershipChanged(true);
        context = contextWithRoutes();
        context.start();
        awaitStatus("leader-only", ServiceStatus.Started);
        awaitStatus("also-leader-only", ServiceStatus.Started);
        assertThat(status("not-mine")).isEqualTo(ServiceStatus.Stopped);
        assertThat(recorder.starts).hasValue(1);

        // a route (re)loaded while this replica leads starts as well
        addLeaderOnlyRoute("reloaded");
        awaitStatus("reloaded", ServiceStatus.Started);
    }

    @Test
    void aChangeUndoneBeforeItsTurnIsSkipped() throws Exception {
        context = contextWithRoutes();
        context.start();
        recorder.holdFirstStart = true;

        policy.leadershipChanged(true);
        assertThat(recorder.holding.await(30, TimeUnit.SECONDS)).as("the first start is held").isTrue();
        // while the first start is held, leadership is lost, won and lost again: the win is over before its turn
        policy.leadershipChanged(false);
        policy.leadershipChanged(true);
        policy.leadershipChanged(false);
        recorder.release.countDown();

        awaitTrue(() -> idle(recorder.switcher.get()), WAIT, "the policy's thread to run every change");
        assertThat(status("leader-only")).isEqualTo(ServiceStatus.Stopped);
        assertThat(recorder.starts).as("started for the first win only").hasValue(1);
        assertThat(recorder.stops).as("stopped once, by the first loss").hasValue(1);
    }

    @Test
    void aRemovedRouteIsForgottenAndHoldsUpNoOther() throws Exception {
        context = contextWithRoutes();
        context.start();
        context.getRouteController().stopRoute("leader-only");
        assertThat(context.removeRoute("leader-only")).isTrue();

        policy.leadershipChanged(true);
        awaitStatus("also-leader-only", ServiceStatus.Started);
        assertThat(logs.lines()).as("no wait for the removed route, no warning about it")
                .noneMatch(l -> l.getFormattedMessage().contains("route=leader-only not running"));

        // added again under its id (a reload): started while leading, and followed again
        addLeaderOnlyRoute("leader-only");
        awaitStatus("leader-only", ServiceStatus.Started);
        policy.leadershipChanged(false);
        awaitStatus("leader-only", ServiceStatus.Stopped);
        awaitStatus("also-leader-only", ServiceStatus.Stopped);
    }

    private CamelContext contextWithRoutes() throws Exception {
        CamelContext c = new DefaultCamelContext();
        c.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:leader-only").routeId("leader-only").autoStartup(false).routePolicy(policy, recorder)
                        .setBody().constant("x");
                from("direct:also-leader-only").routeId("also-leader-only").autoStartup(false).routePolicy(policy)
                        .setBody().constant("y");
                from("direct:not-mine").routeId("not-mine").autoStartup(false).setBody().constant("z");
            }
        });
        return c;
    }

    /** Adds a route with the policy to the running context, as a reload does. */
    private void addLeaderOnlyRoute(String routeId) throws Exception {
        context.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:" + routeId).routeId(routeId).autoStartup(false).routePolicy(policy).setBody()
                        .constant(routeId);
            }
        });
    }

    private ServiceStatus status(String routeId) {
        return context.getRouteController().getRouteStatus(routeId);
    }

    private void awaitStatus(String routeId, ServiceStatus expected) throws InterruptedException {
        awaitTrue(() -> status(routeId) == expected, WAIT, routeId + " " + expected);
    }

    /** The policy's thread has nothing left to do: it waits for its next task. */
    private static boolean idle(Thread t) {
        return t.getState() == Thread.State.WAITING && Arrays.stream(t.getStackTrace())
                .anyMatch(f -> f.getMethodName().equals("take") && f.getClassName().endsWith("LinkedBlockingQueue"));
    }

    /** Counts the starts and stops of the route it is on; can hold the first start on the starting thread. */
    private static final class Recorder extends RoutePolicySupport {
        final AtomicInteger starts = new AtomicInteger();
        final AtomicInteger stops = new AtomicInteger();
        final AtomicReference<Thread> switcher = new AtomicReference<>();
        final CountDownLatch holding = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        volatile boolean holdFirstStart;

        @Override
        public void onStart(Route route) {
            if (starts.incrementAndGet() == 1 && holdFirstStart) {
                switcher.set(Thread.currentThread());
                holding.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public void onStop(Route route) {
            stops.incrementAndGet();
        }
    }
}
