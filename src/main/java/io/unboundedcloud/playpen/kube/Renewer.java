package io.unboundedcloud.playpen.kube;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;

/**
 * Renews an allocation: moves its expires-at to now + ttl, capped at claimed-at + --playpen-max-lifetime
 * and never earlier than it was, with one conditional write (resourceVersion precondition). A conflict is read
 * fresh and decided again, so racing renewals end with the later expiry and none is lost.
 */
public final class Renewer {
    private static final Logger LOG = LoggerFactory.getLogger(Renewer.class);
    private static final int ATTEMPTS = 5;
    public static final String NOT_FOUND = "no allocation is held with this idempotency key";
    public static final String GONE = "the allocation held with this idempotency key has expired or is being deleted";

    /**
     * The renewed lease: the new expiry (null: the allocation never expires) and the latest one renewals may reach
     * (null: no cap).
     */
    public record Renewal(Pod pod, Instant expiresAt, Instant maxExpiresAt, boolean written) {
    }

    /**
     * Told about each renewal once, with its outcome (metrics: renewed, unchanged, not-found, gone, failed: any other
     * refusal, such as a 503 or an API server error; the Renewed event).
     */
    public interface Observer {
        void renewal(String result, Renewal renewal);
    }

    private final KubernetesClient client;
    private final PodCache pods;
    private final TtlPolicy policy;
    private final Clock clock;
    private final ApiCallCounter calls;
    private final List<Observer> observers = new CopyOnWriteArrayList<>();
    private final ClaimResolver resolver;
    private final int retryAfterSeconds;

    public Renewer(KubernetesClient client, PodCache pods, TtlPolicy policy, Clock clock, ApiCallCounter calls) {
        this(client, pods, policy, clock, calls, 1);
    }

    /** {@code retryAfterSeconds}: the Retry-After of its 503s (--retry-after-seconds). */
    public Renewer(KubernetesClient client, PodCache pods, TtlPolicy policy, Clock clock, ApiCallCounter calls,
            int retryAfterSeconds) {
        this.client = client;
        this.pods = pods;
        this.policy = policy;
        this.clock = clock;
        this.calls = calls;
        this.retryAfterSeconds = retryAfterSeconds;
        this.resolver = new ClaimResolver(pods, new ClaimWriter(client, clock, calls), retryAfterSeconds);
    }

    public void addObserver(Observer o) {
        observers.add(o);
    }

    /** Renews the allocation held with {@code keyHash} for {@code ttl}; 404 when there is none, 410 when it ended. */
    public Renewal renew(String keyHash, Duration ttl) {
        return told(() -> renewKey(keyHash, ttl));
    }

    /** Renews starting from {@code pod} as last read (possibly stale by now: the write is conditional). */
    Renewal renew(Pod cached, String keyHash, Duration ttl) {
        return told(() -> renewPod(cached, keyHash, ttl));
    }

    /** Runs one renewal and tells the observers its outcome, whichever way it ends. */
    private Renewal told(java.util.function.Supplier<Renewal> renewal) {
        Renewal r;
        try {
            r = renewal.get();
        } catch (RuntimeException e) {
            notify(refused(e), null);
            throw e;
        }
        notify(r.written() ? "renewed" : "unchanged", r);
        return r;
    }

    private static String refused(RuntimeException e) {
        if (e instanceof ApiException a && a.code() == 404) {
            return "not-found";
        }
        if (e instanceof ApiException a && a.code() == 410) {
            return "gone";
        }
        return "failed";
    }

    private Renewal renewKey(String keyHash, Duration ttl) {
        // the key's standing claim as the API server has it now, whichever replica made it
        Optional<ClaimResolver.Standing> standing = resolver.standing(keyHash, true,
                System.nanoTime() + Allocator.DECIDE_TIMEOUT_NANOS);
        if (standing.isEmpty()) {
            if (pods.claimsOf(keyHash).stream().anyMatch(ClaimLedger.Claim::terminating)) {
                throw gone(); // held until now, and being deleted
            }
            throw ApiException.notFound(NOT_FOUND);
        }
        return renewPod(standing.get().pod(), keyHash, ttl);
    }

    private Renewal renewPod(Pod cached, String keyHash, Duration ttl) {
        Pod pod = cached;
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            Instant now = clock.instant();
            if (pod == null || !keyHash.equals(ManagedPods.keyHash(pod)) || ManagedPods.isTerminating(pod)
                    || policy.isExpired(pod, now)) {
                throw gone();
            }
            if (policy.expiresAt(pod).isEmpty()) {
                // never expires (no expires-at, --playpen-ttl=0): a renewal only ever extends, so it writes nothing
                // (an expiry now + ttl would end the allocation then)
                return new Renewal(pod, null, null, false);
            }
            Instant next = policy.renewedExpiry(pod, now, ttl);
            Instant max = policy.maxExpiresAt(pod).orElse(null);
            String written = ManagedPods.annotations(pod).get(PlaypenKeys.EXPIRES_AT);
            if (TtlPolicy.formatClaimedAt(next).equals(written)) {
                // already there (a twin request, or asking for less than is left): nothing to write
                return new Renewal(pod, next, max, false);
            }
            try {
                calls.count(KubeApiCall.PODS_PATCH);
                Pod updated = ClaimWriter.mergePatch(client, ns, name,
                        patch(pod.getMetadata().getResourceVersion(), next));
                pods.observe(updated);
                LOG.info("renewed pod={}/{} key={} outcome=renewed expiresAt={}", ns, name, Hashes.keyHashPrefix(keyHash),
                        TtlPolicy.formatClaimedAt(next));
                return new Renewal(updated, next, max, true);
            } catch (KubernetesClientException e) {
                if (e.getCode() == 404) {
                    pods.observeDeleted(name);
                    throw gone();
                }
                if (e.getCode() != 409) {
                    throw e;
                }
            }
            // someone wrote the pod meanwhile (another renewal, the kubelet, a delete): decide again on its state
            calls.count(KubeApiCall.PODS_GET);
            pod = client.pods().inNamespace(ns).withName(name).get();
            if (pod != null) {
                pods.observe(pod);
            }
        }
        throw ApiException.unavailable("the allocation kept changing while it was renewed; try again",
                retryAfterSeconds);
    }

    private static String patch(String resourceVersion, Instant expiresAt) {
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("resourceVersion", resourceVersion);
        metadata.put("annotations", Map.of(PlaypenKeys.EXPIRES_AT, TtlPolicy.formatClaimedAt(expiresAt)));
        return Json.write(Map.of("metadata", metadata));
    }

    private static ApiException gone() {
        return new ApiException(410, "Gone", GONE);
    }

    private void notify(String result, Renewal r) {
        for (Observer o : observers) {
            o.renewal(result, r);
        }
    }
}
