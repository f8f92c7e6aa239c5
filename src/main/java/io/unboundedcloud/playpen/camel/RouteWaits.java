package io.unboundedcloud.playpen.camel;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.camel.Exchange;
import org.apache.camel.Route;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.kube.CapacityQueue;

/**
 * The alloc requests waiting for capacity, with the routes they are in flight in. A reload (--routes-reload)
 * replaces a route once its requests are done, or after a few seconds: a request still waiting then could no longer
 * be answered by the route taken away, and was answered 500 once a pod was claimed for it. So a reload first ends the
 * waits in the routes it replaces, each answered 503 with Retry-After by its route still running, as a client that
 * left is dropped from its wait (no pod is claimed for it; one being claimed is given back), and a request that would
 * start waiting in those routes is answered the same at once, during the reload or after it (one whose wait starts
 * late, after the reload gave up waiting for it and removed its route).
 */
final class RouteWaits {
    /** The answer of a request whose wait a reload ended (or would have). */
    static final String RELOADED = "the operator reloaded its routes (--routes-reload) while this request was waiting"
            + " for capacity, which ended its wait; send it again with the same idempotency key";

    private final int retryAfterSeconds;
    /** Each wait's way out and its routes; guarded by this. */
    private final Map<CapacityQueue.Subscription, List<Route>> waits = new IdentityHashMap<>();
    /** The routes a reload is replacing now; guarded by this. */
    private final Set<Route> replacing = Collections.newSetFromMap(new IdentityHashMap<>());

    RouteWaits(int retryAfterSeconds) {
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /** The routes the exchange is in flight in: the one it is in now and the one it came in by. */
    static List<Route> routesOf(Exchange exchange) {
        List<Route> routes = new ArrayList<>(2);
        if (exchange.getUnitOfWork() != null && exchange.getUnitOfWork().getRoute() != null) {
            routes.add(exchange.getUnitOfWork().getRoute());
        }
        String fromId = exchange.getFromRouteId();
        Route from = fromId == null ? null : exchange.getContext().getRoute(fromId);
        if (from != null && !routes.contains(from)) {
            routes.add(from);
        }
        return routes;
    }

    /**
     * Refuses (503) a request about to wait in a route a reload is replacing or has replaced, before anything is
     * claimed for it.
     */
    synchronized void admit(List<Route> routes) {
        if (replaced(routes)) {
            throw reloaded();
        }
    }

    /**
     * Keeps the wait until its answer; one whose routes a reload began to replace since {@link #admit}, or has
     * replaced already (its start took longer than the reload gives a request), ends now.
     */
    void track(CapacityQueue.Ticket ticket, List<Route> routes) {
        boolean replaced;
        synchronized (this) {
            replaced = replaced(routes);
            if (!replaced) {
                waits.put(ticket.subscription(), routes);
            }
        }
        if (replaced) {
            ticket.subscription().end(reloaded(), "reloaded");
            return;
        }
        ticket.result().whenComplete((a, e) -> {
            synchronized (this) {
                waits.remove(ticket.subscription());
            }
        });
    }

    /**
     * A reload is about to replace {@code routes}: the waits in them end now, answered by their routes still
     * running, and none starts in them until {@link #replaced}.
     */
    void replacing(Collection<Route> routes) {
        List<CapacityQueue.Subscription> ending = new ArrayList<>();
        synchronized (this) {
            replacing.addAll(routes);
            waits.forEach((wait, in) -> {
                if (in.stream().anyMatch(replacing::contains)) {
                    ending.add(wait);
                }
            });
        }
        ending.forEach(wait -> wait.end(reloaded(), "reloaded"));
    }

    /**
     * Whether a reload is replacing one of {@code routes} now, or has replaced it: it is no longer the route its
     * context runs under its id (a reload removes a route before {@link #replaced} is told). Called holding this.
     */
    private boolean replaced(List<Route> routes) {
        return routes.stream().anyMatch(r -> replacing.contains(r) || r.getCamelContext().getRoute(r.getId()) != r);
    }

    /** The reload of {@code routes} is over (done or refused). */
    synchronized void replaced(Collection<Route> routes) {
        replacing.removeAll(routes);
    }

    private ApiException reloaded() {
        return ApiException.unavailable(RELOADED, retryAfterSeconds);
    }
}
