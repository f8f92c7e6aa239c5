package io.unboundedcloud.playpen.camel;

import java.time.Duration;
import java.util.Map;

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
 * Turns domain outcomes into Kubernetes Events (never blocking the caller): Allocated, Deallocated, Expired
 * and Created on pods; HostPortRangeExhausted and TrustBundleInvalid on the operator's pod or the APIService.
 */
final class ObservedEvents implements Allocator.Observer, PoolReconciler.Observer, TtlExpirer.Observer,
        io.unboundedcloud.playpen.kube.Renewer.Observer {
    private final EventRecorder events;
    private final ObjectReference operatorRef;
    private final String operatorNamespace;

    ObservedEvents(EventRecorder events, OperatorConfig config, Map<String, String> env) {
        this.events = events;
        String podName = env.get("POD_NAME");
        this.operatorNamespace = env.getOrDefault("POD_NAMESPACE", config.namespace());
        this.operatorRef = podName != null
                ? new ObjectReferenceBuilder().withApiVersion("v1").withKind("Pod").withNamespace(operatorNamespace)
                        .withName(podName).build()
                : new ObjectReferenceBuilder().withApiVersion("apiregistration.k8s.io/v1").withKind("APIService")
                        .withName(KubeApiCall.API_SERVICE_NAME).build();
    }

    @Override
    public void allocated(Allocator.Allocation a, AllocCommand cmd) {
        events.normal(a.pod(), "Allocated", "allocated as " + cmd.resourceType().wire() + " (key hash "
                + cmd.keyHashPrefix() + ") on " + a.externalIp());
    }

    @Override
    public void deallocated(Pod pod) {
        events.normal(pod, "Deallocated", "deallocated; the pod is deleted and the pool refills");
    }

    @Override
    public void expired(Pod pod, Duration lateness) {
        events.normal(pod, "Expired", "allocation TTL expired; the pod is deleted");
    }

    @Override
    public void renewal(String result, io.unboundedcloud.playpen.kube.Renewer.Renewal r) {
        if (r != null && r.written()) {
            events.normal(r.pod(), "Renewed", "allocation renewed; it now expires at "
                    + io.unboundedcloud.playpen.model.TtlPolicy.formatClaimedAt(r.expiresAt()));
        }
    }

    @Override
    public void created(Pod pod) {
        events.normal(pod, "Created", "created for the warm pool");
    }

    @Override
    public void exhausted(PoolPlan.Exhaustion x) {
        events.warning(operatorRef, operatorNamespace, "HostPortRangeExhausted", x.message());
    }

    @Override
    public void pass(PoolReconciler.Result result, long nanos, boolean failed) {
    }

    void trustBundleInvalid(String reason) {
        events.warning(operatorRef, operatorNamespace, "TrustBundleInvalid",
                "front-proxy trust bundle is invalid: " + reason + "; /apis requests are refused");
    }
}
