package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.support.TestCluster;

/** SubjectAccessReview decisions: one review per question in flight, however many requests miss the cache at once. */
class AccessReviewerTest {
    static final Identity ALICE = new Identity("alice", "", List.of("playpen-users"), Map.of());
    static final Identity MALLORY = new Identity("mallory", "", List.of("others"), Map.of());

    @Test
    void concurrentMissesOfOneQuestionShareOneReview() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            var allow = cluster.sarPolicy;
            CountDownLatch reviewing = new CountDownLatch(1);
            cluster.sarPolicy = sar -> {
                reviewing.countDown();
                sleep(400); // the API server is slow: every other request arrives while this review is in flight
                return allow.test(sar);
            };
            ApiCallCounter calls = new ApiCallCounter();
            AccessReviewer reviewer = new AccessReviewer(cluster.client, Duration.ofSeconds(10), Duration.ofSeconds(2),
                    1, calls);
            ExecutorService pool = Executors.newFixedThreadPool(16);
            try {
                List<Future<?>> first = List.of(pool.submit(() -> reviewer.authorize(ALICE)));
                assertThat(reviewing.await(60, TimeUnit.SECONDS)).isTrue();
                List<Future<?>> all = new ArrayList<>(first);
                for (int i = 0; i < 15; i++) {
                    all.add(pool.submit(() -> reviewer.authorize(ALICE)));
                }
                for (Future<?> f : all) {
                    f.get(20, TimeUnit.SECONDS); // all allowed
                }
                assertThat(cluster.sarRequests).as("SubjectAccessReviews sent for 16 concurrent requests").hasSize(1);
                assertThat(calls.get(KubeApiCall.SUBJECT_ACCESS_REVIEWS_CREATE)).isEqualTo(1);
                // a denial is shared the same way, and each caller gets its own 403
                List<Future<?>> denied = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    denied.add(pool.submit(() -> reviewer.authorize(MALLORY)));
                }
                for (Future<?> f : denied) {
                    assertThatThrownBy(() -> f.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(ApiException.class)
                            .cause().hasMessageContaining("mallory");
                }
                assertThat(cluster.sarRequests).hasSize(2);
                // cached from now on
                reviewer.authorize(ALICE);
                assertThat(cluster.sarRequests).hasSize(2);
            } finally {
                pool.shutdownNow();
            }
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
