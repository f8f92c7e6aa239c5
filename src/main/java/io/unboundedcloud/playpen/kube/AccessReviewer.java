package io.unboundedcloud.playpen.kube;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

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
 * delete (ours) with their own verb, plus the same verb on {@code allocs/all} for everyone's allocations. A get or
 * delete of one object names it in the review, as kube-apiserver does, so a Role limited by {@code resourceNames}
 * grants exactly those objects. Decisions are cached per user, verb, subresource and name briefly: allowed for
 * {@code allowedTtl}, denied for {@code deniedTtl}; a zero TTL disables caching.
 */
public final class AccessReviewer {
    private static final Logger LOG = LoggerFactory.getLogger(AccessReviewer.class);

    private record Decision(boolean allowed, String reason, long untilNanos) {
    }

    /**
     * What a decision is about: the user, the verb, the resource, its subresource ("" = the resource itself) and the
     * one object's name (null = no name: a list or a create).
     */
    private record Question(Identity who, String verb, String resource, String subresource, String name) {
        Question(Identity who, String verb, String subresource, String name) {
            this(who, verb, ALLOCS, subresource, name);
        }
    }

    /** The decisions kept at most; past them the expired ones are dropped, or all when most are still live. */
    static final int MAX_DECISIONS = 10_000;

    /**
     * The longest object name a decision is kept for: a Kubernetes object name has at most 253 characters, so a
     * longer one names nothing there is, and its decisions would only fill the memory kept.
     */
    static final int MAX_KEPT_NAME = 253;

    /** The allocs resource. */
    public static final String ALLOCS = "allocs";
    public static final String DEALLOCS = "deallocs";

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
    /**
     * The callers of the decisions kept, one copy each: every request parses its own copy of the caller's identity,
     * and a caller with a long list of groups asking about many names must not leave a copy per decision.
     */
    private final Map<Identity, Identity> callers = new ConcurrentHashMap<>();
    private final LongSupplier nanoTime;
    private final int maxDecisions;
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final Map<Question, CompletableFuture<Decision>> reviewing = new ConcurrentHashMap<>();

    public AccessReviewer(KubernetesClient client, Duration allowedTtl, Duration deniedTtl, int retryAfterSeconds,
            ApiCallCounter calls) {
        this(client, allowedTtl, deniedTtl, retryAfterSeconds, calls, System::nanoTime, MAX_DECISIONS);
    }

    /** {@code nanoTime} times the decisions; at most {@code maxDecisions} are kept (tests make both small). */
    AccessReviewer(KubernetesClient client, Duration allowedTtl, Duration deniedTtl, int retryAfterSeconds,
            ApiCallCounter calls, LongSupplier nanoTime, int maxDecisions) {
        this.nanoTime = nanoTime;
        this.maxDecisions = maxDecisions;
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
        authorize(who, ALLOCS, verb, null);
    }

    /** Throws 403 when the user may not {@code verb} the resource {@code resource} of the group (pools). */
    public void authorize(Identity who, String resource, String verb) {
        authorize(who, resource, verb, null);
    }

    /**
     * Throws 403 when the user may not {@code verb} the object {@code name} (null: no one object, a list or a create)
     * of {@code resource} (allocs: their own; the owner check is the caller's).
     */
    public void authorize(Identity who, String resource, String verb, String name) {
        Decision d = decide(new Question(who, verb, resource, "", name));
        if (!d.allowed()) {
            String why = d.reason() == null || d.reason().isBlank() ? "" : ": " + d.reason();
            throw ApiException.forbidden(resource + "." + PlaypenKeys.GROUP + named(name) + " is forbidden: User \""
                    + who.user()
                    + "\" cannot " + verb + " resource \"" + resource + "\" in API group \"" + PlaypenKeys.GROUP + "\""
                    + why).withDetails(name == null || name.isEmpty() ? null : name, PlaypenKeys.GROUP, resource);
        }
    }

    /**
     * True when RBAC grants {@code verb} on {@code allocs/all}: the caller acts on every user's allocations, not
     * only their own. A review that fails is a 503 like any other (answering with only the caller's own would
     * tell an administrator that someone else's allocation is not there).
     */
    public boolean allowedForAllUsers(Identity who, String verb) {
        return allowedForAllUsers(who, verb, null);
    }

    /** As {@link #allowedForAllUsers(Identity, String)} for the one object {@code name} (null: none). */
    public boolean allowedForAllUsers(Identity who, String verb, String name) {
        return decide(new Question(who, verb, ALL_USERS, name)).allowed();
    }

    /** kube-apiserver's words: the object's name, quoted, after the resource when the request named one. */
    private static String named(String name) {
        return name == null || name.isEmpty() ? "" : " " + io.unboundedcloud.playpen.model.AllocViews.quoteShort(name);
    }

    private Decision decide(Question q) {
        long now = nanoTime.getAsLong();
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
            if (ttl > 0 && (q.name() == null || q.name().length() <= MAX_KEPT_NAME)) {
                keep(q, new Decision(d.allowed(), d.reason(), now + ttl), now);
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

    /**
     * Keeps a decision under its question, asked by the one copy of its caller kept. Past {@link #maxDecisions} the
     * expired decisions are dropped first, and all of them when more than three quarters are still live (so that
     * a full cache of live decisions is not walked on every new one).
     */
    private void keep(Question q, Decision d, long now) {
        if (cache.size() >= maxDecisions) {
            cache.values().removeIf(kept -> now - kept.untilNanos() >= 0);
            if (cache.size() > maxDecisions * 3 / 4) {
                cache.clear();
            }
            callers.keySet().retainAll(cache.keySet().stream().map(Question::who).collect(Collectors.toSet()));
        }
        Identity who = callers.computeIfAbsent(q.who(), w -> w);
        cache.put(who == q.who() ? q : new Question(who, q.verb(), q.resource(), q.subresource(), q.name()), d);
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
                        .withName(q.name() == null || q.name().isEmpty() ? null : q.name())
                        .withVerb(q.verb()).build())
                .endSpec()
                .build();
        SubjectAccessReview answer;
        try {
            calls.count(KubeApiCall.SUBJECT_ACCESS_REVIEWS_CREATE);
            answer = client.authorization().v1().subjectAccessReview().create(sar);
        } catch (RuntimeException e) {
            LOG.warn("SubjectAccessReview failed user={} error={}", io.unboundedcloud.playpen.api.LogText.quote(who.user()), e.toString());
            throw ApiException.unavailable("authorization check failed: SubjectAccessReview could not be created;"
                    + " nothing was done, try again", retryAfterSeconds);
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
