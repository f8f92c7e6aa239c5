package io.unboundedcloud.playpen.camel;

import java.util.Set;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.ServiceStatus;
import org.apache.camel.support.RoutePolicySupport;
import io.unboundedcloud.playpen.kube.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.unboundedcloud.playpen.kube.LeaderElection;

/**
 * Route policy {@code leaderOnly}: the routes that use it (declared with autoStartup: false) run only while
 * this replica holds the leader Lease, and stop when it loses it.
 */
public final class LeaderRoutePolicy extends RoutePolicySupport implements LeaderElection.Listener {
    private static final Logger LOG = LoggerFactory.getLogger(LeaderRoutePolicy.class);

    private final Set<String> routeIds = new CopyOnWriteArraySet<>();
    private final ExecutorService switcher = Executors.newSingleThreadExecutor(DaemonThreads.named("leader-routes"));
    private volatile CamelContext context;
    private volatile boolean leader;

    @Override
    public void onInit(Route route) {
        context = route.getCamelContext();
        routeIds.add(route.getRouteId());
        if (leader) {
            switchTo(true, route.getRouteId());
        }
    }

    /**
     * A route removed from the context (a reload under another id, or for good) is forgotten: a later change of
     * leadership would otherwise wait 10 s for it on the one thread that switches every route.
     */
    @Override
    public void onRemove(Route route) {
        routeIds.remove(route.getRouteId());
    }

    @Override
    public void leadershipChanged(boolean isLeader) {
        leader = isLeader;
        routeIds.forEach(id -> switchTo(isLeader, id));
    }

    /**
     * Starts or stops the route off the caller's thread, once the context is running and the route is
     * registered (a route being (re)loaded is initialised before it is added to the context, and the routes of a
     * context that is still starting are initialised before it runs: a replica that leads by then starts them as
     * soon as it does).
     */
    private void switchTo(boolean start, String routeId) {
        switcher.submit(() -> {
            CamelContext ctx = context;
            long deadline = System.nanoTime() + 10_000_000_000L;
            try {
                while (ctx != null && System.nanoTime() < deadline && !ended(ctx)
                        && (!ctx.isStarted() || ctx.getRoute(routeId) == null)) {
                    Thread.sleep(20);
                }
                if (ctx == null || ended(ctx) || leader != start) {
                    return;
                }
                if (!ctx.isStarted() || ctx.getRoute(routeId) == null) {
                    LOG.warn("route={} not running within 10 s; not {} it", routeId, start ? "starting" : "stopping");
                    return;
                }
                ServiceStatus status = ctx.getRouteController().getRouteStatus(routeId);
                if (start && status != ServiceStatus.Started) {
                    ctx.getRouteController().startRoute(routeId);
                    LOG.info("route={} started (leader)", routeId);
                } else if (!start && status == ServiceStatus.Started) {
                    ctx.getRouteController().stopRoute(routeId);
                    LOG.info("route={} stopped (not leader)", routeId);
                }
            } catch (Exception e) {
                LOG.warn("cannot {} route {}: {}", start ? "start" : "stop", routeId, e.toString());
            }
        });
    }

    /**
     * The context is stopping or has stopped. Not {@code isStopped()}: Camel also calls a context that has not
     * started yet (still initialising) stopped.
     */
    private static boolean ended(CamelContext ctx) {
        ServiceStatus s = ctx.getStatus();
        return s == ServiceStatus.Stopping || s == ServiceStatus.Stopped;
    }

    public void close() {
        switcher.shutdownNow();
    }
}
