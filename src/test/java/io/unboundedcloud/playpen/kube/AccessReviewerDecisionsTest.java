package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.authorization.v1.ResourceAttributes;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewSpec;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewStatusBuilder;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * What the SubjectAccessReview asks (the caller's whole identity, the resource, subresource and verb of the
 * request), how long its answer is trusted (allowed and denied apart, none with a TTL of 0), and that every doubt
 * is a no: an answer that is both allowed and denied, and a review that cannot be made (503 to the caller, never
 * cached; everyone's allocations not granted).
 */
class AccessReviewerDecisionsTest {
    static final Identity ALICE = new Identity("alice", "uid-1", List.of("playpen-users", "system:authenticated"),
            Map.of("scopes.example.com", List.of("a", "b")));
    static final Identity BOB = new Identity("bob", "", List.of("playpen-users"), Map.of());
    static final Identity MALLORY = AccessReviewerTest.MALLORY;
    static final String SAR_PATH = "POST /apis/authorization.k8s.io/v1/subjectaccessreviews";

    static AccessReviewer reviewer(TestCluster cluster, Duration allowedTtl, Duration deniedTtl, ApiCallCounter calls) {
        return new AccessReviewer(cluster.client, allowedTtl, deniedTtl, 7, calls);
    }

    @Test
    void theReviewAsksAboutTheCallersWholeIdentityAndTheRequestsResourceAndVerb() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            AccessReviewer reviewer = reviewer(cluster, Duration.ofMinutes(1), Duration.ofMinutes(1),
                    new ApiCallCounter());

            reviewer.authorize(ALICE, "delete");
            reviewer.authorize(BOB);
            assertThat(reviewer.allowedForAllUsers(ALICE, "list")).isTrue();
            reviewer.authorize(BOB, AccessReviewer.POOLS, "get");

            assertThat(cluster.sarRequests).hasSize(4);
            SubjectAccessReviewSpec alice = cluster.sarRequests.get(0).getSpec();
            assertThat(alice.getUser()).isEqualTo("alice");
            assertThat(alice.getUid()).isEqualTo("uid-1");
            assertThat(alice.getGroups()).containsExactly("playpen-users", "system:authenticated");
            assertThat(alice.getExtra()).containsExactly(Map.entry("scopes.example.com", List.of("a", "b")));
            assertAttributes(alice.getResourceAttributes(), "allocs", null, "delete");
            // no uid and no extra: left out, not sent empty
            SubjectAccessReviewSpec bob = cluster.sarRequests.get(1).getSpec();
            assertThat(bob.getUser()).isEqualTo("bob");
            assertThat(bob.getUid()).isNull();
            assertThat(bob.getExtra()).isNullOrEmpty();
            assertAttributes(bob.getResourceAttributes(), "allocs", null, "create");
            assertAttributes(cluster.sarRequests.get(2).getSpec().getResourceAttributes(), "allocs",
                    AccessReviewer.ALL_USERS, "list");
            assertAttributes(cluster.sarRequests.get(3).getSpec().getResourceAttributes(), AccessReviewer.POOLS, null,
                    "get");
        }
    }

    @Test
    void aReviewOfOneNamedObjectNamesItAndItsVerdictAnswersForThatNameOnly() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            // bob's Role names the allocation and the pool it grants (resourceNames)
            cluster.sarPolicy = sar -> "0123456789abcdef".equals(sar.getSpec().getResourceAttributes().getName())
                    || "runner-amd64".equals(sar.getSpec().getResourceAttributes().getName());
            AccessReviewer reviewer = reviewer(cluster, Duration.ofMinutes(1), Duration.ofMinutes(1),
                    new ApiCallCounter());

            reviewer.authorize(BOB, AccessReviewer.ALLOCS, "get", "0123456789abcdef");
            assertThatThrownBy(() -> reviewer.authorize(BOB, AccessReviewer.ALLOCS, "get", "fedcba9876543210"))
                    .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.code()).isEqualTo(403));
            reviewer.authorize(BOB, AccessReviewer.ALLOCS, "delete", "0123456789abcdef");
            assertThat(reviewer.allowedForAllUsers(BOB, "get", "0123456789abcdef")).isTrue();
            assertThat(reviewer.allowedForAllUsers(BOB, "get", "fedcba9876543210")).isFalse();
            reviewer.authorize(BOB, AccessReviewer.POOLS, "get", "runner-amd64");
            assertThatThrownBy(() -> reviewer.authorize(BOB, AccessReviewer.POOLS, "get", "runner-arm64"))
                    .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.code()).isEqualTo(403));

            assertThat(cluster.sarRequests).extracting(s -> s.getSpec().getResourceAttributes().getVerb() + " "
                    + s.getSpec().getResourceAttributes().getResource() + "/"
                    + s.getSpec().getResourceAttributes().getSubresource() + " "
                    + s.getSpec().getResourceAttributes().getName())
                    .containsExactly("get allocs/null 0123456789abcdef", "get allocs/null fedcba9876543210",
                            "delete allocs/null 0123456789abcdef", "get allocs/all 0123456789abcdef",
                            "get allocs/all fedcba9876543210", "get pools/null runner-amd64",
                            "get pools/null runner-arm64");
            // a list names nothing (so bob's Role, naming its objects, cannot list)
            assertThatThrownBy(() -> reviewer.authorize(ALICE, "list")).isInstanceOf(ApiException.class);
            assertThat(cluster.sarRequests.get(7).getSpec().getResourceAttributes().getName()).isNull();
        }
    }

    private static void assertAttributes(ResourceAttributes a, String resource, String subresource, String verb) {
        assertThat(a.getGroup()).isEqualTo(PlaypenKeys.GROUP);
        assertThat(a.getVersion()).isEqualTo(PlaypenKeys.VERSION);
        assertThat(a.getResource()).isEqualTo(resource);
        assertThat(a.getSubresource()).isEqualTo(subresource);
        assertThat(a.getVerb()).isEqualTo(verb);
    }

    @Test
    void answersAreTrustedForTheirOwnTtlPerUserVerbAndResource() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            ApiCallCounter calls = new ApiCallCounter();
            // allowed for a minute, denied not cached at all
            AccessReviewer reviewer = reviewer(cluster, Duration.ofMinutes(1), Duration.ZERO, calls);

            reviewer.authorize(ALICE);
            reviewer.authorize(ALICE);
            assertThat(cluster.sarRequests).as("the allowed answer, cached").hasSize(1);
            // another verb, another resource, another subresource, another user: questions of their own
            reviewer.authorize(ALICE, "delete");
            reviewer.authorize(ALICE, AccessReviewer.POOLS, "create");
            reviewer.allowedForAllUsers(ALICE, "create");
            reviewer.authorize(BOB);
            assertThat(cluster.sarRequests).hasSize(5);
            for (int i = 0; i < 2; i++) {
                assertThatThrownBy(() -> reviewer.authorize(MALLORY)).isInstanceOf(ApiException.class);
            }
            assertThat(cluster.sarRequests).as("a denial with a TTL of 0: asked each time").hasSize(7);
            assertThat(calls.get(KubeApiCall.SUBJECT_ACCESS_REVIEWS_CREATE)).isEqualTo(7);
            assertThat(reviewer.cacheHits()).isEqualTo(1);
            assertThat(reviewer.cacheMisses()).isEqualTo(7);
        }
    }

    @Test
    void anAllowedAnswerIsAskedAgainOnceItsTtlHasPassedAndADenialIsKeptForItsOwn() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            AccessReviewer reviewer = reviewer(cluster, Duration.ofMillis(300), Duration.ofMinutes(1),
                    new ApiCallCounter());
            reviewer.authorize(ALICE);
            assertThatThrownBy(() -> reviewer.authorize(MALLORY)).isInstanceOf(ApiException.class);
            Thread.sleep(600);
            reviewer.authorize(ALICE);
            assertThatThrownBy(() -> reviewer.authorize(MALLORY)).isInstanceOf(ApiException.class);
            assertThat(cluster.sarRequests).extracting(s -> s.getSpec().getUser())
                    .as("alice asked again after 300 ms, mallory's denial kept for its minute")
                    .containsExactly("alice", "mallory", "alice");
        }
        try (TestCluster cluster = TestCluster.start()) {
            AccessReviewer reviewer = reviewer(cluster, Duration.ZERO, Duration.ZERO, new ApiCallCounter());
            reviewer.authorize(ALICE);
            reviewer.authorize(ALICE);
            assertThat(cluster.sarRequests).as("no caching with TTLs of 0").hasSize(2);
        }
    }

    @Test
    void aDenialSaysWhoMayNotDoWhatAndWhy() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            AccessReviewer reviewer = reviewer(cluster, Duration.ofMinutes(1), Duration.ofMinutes(1),
                    new ApiCallCounter());
            assertThatThrownBy(() -> reviewer.authorize(MALLORY, "delete")).isInstanceOfSatisfying(ApiException.class,
                    e -> {
                        assertThat(e.code()).isEqualTo(403);
                        assertThat(e.getMessage()).isEqualTo("allocs." + PlaypenKeys.GROUP + " is forbidden: User "
                                + "\"mallory\" cannot delete resource \"allocs\" in API group \"" + PlaypenKeys.GROUP
                                + "\": test policy denies");
                    });
            assertThatThrownBy(() -> reviewer.authorize(MALLORY, AccessReviewer.POOLS, "list"))
                    .isInstanceOfSatisfying(ApiException.class, e -> {
                        assertThat(e.code()).isEqualTo(403);
                        assertThat(e.getMessage()).isEqualTo("pools." + PlaypenKeys.GROUP + " is forbidden: User "
                                + "\"mallory\" cannot list resource \"pools\" in API group \"" + PlaypenKeys.GROUP
                                + "\": test policy denies");
                    });
            // a denial without a reason ends at the API group
            cluster.sarAnswer = sar -> new SubjectAccessReviewStatusBuilder().withAllowed(false).build();
            assertThatThrownBy(() -> reviewer.authorize(BOB, "get")).isInstanceOfSatisfying(ApiException.class,
                    e -> assertThat(e.getMessage()).endsWith("in API group \"" + PlaypenKeys.GROUP + "\""));
            assertThatThrownBy(() -> reviewer.authorize(BOB, AccessReviewer.POOLS, "get"))
                    .isInstanceOfSatisfying(ApiException.class,
                            e -> assertThat(e.getMessage()).endsWith("in API group \"" + PlaypenKeys.GROUP + "\""));
        }
    }

    @Test
    void anAnswerThatIsBothAllowedAndDeniedIsADenial() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            AccessReviewer reviewer = reviewer(cluster, Duration.ofMinutes(1), Duration.ofMinutes(1),
                    new ApiCallCounter());
            cluster.sarAnswer = sar -> new SubjectAccessReviewStatusBuilder().withAllowed(true).withDenied(true)
                    .withReason("denied by a webhook").build();
            assertThatThrownBy(() -> reviewer.authorize(ALICE)).isInstanceOfSatisfying(ApiException.class,
                    e -> assertThat(e.code()).isEqualTo(403));
            assertThat(reviewer.allowedForAllUsers(BOB, "list")).isFalse();
            // an answer without a status says nothing: no
            cluster.sarAnswer = sar -> null;
            assertThatThrownBy(() -> reviewer.authorize(BOB, "delete")).isInstanceOfSatisfying(ApiException.class,
                    e -> assertThat(e.code()).isEqualTo(403));
        }
    }

    @Test
    void aReviewThatCannotBeMadeIsA503ThatIsNotCachedAndGrantsNobodyEveryonesAllocations() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            AccessReviewer reviewer = reviewer(cluster, Duration.ofMinutes(1), Duration.ofMinutes(1),
                    new ApiCallCounter());
            // the operator's own RBAC lacks the review (or the API server fails it)
            cluster.forbidden = SAR_PATH::equals;

            assertThatThrownBy(() -> reviewer.authorize(ALICE)).isInstanceOfSatisfying(ApiException.class, e -> {
                assertThat(e.code()).isEqualTo(503);
                assertThat(e.headers()).containsEntry("Retry-After", "7");
                assertThat(e.getMessage()).isEqualTo("authorization check failed: SubjectAccessReview could not be"
                        + " created; nothing was done, try again");
            });
            // a failed review of allocs/all is not a no: an administrator would see only their own allocations
            assertThatThrownBy(() -> reviewer.allowedForAllUsers(ALICE, "list"))
                    .isInstanceOfSatisfying(ApiException.class, e -> {
                        assertThat(e.code()).isEqualTo(503);
                        assertThat(e.headers()).containsEntry("Retry-After", "7");
                    });

            cluster.forbidden = key -> false;
            reviewer.authorize(ALICE);
            assertThat(reviewer.allowedForAllUsers(ALICE, "list")).as("and was not remembered as one").isTrue();
        }
    }

    /**
     * Every request parses its own copy of the caller's identity; the decisions kept for one caller share one copy
     * (a caller with many groups asking about many names kept a copy per decision), and a name longer than any
     * Kubernetes object's is asked about every time rather than kept.
     */
    @Test
    void theDecisionsKeptForOneCallerHoldOneCopyOfTheirIdentityAndNoOverlongName() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            AccessReviewer reviewer = reviewer(cluster, Duration.ofMinutes(1), Duration.ofMinutes(1),
                    new ApiCallCounter());
            reviewer.authorize(copyOf(ALICE), AccessReviewer.ALLOCS, "get", "0123456789abcdef");
            java.lang.ref.WeakReference<Identity> second = askedBy(reviewer, "fedcba9876543210");
            for (int gc = 0; gc < 20 && second.get() != null; gc++) {
                System.gc();
            }
            assertThat(second.get()).as("a second copy of alice's identity kept by her second decision").isNull();
            reviewer.authorize(copyOf(ALICE), AccessReviewer.ALLOCS, "get", "fedcba9876543210");
            assertThat(cluster.sarRequests).as("both decisions kept").hasSize(2);

            String overlong = "a".repeat(AccessReviewer.MAX_KEPT_NAME + 1);
            reviewer.authorize(copyOf(ALICE), AccessReviewer.ALLOCS, "get", overlong);
            reviewer.authorize(copyOf(ALICE), AccessReviewer.ALLOCS, "get", overlong);
            assertThat(cluster.sarRequests).as("an overlong name's decision not kept").hasSize(4);
            reviewer.authorize(copyOf(ALICE), AccessReviewer.ALLOCS, "get", overlong.substring(1));
            reviewer.authorize(copyOf(ALICE), AccessReviewer.ALLOCS, "get", overlong.substring(1));
            assertThat(cluster.sarRequests).as("a name of 253 characters kept").hasSize(5);
        }
    }

    /**
     * Past the most decisions kept, the expired ones are dropped and the live ones stay; when most are still live,
     * all go.
     */
    @Test
    void pastTheMostKeptTheExpiredDecisionsGoFirst() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
            AccessReviewer reviewer = new AccessReviewer(cluster.client, Duration.ofNanos(100), Duration.ofNanos(100),
                    7, new ApiCallCounter(), now::get, 4);
            ask(reviewer, "n1", "n2");
            now.set(150); // n1 and n2 expired
            ask(reviewer, "n3", "n4");
            assertThat(cluster.sarRequests).hasSize(4);
            ask(reviewer, "n5"); // the fifth: n1 and n2 dropped, n3 and n4 kept
            ask(reviewer, "n3", "n4", "n5");
            assertThat(cluster.sarRequests).as("the live decisions kept").hasSize(5);
            ask(reviewer, "n6", "n7"); // at n7 four kept, all live: all go
            ask(reviewer, "n3");
            assertThat(cluster.sarRequests).as("all forgotten when most were live").hasSize(8);
        }
    }

    private static void ask(AccessReviewer reviewer, String... names) {
        for (String name : names) {
            reviewer.authorize(ALICE, AccessReviewer.ALLOCS, "get", name);
        }
    }

    /** A decision about {@code name} asked by a copy of alice's identity; what refers to that copy. */
    private static java.lang.ref.WeakReference<Identity> askedBy(AccessReviewer reviewer, String name) {
        Identity copy = copyOf(ALICE);
        reviewer.authorize(copy, AccessReviewer.ALLOCS, "get", name);
        return new java.lang.ref.WeakReference<>(copy);
    }

    /** The identity as a request parses it: equal to {@code who}, none of its parts shared. */
    private static Identity copyOf(Identity who) {
        return new Identity(new String(who.user()), new String(who.uid()), new java.util.ArrayList<>(who.groups()),
                new java.util.HashMap<>(who.extra()));
    }
}
