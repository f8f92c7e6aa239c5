package io.unboundedcloud.playpen.kube;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfigBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;

/**
 * Leader election on a coordination.k8s.io Lease (fabric8 LeaderElector). Background work runs on the
 * leader only; with election disabled this process is always the leader.
 */
public final class LeaderElection implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LeaderElection.class);

    /** Told when this process gains or loses leadership. */
    public interface Listener {
        void leadershipChanged(boolean leader);
    }

    private final KubernetesClient client;
    private final boolean enabled;
    private final String namespace;
    private final String leaseName;
    private final String identity;
    private final Duration leaseDuration;
    private final Duration renewDeadline;
    private final Duration retryPeriod;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private volatile boolean leader;
    private volatile boolean closed;
    private CompletableFuture<?> running;
    private final java.util.concurrent.ScheduledExecutorService restarter =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("leader-election"));

    public LeaderElection(KubernetesClient client, boolean enabled, String namespace, String leaseName, String identity,
            Duration leaseDuration, Duration renewDeadline, Duration retryPeriod) {
        this.client = client;
        this.enabled = enabled;
        this.namespace = namespace;
        this.leaseName = leaseName;
        this.identity = identity;
        this.leaseDuration = leaseDuration;
        this.renewDeadline = renewDeadline;
        this.retryPeriod = retryPeriod;
    }

    public void addListener(Listener l) {
        listeners.add(l);
    }

    public boolean isLeader() {
        return leader;
    }

    public String identity() {
        return identity;
    }

    public synchronized void start() {
        if (!enabled) {
            set(true);
            return;
        }
        elect();
        LOG.info("leader election started identity={} lease={}/{}", identity, namespace, leaseName);
    }

    /**
     * One round of fabric8's elector: it acquires, renews until it cannot, then completes for good. A replica
     * that lost the Lease (API server blip past the renew deadline) must compete again, so every completed
     * round schedules the next one until close().
     */
    private synchronized void elect() {
        if (closed) {
            return;
        }
        CompletableFuture<?> round = client.leaderElector().withConfig(new LeaderElectionConfigBuilder()
                .withName(leaseName)
                .withLock(new LeaseLock(namespace, leaseName, identity))
                .withLeaseDuration(leaseDuration)
                .withRenewDeadline(renewDeadline)
                .withRetryPeriod(retryPeriod)
                .withReleaseOnCancel(true)
                .withLeaderCallbacks(new LeaderCallbacks(() -> set(true), () -> set(false),
                        newLeader -> LOG.info("leader is {} (lease {}/{})", newLeader, namespace, leaseName)))
                .build()).build().start();
        running = round;
        round.whenComplete((r, e) -> {
            set(false);
            if (!closed) {
                restarter.schedule(this::elect, retryPeriod.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            }
        });
    }

    private void set(boolean now) {
        if (leader == now) {
            return;
        }
        leader = now;
        LOG.info("leadership {} identity={}", now ? "acquired" : "lost", identity);
        for (Listener l : listeners) {
            try {
                l.leadershipChanged(now);
            } catch (RuntimeException e) {
                LOG.warn("leadership listener failed: {}", e.toString());
            }
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        restarter.shutdownNow();
        if (running != null) {
            running.cancel(true);
            running = null;
        }
        set(false);
    }
}
