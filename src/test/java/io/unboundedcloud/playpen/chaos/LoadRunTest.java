package io.unboundedcloud.playpen.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The chaos checker's rule for answers naming a second pod for a key: only an answer received before a request was
 * sent orders the two. A request sent first but served last (held up in a slow replica while the key was answered
 * elsewhere and deallocated) may claim anew; a request sent after an answer may name another pod only once the one
 * answered is gone.
 */
class LoadRunTest {
    static final String KEY = "checker-key";
    static final String P0 = "playpen-runner-amd64-51820";
    static final String P1 = "playpen-runner-amd64-51821";

    static LoadRun.Attempt answer(String pod, long start, long end) {
        return new LoadRun.Attempt("alloc", KEY, 0, 200, "{\"pod\":{\"name\":\"" + pod + "\"}}", start, end);
    }

    @Test
    void anAnswerNamesAnotherPodOnlyOnceThePodAnsweredBeforeItsRequestIsGone() throws Exception {
        String hash = Hashes.keyHash(KEY);
        Map<String, Set<Integer>> variants = Map.of(KEY, Set.of(0));
        try (TestCluster cluster = TestCluster.start()) {
            cluster.create(ClusterHistoryTest.readyCondition(TestCluster.readyRunner("amd64", 51820, "node-a")));
            cluster.create(ClusterHistoryTest.readyCondition(TestCluster.readyRunner("amd64", 51821, "node-a")));
            try (ClusterHistory h = new ClusterHistory(URI.create(cluster.client.getMasterUrl().toString()),
                    TestCluster.NS, Map.of(), Duration.ofHours(1))) {
                long slowSent = System.nanoTime(); // a request sent first, then held up
                long quickSent = System.nanoTime();
                ClusterHistoryTest.claim(cluster, P0, hash);
                long quickAnswered = System.nanoTime(); // answered with P0, then the key deallocated
                cluster.client.pods().inNamespace(TestCluster.NS).withName(P0).delete();
                OperatorHarness.awaitTrue(() -> h.deletedBefore(P0, hash, System.nanoTime()), Duration.ofSeconds(60),
                        "the checker saw the dealloc");
                ClusterHistoryTest.claim(cluster, P1, hash);
                OperatorHarness.awaitTrue(() -> h.podsThatCarried(hash).contains(P1), Duration.ofSeconds(60),
                        "the checker saw the new claim");
                long slowAnswered = System.nanoTime(); // the held-up request claimed anew: P1

                LoadRun.Attempt slow = answer(P1, slowSent, slowAnswered);
                LoadRun.Attempt quick = answer(P0, quickSent, quickAnswered);
                assertThat(LoadRun.violations(List.of(slow, quick), variants, h))
                        .as("overlapping requests: either may have been served first").isEmpty();
                assertThat(LoadRun.violations(List.of(quick, answer(P1, quickAnswered + 1, slowAnswered)), variants,
                        h)).as("sent after the answer naming P0, answered once P0 was gone").isEmpty();

                // a request sent after the answer naming P1, answered with P0's name while P1 still holds the key
                long late = System.nanoTime();
                assertThat(LoadRun.violations(List.of(slow, answer(P0, slowAnswered + 1, late)), variants, h))
                        .singleElement().asString().contains("answered with pod " + P0 + " while pod " + P1);
                assertThat(h.violations()).isEmpty();
            }
        }
    }

    /** One pod, P0, that carries the checker's key (once {@code h} has seen it). */
    static void claimedP0(TestCluster cluster, ClusterHistory h, String hash) throws InterruptedException {
        cluster.create(ClusterHistoryTest.readyCondition(TestCluster.readyRunner("amd64", 51820, "node-a")));
        ClusterHistoryTest.claim(cluster, P0, hash);
        OperatorHarness.awaitTrue(() -> h.podsThatCarried(hash).contains(P0), Duration.ofSeconds(60),
                "the checker saw the claim");
    }

