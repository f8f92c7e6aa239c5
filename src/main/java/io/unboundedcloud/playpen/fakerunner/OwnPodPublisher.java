package io.unboundedcloud.playpen.fakerunner;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.utils.Serialization;

/**
 * Publishes annotations on the pod this process runs in, the way the runner image does: a GET of its own pod, then
 * one JSON merge PATCH carrying only the annotations that differ (nothing when they are all there already, as after a
 * container restart with the same key). That is an UPDATE of the token's own pod that changes nothing but the pod
 * kind's own annotations, the only write the runner admission policy lets through.
 */
final class OwnPodPublisher {
    private static final Logger LOG = LoggerFactory.getLogger(OwnPodPublisher.class);
    private static final Duration FIRST_BACKOFF = Duration.ofMillis(500);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(10);

    /** The API server refused the write for good (policy, RBAC, the pod is gone): retrying cannot help. */
    static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** What one attempt did. */
    enum Outcome { PATCHED, ALREADY_PUBLISHED }

    private final KubernetesClient client;
    private final String namespace;
    private final String podName;

    OwnPodPublisher(KubernetesClient client, String namespace, String podName) {
        this.client = client;
        this.namespace = Objects.requireNonNull(namespace, "namespace");
        this.podName = Objects.requireNonNull(podName, "podName");
    }

    /** Publishes {@code wanted}, retrying API errors that can pass (unreachable, 5xx, 409, 429) with a capped backoff. */
    Outcome publish(Map<String, String> wanted) throws Refused, InterruptedException {
        Duration backoff = FIRST_BACKOFF;
        for (int attempt = 1; ; attempt++) {
            try {
                return publishOnce(wanted);
            } catch (KubernetesClientException e) {
                if (permanent(e.getCode())) {
                    throw new Refused("the API server refused to publish " + wanted.keySet() + " on pod " + namespace
                            + "/" + podName + " (HTTP " + e.getCode() + "): " + statusMessage(e), e);
                }
                LOG.info("publishing {} on pod {}/{} failed (attempt {}, HTTP {}): {}; retrying in {} ms",
                        wanted.keySet(), namespace, podName, attempt, e.getCode(), statusMessage(e), backoff.toMillis());
            }
            Thread.sleep(backoff.toMillis());
            backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
        }
    }

    private Outcome publishOnce(Map<String, String> wanted) {
        Pod pod = client.pods().inNamespace(namespace).withName(podName).get();
        if (pod == null) {
            throw new KubernetesClientException("pod " + namespace + "/" + podName + " not found", 404, null);
        }
        Map<String, String> changes = changes(pod.getMetadata().getAnnotations(), wanted);
        if (changes.isEmpty()) {
            return Outcome.ALREADY_PUBLISHED;
        }
        // resource(pod): withName(...).patch(...) would GET the pod once more before patching
        client.pods().inNamespace(namespace).resource(pod).patch(PatchContext.of(PatchType.JSON_MERGE), mergePatch(changes));
        return Outcome.PATCHED;
    }

    /** The entries of {@code wanted} that {@code current} lacks or holds with another value. */
    static Map<String, String> changes(Map<String, String> current, Map<String, String> wanted) {
        Map<String, String> out = new LinkedHashMap<>();
        wanted.forEach((k, v) -> {
            if (current == null || !v.equals(current.get(k))) {
                out.put(k, v);
            }
        });
        return out;
    }

    /** The JSON merge patch that sets these annotations and nothing else. */
    static String mergePatch(Map<String, String> annotations) {
        return Serialization.asJson(Map.of("metadata", Map.of("annotations", annotations)));
    }

    /** 400, 401, 403 (RBAC or the admission policy), 404 (pod gone), 422: the same request would fail again. */
    static boolean permanent(int code) {
        return code == 400 || code == 401 || code == 403 || code == 404 || code == 422;
    }

    private static String statusMessage(KubernetesClientException e) {
        return e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage()
                : String.valueOf(e.getMessage());
    }
}
