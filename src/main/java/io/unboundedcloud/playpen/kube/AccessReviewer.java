package io.unboundedcloud.playpen.kube;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.authorization.v1.ResourceAttributesBuilder;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * Authorizes alloc and dealloc with a SubjectAccessReview for create on allocs, and the allocs reads and
 * delete (ours) with their own verb, plus the same verb on {@code allocs/all} for everyone's allocations. Decisions
 * are cached per user, verb and subresource briefly: allowed for {@code allowedTtl}, denied for
 * {@code deniedTtl}; a zero TTL disables caching.
 */
public final class AccessReviewer {
    private static final Logger LOG = LoggerFactory.getLogger(AccessReviewer.class);

    private record Decision(boolean allowed, String reason, long untilNanos) {
    }

    /** What a decision is about: the user, the verb, the resource and its subresource ("" = the resource itself). */
    private record Question(Identity who, String verb, String resource, String subresource) {
        Question(Identity who, String verb, String subresource) {
            this(who, verb, "allocs", subresource);
        }
    }

    /** The read-only pools resource (kubectl get pools). */
    public static final String POOLS = "pools";

    /** The subresource whose verbs grant the same verb on every user's allocations (playpen-admin). */
    public static final String ALL_USERS = "all";

    private final KubernetesClient client;
    private final long allowedNanos;
    private final long deniedNanos;
    private final int retryAfterSeconds;
    private final ApiCallCounter calls;
    private final Map<Question, Decision> cache = new ConcurrentHashMap<>();
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final Map<Question, CompletableFuture<Decision>> reviewing = new ConcurrentHashMap<>();

    public AccessReviewer(KubernetesClient client, Duration allowedTtl, Duration deniedTtl, int retryAfterSeconds,
            ApiCallCounter calls) {
        this.client = client;
        this.allowedNanos = allowedTtl.toNanos();
        this.deniedNanos = deniedTtl.toNanos();
        this.retryAfterSeconds = retryAfterSeconds;
        this.calls = calls;
    }

    /** Throws 403 when the user may not create allocs. */
    public void authorize(Identity who) {
        authorize(who, "create");
    }

    /** Throws 403 when the user may not {@code verb} allocs (their own; the owner check is the caller's). */
    public void authorize(Identity who, String verb) {
        Decision d = decide(new Question(who, verb, ""));
        if (!d.allowed()) {
            String why = d.reason() == null || d.reason().isBlank() ? "" : ": " + d.reason();
            throw ApiException.forbidden("allocs." + PlaypenKeys.GROUP + " is forbidden: User \"" + who.user()
                    + "\" cannot " + verb + " resource \"allocs\" in API group \"" + PlaypenKeys.GROUP + "\"" + why);
        }
    }

    /** Throws 403 when the user may not {@code verb} the resource {@code resource} of the group (pools). */
    public void authorize(Identity who, String resource, String verb) {
        Decision d = decide(new Question(who, verb, resource, ""));
        if (!d.allowed()) {
            String why = d.reason() == null || d.reason().isBlank() ? "" : ": " + d.reason();
            throw ApiException.forbidden(resource + "." + PlaypenKeys.GROUP + " is forbidden: User \"" + who.user()
                    + "\" cannot " + verb + " resource \"" + resource + "\" in API group \"" + PlaypenKeys.GROUP + "\""
                    + why);
        }
    }

    /**
     * True when RBAC grants {@code verb} on {@code allocs/all}: the caller acts on every user's allocations, not
     * only their own. A failed review counts as no (the caller then sees only their own).
     */
    public boolean allowedForAllUsers(Identity who, String verb) {
        try {
            return decide(new Question(who, verb, ALL_USERS)).allowed();
        } catch (ApiException e) {
            return false;
        }
    }

    private Decision decide(Question q) {
        long now = System.nanoTime();
        Decision d = cache.get(q);
        if (d != null && now - d.untilNanos() < 0) {
            hits.increment();
            return d;
        }
        misses.increment();
        // single flight per question: when a decision expires under load, the requests that find it gone share
        // one SubjectAccessReview instead of each sending their own (64 concurrent clients sent 38 at once)
        CompletableFuture<Decision> mine = new CompletableFuture<>();
        CompletableFuture<Decision> running = reviewing.putIfAbsent(q, mine);
        if (running != null) {
            try {
                return running.join();
            } catch (CompletionException e) {
                if (e.getCause() instanceof RuntimeException re) {
                    throw re;
                }
                throw e;
            }
        }
        try {
            d = review(q, now);
            long ttl = d.allowed() ? allowedNanos : deniedNanos;
            if (ttl > 0) {
                if (cache.size() > 10_000) {
                    cache.clear();
                }
                cache.put(q, new Decision(d.allowed(), d.reason(), now + ttl));
            }
            mine.complete(d);
            return d;
        } catch (RuntimeException e) {
            mine.completeExceptionally(e);
            throw e;
        } finally {
            reviewing.remove(q, mine);
        }
    }

    private Decision review(Question q, long now) {
        Identity who = q.who();
        SubjectAccessReview sar = new SubjectAccessReviewBuilder()
                .withNewSpec()
                .withUser(who.user())
                .withUid(who.uid().isEmpty() ? null : who.uid())
                .withGroups(who.groups())
                .withExtra(who.extra().isEmpty() ? null : new TreeMap<String, List<String>>(who.extra()))
                .withResourceAttributes(new ResourceAttributesBuilder()
                        .withGroup(PlaypenKeys.GROUP).withVersion(PlaypenKeys.VERSION)
                        .withResource(q.resource()).withSubresource(q.subresource().isEmpty() ? null : q.subresource())
                        .withVerb(q.verb()).build())
                .endSpec()
                .build();
        SubjectAccessReview answer;
        try {
            calls.count(KubeApiCall.SUBJECT_ACCESS_REVIEWS_CREATE);
            answer = client.authorization().v1().subjectAccessReview().create(sar);
        } catch (RuntimeException e) {
            LOG.warn("SubjectAccessReview failed user={} error={}", io.unboundedcloud.playpen.api.LogText.quote(who.user()), e.toString());
            throw ApiException.unavailable("authorization check failed: SubjectAccessReview could not be created",
                    retryAfterSeconds);
        }
        var status = answer == null ? null : answer.getStatus();
        boolean allowed = status != null && Boolean.TRUE.equals(status.getAllowed()) && !Boolean.TRUE.equals(status.getDenied());
        return new Decision(allowed, status == null ? null : status.getReason(), now);
    }

    public long cacheHits() {
        return hits.sum();
    }

    public long cacheMisses() {
        return misses.sum();
    }
}
