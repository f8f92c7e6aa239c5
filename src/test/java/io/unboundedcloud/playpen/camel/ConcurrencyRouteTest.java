package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Exactly-once under concurrency: nothing double-allocated, nothing lost (docs/architecture.md). */
class ConcurrencyRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster);
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    @BeforeEach
    void seed() throws Exception {
        op.wipePods();
        for (int i = 0; i < 25; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
        }
        op.awaitCache(c -> c.size() == 25);
    }

    static List<HttpResponse<String>> concurrently(int n, java.util.function.IntFunction<Callable<HttpResponse<String>>> task)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<HttpResponse<String>>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Callable<HttpResponse<String>> t = task.apply(i);
                fs.add(pool.submit(() -> {
                    go.await();
                    return t.call();
                }));
            }
            go.countDown();
            List<HttpResponse<String>> out = new ArrayList<>();
            for (Future<HttpResponse<String>> f : fs) {
                out.add(f.get());
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void sixtyDistinctKeysOverTwentyFiveRunners() throws Exception {
        List<HttpResponse<String>> rs = concurrently(60, i -> () -> op.alloc("{\"idempotencyKey\":\"c-" + i
                + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(i) + "\"}"));
        List<String> podsHandedOut = new ArrayList<>();
        int unavailable = 0;
        for (HttpResponse<String> r : rs) {
            if (r.statusCode() == 200) {
                podsHandedOut.add(M.readTree(r.body()).at("/pod/name").asText());
            } else {
                assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
                assertThat(r.headers().firstValue("Retry-After")).isPresent();
                unavailable++;
            }
        }
        assertThat(podsHandedOut).hasSize(25).doesNotHaveDuplicates();
        assertThat(unavailable).isEqualTo(35);
        Set<String> keyHashes = new HashSet<>();
        for (Pod p : cluster.pods()) {
            String h = p.getMetadata().getAnnotations().get(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
            assertThat(h).as(p.getMetadata().getName()).isNotNull();
            keyHashes.add(h);
            assertThat(p.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED))
                    .isEqualTo(Hashes.allocationId("playpen", p.getMetadata().getName()));
        }
        assertThat(keyHashes).hasSize(25);
        // every 200 answer is backed by the pod that carries that key
        for (int i = 0; i < 60; i++) {
            if (rs.get(i).statusCode() == 200) {
                String name = M.readTree(rs.get(i).body()).at("/pod/name").asText();
                Pod p = cluster.client.pods().inNamespace("playpen").withName(name).get();
                assertThat(p.getMetadata().getAnnotations().get(PlaypenKeys.IDEMPOTENCY_KEY_HASH))
                        .isEqualTo(Hashes.keyHash("c-" + i));
            }
        }
    }

    @Test
    void twentyRequestsWithOneKeyShareOneClaim() throws Exception {
        String body = "{\"idempotencyKey\":\"same\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(99) + "\"}";
        List<HttpResponse<String>> rs = concurrently(20, i -> () -> op.alloc(body));
        Set<String> bodies = new HashSet<>();
        for (HttpResponse<String> r : rs) {
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            bodies.add(r.body());
        }
        assertThat(bodies).hasSize(1);
        assertThat(cluster.pods()).filteredOn(p -> p.getMetadata().getAnnotations().containsKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH))
                .hasSize(1);
    }
}