    @Test
    void a200NamingAPodThatNeverCarriedTheKeyIsAViolation() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = ClusterHistoryTest.history(cluster)) {
            claimedP0(cluster, h, Hashes.keyHash(KEY));
            assertThat(LoadRun.violations(List.of(answer(P1, 1, 2)), Map.of(KEY, Set.of(0)), h)).singleElement()
                    .asString().contains("200 names pod " + P1 + " which never carried the key");
        }
    }

    @Test
    void a200WhoseClaimWasTakenBackAfterwardsIsAViolation() throws Exception {
        String hash = Hashes.keyHash(KEY);
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = ClusterHistoryTest.history(cluster)) {
            long sent = System.nanoTime();
            claimedP0(cluster, h, hash);
            long answered = System.nanoTime();
            ClusterHistoryTest.claim(cluster, P0, null); // a claim that lost, rolled back
            OperatorHarness.awaitTrue(() -> h.takenBackAfter(P0, hash, sent), Duration.ofSeconds(60),
                    "the checker saw the claim taken back");
            assertThat(LoadRun.violations(List.of(answer(P0, sent, answered)), Map.of(KEY, Set.of(0)), h))
                    .singleElement().asString().contains("200 names pod " + P0 + " whose claim of the key was then "
                            + "taken back");
        }
    }

    @Test
    void twoDifferent200AnswersNamingOnePodAreAViolation() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = ClusterHistoryTest.history(cluster)) {
            claimedP0(cluster, h, Hashes.keyHash(KEY));
            LoadRun.Attempt first = answer(P0, 1, 2);
            LoadRun.Attempt other = new LoadRun.Attempt("alloc", KEY, 0, 200, "{\"pod\":{\"name\":\"" + P0
                    + "\"},\"expiresAt\":\"2026-01-01T00:00:00Z\"}", 3, 4);
            assertThat(LoadRun.violations(List.of(first, answer(P0, 3, 4)), Map.of(KEY, Set.of(0)), h)).isEmpty();
            assertThat(LoadRun.violations(List.of(first, other), Map.of(KEY, Set.of(0)), h)).singleElement()
                    .asString().contains("two different 200 answers naming pod " + P0);
        }
    }

    @Test
    void a409IsAViolationOnlyForAKeySentWithOneBody() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = ClusterHistoryTest.history(cluster)) {
            claimedP0(cluster, h, Hashes.keyHash(KEY));
            List<LoadRun.Attempt> attempts = List.of(answer(P0, 1, 2),
                    new LoadRun.Attempt("alloc", KEY, 1, 409, "{\"kind\":\"Status\",\"code\":409}", 3, 4));
            assertThat(LoadRun.violations(attempts, Map.of(KEY, Set.of(0, 1)), h)).as("sent with two bodies")
                    .isEmpty();
            assertThat(LoadRun.violations(attempts, Map.of(KEY, Set.of(0)), h)).singleElement().asString()
                    .contains("409 although the key was only ever sent with one body");
        }
    }

    @Test
    void aRunInWhichNoAllocWasAnswered200CheckedNothing() throws Exception {
        Map<String, Set<Integer>> variants = Map.of(KEY, Set.of(0));
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = new ClusterHistory(
                URI.create(cluster.client.getMasterUrl().toString()), TestCluster.NS, Map.of(), Duration.ofHours(1))) {
            List<LoadRun.Attempt> unanswered = List.of(new LoadRun.Attempt("alloc", KEY, 0, 503, "{}", 1, 2),
                    new LoadRun.Attempt("alloc", KEY, 0, -1, "java.net.ConnectException", 3, 4),
                    new LoadRun.Attempt("dealloc", KEY, 0, 204, "", 5, 6));
            assertThat(LoadRun.violations(unanswered, variants, h)).singleElement().asString()
                    .startsWith("no alloc was answered 200");
        }
    }
}
