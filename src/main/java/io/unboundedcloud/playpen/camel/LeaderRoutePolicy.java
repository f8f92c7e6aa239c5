package io.unboundedcloud.playpen.camel;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.support.RoutePolicySupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.unboundedcloud.playpen.kube.LeaderElection;

/**
 * Route policy {@code leaderOnly}: the routes that use it (declared with autoStartup: false) run only while
 * this replica holds the leader Lease, and stop when it loses it.
 */
public final class LeaderRoutePolicy extends RoutePolicySupport implements LeaderElection.Listener {
    private static final Logger LOG = LoggerFactory.getLogger(LeaderRoutePolicy.class);

    private final List<String> routeIds = new CopyOnWriteArrayList<>();
    private final ExecutorService switcher = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "leader-routes");
        t.setDaemon(true);
        return t;
    });
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

    @Override
    public void leadershipChanged(boolean isLeader) {
        leader = isLeader;
        routeIds.forEach(id -> switchTo(isLeader, id));
    }

    private void switchTo(boolean start, String routeId) {
        switcher.submit(() -> {
            CamelContext ctx = context;
            try {
                while (ctx != null && !ctx.isStarted() && !ctx.isStopping() && !ctx.isStopped()) {
                    Thread.sleep(20);
                }
                if (ctx == null || ctx.isStopping() || ctx.isStopped() || leader != start) {
                    return;
                }
                if (start) {
                    ctx.getRouteController().startRoute(routeId);
                } else {
                    ctx.getRouteController().stopRoute(routeId);
                }
                LOG.info("route={} {} (leader={})", routeId, start ? "started" : "stopped", start);
            } catch (Exception e) {
                LOG.warn("cannot {} route {}: {}", start ? "start" : "stop", routeId, e.toString());
            }
        });
    }

    public void close() {
        switcher.shutdownNow();
    }
}
