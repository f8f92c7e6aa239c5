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
 * fresh and decided again, so racing renewals end with the later expiry and none is lost. A renewal answered pins
 * its claim (settles it, in the same write when there is one), as a replay does: the claim's writer can no longer
 * take it back (see {@link ClaimResolver#pin}).
 */
public final class Renewer {
    private static final Logger LOG = LoggerFactory.getLogger(Renewer.class);
    private static final int ATTEMPTS = 5;
    public static final String NOT_FOUND = "no allocation is held with this idempotency key (released already,"
            + " expired, or never made): nothing was renewed; send your alloc request again for a new allocation";
    public static final String NOT_SYNCED = "the operator's pod cache is not synced yet; nothing was renewed, try"
            + " again";
    public static final String GONE = "the allocation held with this idempotency key has expired or is being deleted:"
            + " it cannot be renewed; once it is gone, send your alloc request again for a new allocation";

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
    private final ClaimWriter writer;
    private final int retryAfterSeconds;

    public Renewer(KubernetesClient client, PodCache pods, TtlPolicy policy, Clock clock, ApiCallCounter calls) {
        this(client, pods, policy, clock, calls, 1);
    }

    /** {@code retryAfterSeconds}: the Retry-After of its 503s (--retry-after-seconds). */
    public Renewer(KubernetesClient client, PodCache pods, TtlPolicy policy, Clock clock, ApiCallCounter calls,
            int retryAfterSeconds) {
        this(client, pods, policy, clock, calls, retryAfterSeconds, -1);
    }

    /**
     * {@code maxPerOwner}: the quota in force (--max-allocs-per-user, 0 unlimited; -1 unknown), which a settle of a
     * claim made under a lower one counts by.
     */
    public Renewer(KubernetesClient client, PodCache pods, TtlPolicy policy, Clock clock, ApiCallCounter calls,
            int retryAfterSeconds, int maxPerOwner) {
        this.client = client;
        this.pods = pods;
        this.policy = policy;
        this.clock = clock;
        this.calls = calls;
        this.retryAfterSeconds = retryAfterSeconds;
        this.writer = new ClaimWriter(client, clock, calls);
        this.resolver = new ClaimResolver(pods, writer, retryAfterSeconds, maxPerOwner);
    }

    public void addObserver(Observer o) {
        observers.add(o);
    }

    /**
     * Renews the allocation held with {@code keyHash} for {@code ttl}; 404 when there is none, 410 when it ended, 503
     * (nothing written) while the pod cache has not synced.
     */
    public Renewal renew(String keyHash, Duration ttl) {
        // the observers hear the outcome, whichever way it ends
        Renewal r;
        try {
            r = renewKey(keyHash, ttl);
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
        // before the initial list a claim the cache has not listed yet would be a 404 for a live allocation
        if (!pods.hasSynced()) {
            throw ApiException.unavailable(NOT_SYNCED, retryAfterSeconds);
        }
        long deadline = System.nanoTime() + Allocator.DECIDE_TIMEOUT_NANOS;
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            // the key's standing claim as the API server has it now, whichever replica made it
            // an expired claim is refused before it would be settled: a refused renewal writes nothing
            Optional<ClaimResolver.Standing> standing = resolver.standing(keyHash, true, deadline, pod -> {
                if (policy.isExpired(pod, clock.instant())) {
                    throw gone();
                }
            });
            if (standing.isEmpty()) {
                if (beingDeleted(keyHash)) {
                    throw gone(); // held until now, and being deleted
                }
                throw ApiException.notFound(NOT_FOUND);
            }
            // the claim is judged standing as of this very version: the answer pins it (settles it in the same
            // conditional write), so its writer can no longer take it back once a renewal was answered. Changed
            // meanwhile: judge the key again (the pod may carry another claim of the key by now)
            Optional<Renewal> r = renewOnce(standing.get().pod(), keyHash, ttl);
            if (r.isPresent()) {
                return r.get();
            }
        }
        throw keptChanging();
    }

    /**
     * A pod of the key is being deleted: as this replica's watch has it, or else as the API server has it now (a
     * consistent LIST by the key's label), since the watch may not have delivered a delete made elsewhere (the TTL on
     * the leader, a dealloc through another replica) while the pod is still there.
     */
    private boolean beingDeleted(String keyHash) {
        if (pods.claimsOf(keyHash).stream().anyMatch(ClaimLedger.Claim::terminating)) {
            return true;
        }
        return writer.claimedWith(pods.namespace(), keyHash, List.of()).stream().anyMatch(ManagedPods::isTerminating);
    }

    /**
     * One decision on {@code pod}, its key's standing claim at exactly this version as just read from the API server
     * (live, carrying the key), and at most one conditional write: the renewal, or empty when the pod changed since
     * that version (409). An unsettled claim is settled by the same write, or by a write of its own when the expiry
     * need not move.
     */
    private Optional<Renewal> renewOnce(Pod pod, String keyHash, Duration ttl) {
        Instant now = clock.instant();
        if (policy.isExpired(pod, now)) {
            throw gone();
        }
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        boolean settle = !ClaimLedger.isSettled(pod);
        if (policy.expiresAt(pod).isEmpty()) {
            // never expires (no expires-at, --playpen-ttl=0): a renewal only ever extends, so it writes nothing
            // (an expiry now + ttl would end the allocation then)
            return pinned(pod, settle).map(p -> new Renewal(p, null, null, false));
        }
        Instant next = policy.renewedExpiry(pod, now, ttl);
        Instant max = policy.maxExpiresAt(pod).orElse(null);
        if (TtlPolicy.formatClaimedAt(next).equals(TtlPolicy.formatClaimedAt(policy.expiresAt(pod).orElseThrow()))) {
            // already there (a twin request, or asking for less than is left), written or, for a claim without
            // expires-at (the Go operator's), claimed-at + --playpen-ttl: the expiry does not move, nothing to write
            return pinned(pod, settle).map(p -> new Renewal(p, next, max, false));
        }
        try {
            calls.count(KubeApiCall.PODS_PATCH);
            Pod updated = ClaimWriter.mergePatch(client, ns, name,
                    patch(pod.getMetadata().getResourceVersion(), next, settle));
            pods.observe(updated);
            LOG.info("renewed pod={}/{} key={} outcome=renewed expiresAt={}", ns, name, Hashes.keyHashPrefix(keyHash),
                    TtlPolicy.formatClaimedAt(next));
            return Optional.of(new Renewal(updated, next, max, true));
        } catch (KubernetesClientException e) {
            if (e.getCode() == 404) {
                pods.observeDeleted(name);
                throw gone();
            }
            if (e.getCode() != 409) {
                throw e;
            }
            return Optional.empty();
        }
    }

    /** The pod, settled first when {@code settle} (empty when it changed meanwhile); a 404 there is 410. */
    private Optional<Pod> pinned(Pod pod, boolean settle) {
        if (!settle) {
            return Optional.of(pod);
        }
        return resolver.settle(pod, () -> {
            pods.observeDeleted(pod.getMetadata().getName());
            throw gone();
        });
    }

    private ApiException keptChanging() {
        return ApiException.unavailable("the allocation kept changing while it was renewed; try again",
                retryAfterSeconds);
    }

    private static String patch(String resourceVersion, Instant expiresAt, boolean settle) {
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("resourceVersion", resourceVersion);
        Map<String, String> annotations = new LinkedHashMap<>();
        annotations.put(PlaypenKeys.EXPIRES_AT, TtlPolicy.formatClaimedAt(expiresAt));
        if (settle) {
            annotations.put(PlaypenKeys.CLAIM_SETTLED, "true");
        }
        metadata.put("annotations", annotations);
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
