package io.unboundedcloud.playpen.camel;

import java.time.Duration;

import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.ServiceStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.kube.TtlExpirer;
import io.unboundedcloud.playpen.model.PoolPlan;

/**
 * Hands what the background beans did to their routes, so the side effects are route steps an operator can see and
 * re-wire: an expired claim to {@code direct:ttl-expired} (ttl-expiry.camel.yaml), a pod created for the pool to
 * {@code direct:pool-created}, a pool pod deleted to {@code direct:pool-deleted}, an unhealthy allocated pod to
 * {@code direct:pool-unhealthy-allocated}, a pool backing off or recovering to {@code direct:pool-backoff} and a full
 * hostPort range to {@code direct:pool-exhausted}, a pod create the API server refused to
 * {@code direct:pool-create-refused} (pool-events.camel.yaml), a front-proxy trust bundle found invalid to
 * {@code direct:trust-bundle-invalid} (trust-refresh.camel.yaml); and refill passes to
 * {@code direct:pool-pass} (pool-reconcile.camel.yaml).
 * Sent on the bean's own thread, like the observer calls it replaces. While Camel is not running (startup,
 * shutdown) or a route is missing (a reload replacing it), the {@code fallback} records the Event directly, so none is
 * lost that was not lost before, and an expired claim's audit line goes to the audit route, or straight to the audit
 * log while that does not run either.
 */
final class FlowBridge implements PoolReconciler.Observer, TtlExpirer.Observer {
    private static final Logger LOG = LoggerFactory.getLogger(FlowBridge.class);
    private static final Logger AUDIT_LOG = LoggerFactory.getLogger("playpen.audit");
    static final String TTL_EXPIRED = "ttl-expired";
    static final String POOL_CREATED = "pool-created";
    static final String POOL_EXHAUSTED = "pool-exhausted";
    static final String POOL_DELETED = "pool-deleted";
    static final String POOL_UNHEALTHY_ALLOCATED = "pool-unhealthy-allocated";
    static final String POOL_BACKOFF = "pool-backoff";
    static final String POOL_CREATE_REFUSED = "pool-create-refused";
    static final String POOL_PASS = "pool-pass";
    static final String TRUST_BUNDLE_INVALID = "trust-bundle-invalid";

    static final String AUDIT = "audit";

    private final ObservedEvents fallback;
    private final AuditLog audit;
    private volatile CamelContext camel;
    private volatile ProducerTemplate producer;

    FlowBridge(ObservedEvents fallback, AuditLog audit) {
        this.fallback = fallback;
        this.audit = audit;
    }

    void start(CamelContext camel) {
        this.producer = camel.createProducerTemplate();
        this.camel = camel;
    }

    @Override
    public void expired(Pod pod, Duration lateness) {
        if (!send(TTL_EXPIRED, pod)) {
            fallback.expired(pod, lateness);
            auditExpired(pod);
        }
    }

    /**
     * The audit line ttl-expired would have written: through the audit route while it runs (its steps, a webhook
     * added there among them, see it as every other line), else straight to the audit log.
     */
    private void auditExpired(Pod pod) {
        ProducerTemplate p = producer;
        if (started(AUDIT)) {
            org.apache.camel.Exchange sent = p.send("direct:" + AUDIT + "?block=false", e -> {
                e.setProperty(AuditLog.VERB, AuditLog.EXPIRE);
                e.setProperty(AuditLog.OUTCOME, AuditLog.EXPIRED);
                e.setProperty(AuditLog.ALLOCATION_ID, pod.getMetadata().getName());
                e.setProperty(AuditLog.KEY_HASH_PREFIX, audit.keyHashPrefix(pod));
            });
            if (sent.getException() == null) {
                return;
            }
            LOG.warn("route {} failed: {}", AUDIT, sent.getException().toString());
        }
        AUDIT_LOG.info(audit.expiredLine(pod));
    }

    @Override
    public void created(Pod pod) {
        if (!send(POOL_CREATED, pod)) {
            fallback.created(pod);
        }
    }

    @Override
    public void exhausted(PoolPlan.Exhaustion exhaustion) {
        if (!send(POOL_EXHAUSTED, exhaustion)) {
            fallback.exhausted(exhaustion);
        }
    }

    @Override
    public void createRefused(PoolReconciler.CreateRefusal refusal) {
        if (!send(POOL_CREATE_REFUSED, refusal)) {
            fallback.createRefused(refusal);
        }
    }

    @Override
    public void pass(PoolReconciler.Result result, long nanos, boolean failed) {
    }

    @Override
    public void deleted(PoolPlan.Deletion deletion) {
        if (!send(POOL_DELETED, deletion)) {
            fallback.deleted(deletion);
        }
    }

    @Override
    public void unhealthyAllocated(PoolPlan.Unhealthy report) {
        if (!send(POOL_UNHEALTHY_ALLOCATED, report)) {
            fallback.unhealthyAllocated(report);
        }
    }

    @Override
    public void backoffChanged(io.unboundedcloud.playpen.kube.PoolSignals.BackoffChange change) {
        if (!send(POOL_BACKOFF, change)) {
            fallback.backoffChanged(change);
        }
    }

    /** The front-proxy trust bundle found invalid (by its watch or by trust-refresh): its Warning. */
    void trustBundleInvalid(String reason) {
        if (!send(TRUST_BUNDLE_INVALID, reason)) {
            fallback.trustBundleInvalid(reason);
        }
    }

    /**
     * A refill pass through the pool-pass route (its steps are what an operator sees and re-wires), or straight
     * through the reconciler while Camel is not running.
     */
    void poolPass(PoolReconciler pool) {
        if (!started(POOL_PASS)) {
            pool.reconcile();
            return;
        }
        producer.sendBody("direct:" + POOL_PASS, null);
    }

    /** Whether Camel runs, and the route {@code routeId} in it. */
    private boolean started(String routeId) {
        CamelContext c = camel;
        return c != null && producer != null && c.isStarted()
                && c.getRouteController().getRouteStatus(routeId) == ServiceStatus.Started;
    }

    /** True when the route took it; never waits for a missing consumer (block=false). */
    private boolean send(String routeId, Object body) {
        ProducerTemplate p = producer;
        if (!started(routeId)) {
            return false;
        }
        try {
            p.sendBody("direct:" + routeId + "?block=false", body);
            return true;
        } catch (RuntimeException e) {
            if (e.getCause() instanceof org.apache.camel.component.direct.DirectConsumerNotAvailableException) {
                return false;
            }
            // the route ran and one of its steps failed (e.g. a re-wired endpoint): its Event step may have run,
            // so do not record it a second time
            LOG.warn("route {} failed: {}", routeId, e.toString());
            return true;
        }
    }
}
