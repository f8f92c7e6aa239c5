package io.unboundedcloud.playpen.camel;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectReference;

/**
 * One Kubernetes Event a flow wants recorded: the body of each message of the {@code kube-event} route. Either
 * {@code about} (an object, usually a pod) or {@code reference} plus {@code namespace} (the operator's pod or the
 * APIService) names what it is about. {@code once} (null for most): what a Warning recorded once reports, the same
 * for every replica (see {@link io.unboundedcloud.playpen.kube.EventRecorder#warningOnce}).
 */
public record KubeEvent(HasMetadata about, ObjectReference reference, String namespace, String type, String reason,
        String message, String once) {
    public static final String NORMAL = "Normal";
    public static final String WARNING = "Warning";

    public static KubeEvent normal(HasMetadata about, String reason, String message) {
        return new KubeEvent(about, null, null, NORMAL, reason, message, null);
    }

    public static KubeEvent warning(HasMetadata about, String reason, String message) {
        return new KubeEvent(about, null, null, WARNING, reason, message, null);
    }

    /** A Warning on {@code about} recorded once for {@code once}, whichever leader records it. */
    public static KubeEvent warningOnce(HasMetadata about, String reason, String message, String once) {
        return new KubeEvent(about, null, null, WARNING, reason, message, once);
    }

    public static KubeEvent warning(ObjectReference reference, String namespace, String reason, String message) {
        return new KubeEvent(null, reference, namespace, WARNING, reason, message, null);
    }

    /** A Warning on {@code reference} recorded once for {@code once}, whichever leader records it. */
    public static KubeEvent warningOnce(ObjectReference reference, String namespace, String reason, String message,
            String once) {
        return new KubeEvent(null, reference, namespace, WARNING, reason, message, once);
    }
}
