package io.unboundedcloud.playpen.camel;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.camel.Body;

import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.Allocator;
import io.unboundedcloud.playpen.kube.EventRecorder;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.kube.TtlExpirer;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.PoolPlan;

/**
 * The Kubernetes Events of the flows (bean {@code kubeEvents}): builds them (Allocated, Deallocated, Expired,
 * Renewed, Created, pool deletions (Stale, Surplus, or the problem of an unhealthy pod), Unhealthy&lt;problem&gt;
 * on allocated pods and BackOffEnded on pods; BackOff, CreateRefused, HostPortRangeExhausted and TrustBundleInvalid on the
 * operator's pod or the APIService) and records them through {@link EventRecorder} (queued, never blocking the
 * caller; 403 suspends recording). The routes call {@link #record} from the {@code kube-event} route; as an
 * observer it is the fallback the {@link FlowBridge} uses while Camel is not running.
 */
public final class ObservedEvents implements PoolReconciler.Observer, TtlExpirer.Observer {
    private final EventRecorder events;
    private final ObjectReference operatorRef;
    private final String operatorNamespace;
    /** Where Events about the APIService go (it has no namespace of its own). */
    static final String APISERVICE_EVENT_NAMESPACE = "default";

    ObservedEvents(EventRecorder events, OperatorConfig config, Map<String, String> env) {
        this.events = events;
        String podName = env.get("POD_NAME");
        String podNamespace = env.getOrDefault("POD_NAMESPACE", config.namespace());
        // kubectl describe pod shows only the Events whose involvedObject.uid is the pod's
        String podUid = env.get("POD_UID");
        // an Event lives in its object's namespace; the API server takes one about a cluster-scoped object (the
        // APIService) only in "default" (or none), as client-go records it, and refuses it in any other
        this.operatorNamespace = podName != null ? podNamespace : APISERVICE_EVENT_NAMESPACE;
        this.operatorRef = podName != null
                ? new ObjectReferenceBuilder().withApiVersion("v1").withKind("Pod").withNamespace(podNamespace)
                        .withName(podName).withUid(podUid == null || podUid.isEmpty() ? null : podUid).build()
                : new ObjectReferenceBuilder().withApiVersion("apiregistration.k8s.io/v1").withKind("APIService")
                        .withName(KubeApiCall.API_SERVICE_NAME).build();
    }

    /** The step of the {@code kube-event} route: hands one event to the recorder. */
    public void record(@Body KubeEvent e) {
        if (e == null) {
            return;
        }
        if (e.about() != null) {
            if (KubeEvent.WARNING.equals(e.type()) && e.once() != null) {
                events.warningOnce(e.about(), e.reason(), e.message(), e.once());
            } else if (KubeEvent.WARNING.equals(e.type())) {
                events.warning(e.about(), e.reason(), e.message());
            } else {
                events.normal(e.about(), e.reason(), e.message());
            }
        } else if (e.once() != null) {
            events.warningOnce(e.reference(), e.namespace(), e.reason(), e.message(), e.once());
        } else {
            events.warning(e.reference(), e.namespace(), e.reason(), e.message());
        }
    }

    public List<KubeEvent> allocatedEvents(Allocator.Allocation a, AllocCommand cmd) {
        return List.of(KubeEvent.normal(a.pod(), "Allocated", "allocated as " + cmd.resourceType().wire()
                + " (key hash " + cmd.keyHashPrefix() + ") on " + a.externalIp()));
    }

    public List<KubeEvent> deallocatedEvents(List<Pod> pods) {
        return pods.stream().map(p -> KubeEvent.normal(p, "Deallocated",
                "deallocated; the pod is deleted and the pool refills")).toList();
    }

    public List<KubeEvent> expiredEvents(@Body Pod pod) {
        return List.of(KubeEvent.normal(pod, "Expired", "allocation TTL expired; the pod is deleted"));
    }

    public List<KubeEvent> createdEvents(@Body Pod pod) {
        return List.of(KubeEvent.normal(pod, "Created", "created for the warm pool"));
    }

    /** An idle pod the pool deleted: Normal for stale and surplus pods, Warning for unhealthy ones (reason: the problem). */
    public List<KubeEvent> deletedEvents(@Body PoolPlan.Deletion d) {
        return List.of(d.why() == PoolPlan.Why.UNHEALTHY
                ? KubeEvent.warning(d.pod(), d.reason(), d.message())
                : KubeEvent.normal(d.pod(), d.reason(), d.message()));
    }

    /**
     * An allocated pod that is unhealthy: a Warning on it (the pool leaves it to its allocation), recorded once for
     * the pod, its problem and when that began, by whichever leader finds it first.
     */
    public List<KubeEvent> unhealthyAllocatedEvents(@Body PoolPlan.Unhealthy u) {
        return List.of(KubeEvent.warningOnce(u.pod(), "Unhealthy" + u.problem().reason(), u.message(), u.key()));
    }

    /**
     * A pool backing off (Warning BackOff on the operator) or recovering (Normal BackOffEnded on the ready pod). A
     * BackOff is recorded once for the failed pod: a replica that became leader before its watch saw that pod gone
     * learns the same failure, and finds the Event the leader that deleted the pod recorded.
     */
    public List<KubeEvent> backoffEvents(@Body io.unboundedcloud.playpen.kube.PoolSignals.BackoffChange c) {
        if (c.recovered()) {
            return List.of(KubeEvent.normal(c.pod(), "BackOffEnded", c.message()));
        }
        String uid = c.pod() == null || c.pod().getMetadata() == null ? null : c.pod().getMetadata().getUid();
        return List.of(uid == null ? KubeEvent.warning(operatorRef, operatorNamespace, "BackOff", c.message())
                : KubeEvent.warningOnce(operatorRef, operatorNamespace, "BackOff", c.message(), uid));
    }

    public List<KubeEvent> exhaustedEvents(@Body PoolPlan.Exhaustion x) {
        return List.of(KubeEvent.warning(operatorRef, operatorNamespace, "HostPortRangeExhausted", x.message()));
    }

    @Override
    public void expired(Pod pod, Duration lateness) {
        expiredEvents(pod).forEach(this::record);
    }

    /** The Renewed Event of a renewal that moved the expiry (none when nothing was written). */
    public List<KubeEvent> renewedEvents(@Body io.unboundedcloud.playpen.kube.Renewer.Renewal r) {
        if (r == null || !r.written()) {
            return List.of();
        }
        return List.of(KubeEvent.normal(r.pod(), "Renewed", "allocation renewed; it now expires at "
                + io.unboundedcloud.playpen.model.TtlPolicy.formatClaimedAt(r.expiresAt())));
    }

    @Override
    public void created(Pod pod) {
        createdEvents(pod).forEach(this::record);
    }

    /** A pod create the API server refused: a Warning CreateRefused on the operator (once per refusal). */
    public List<KubeEvent> createRefusedEvents(@Body PoolReconciler.CreateRefusal r) {
        return List.of(KubeEvent.warning(operatorRef, operatorNamespace, "CreateRefused", r.message()));
    }

    @Override
    public void createRefused(PoolReconciler.CreateRefusal r) {
        createRefusedEvents(r).forEach(this::record);
    }

    @Override
    public void exhausted(PoolPlan.Exhaustion x) {
        exhaustedEvents(x).forEach(this::record);
    }

    @Override
    public void deleted(PoolPlan.Deletion d) {
        deletedEvents(d).forEach(this::record);
    }

    @Override
    public void unhealthyAllocated(PoolPlan.Unhealthy u) {
        unhealthyAllocatedEvents(u).forEach(this::record);
    }

    @Override
    public void backoffChanged(io.unboundedcloud.playpen.kube.PoolSignals.BackoffChange c) {
        backoffEvents(c).forEach(this::record);
    }

    @Override
    public void pass(PoolReconciler.Result result, long nanos, boolean failed) {
    }

    /** The front-proxy trust bundle found invalid: a Warning TrustBundleInvalid on the operator. */
    public List<KubeEvent> trustBundleInvalidEvents(@Body String reason) {
        return List.of(KubeEvent.warning(operatorRef, operatorNamespace, "TrustBundleInvalid",
                "front-proxy trust bundle is invalid: " + reason + "; /apis requests are refused"));
    }

    void trustBundleInvalid(String reason) {
        trustBundleInvalidEvents(reason).forEach(this::record);
    }
}
