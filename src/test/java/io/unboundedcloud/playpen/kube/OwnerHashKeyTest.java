package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Base64;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.unboundedcloud.playpen.support.TestCluster;

/** The installation's owner-hash key: made once, then read by every replica; an unusable one stops the start. */
class OwnerHashKeyTest {
    static final String NS = "playpen-system";
    static final String NAME = "playpen-operator-owner-hash";
    TestCluster cluster;
    ApiCallCounter calls = new ApiCallCounter();

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
    }

    @AfterEach
    void down() {
        cluster.close();
    }

    Secret secret() {
        return cluster.client.secrets().inNamespace(NS).withName(NAME).get();
    }

    @Test
    void theFirstReplicaMakesARandomKeyAndEveryLaterOneReadsIt() {
        byte[] first = OwnerHashKey.ensure(cluster.client, NS, NAME, calls);
        assertThat(first).hasSize(32);
        Secret s = secret();
        assertThat(s).isNotNull();
        assertThat(Base64.getDecoder().decode(s.getData().get(OwnerHashKey.KEY))).isEqualTo(first);
        assertThat(s.getType()).isEqualTo("Opaque");
        assertThat(OwnerHashKey.ensure(cluster.client, NS, NAME, calls)).isEqualTo(first);
        assertThat(calls.get(KubeApiCall.SECRETS_CREATE)).isEqualTo(1);
        assertThat(calls.get(KubeApiCall.OWNER_HASH_SECRET_GET)).isEqualTo(2);
        // another installation (another Secret) gets another key
        assertThat(OwnerHashKey.ensure(cluster.client, NS, "other", calls)).isNotEqualTo(first);
    }

    @Test
    void replicasStartingTogetherAllEndUpWithOneKey() throws Exception {
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(6);
        try {
            java.util.List<java.util.concurrent.Future<byte[]>> keys = new java.util.ArrayList<>();
            java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
            for (int i = 0; i < 6; i++) {
                keys.add(pool.submit(() -> {
                    go.await();
                    return OwnerHashKey.ensure(cluster.client, NS, "race", new ApiCallCounter());
                }));
            }
            go.countDown();
            byte[] stored = null;
            for (java.util.concurrent.Future<byte[]> k : keys) {
                byte[] key = k.get(30, java.util.concurrent.TimeUnit.SECONDS);
                if (stored == null) {
                    stored = Base64.getDecoder().decode(cluster.client.secrets().inNamespace(NS).withName("race").get()
                            .getData().get(OwnerHashKey.KEY));
                }
                assertThat(key).isEqualTo(stored);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aKeyPutThereBeforehandIsUsed() {
        byte[] mine = new byte[48];
        mine[0] = 1;
        cluster.client.secrets().inNamespace(NS).resource(new SecretBuilder().withNewMetadata().withName(NAME).endMetadata()
                .withData(Map.of(OwnerHashKey.KEY, Base64.getEncoder().encodeToString(mine))).build()).create();
        assertThat(OwnerHashKey.ensure(cluster.client, NS, NAME, calls)).isEqualTo(mine);
        assertThat(calls.get(KubeApiCall.SECRETS_CREATE)).isZero();
    }

    @Test
    void aSecretWithoutAUsableKeyStopsTheStart() {
        cluster.client.secrets().inNamespace(NS).resource(new SecretBuilder().withNewMetadata().withName(NAME).endMetadata()
                .withData(Map.of(OwnerHashKey.KEY, Base64.getEncoder().encodeToString(new byte[8]))).build()).create();
        assertThatThrownBy(() -> OwnerHashKey.ensure(cluster.client, NS, NAME, calls))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(NS + "/" + NAME)
                .hasMessageContaining("at least 32");
        cluster.client.secrets().inNamespace(NS).withName(NAME).edit(s -> new SecretBuilder(s)
                .withData(Map.of("other", "eA==")).build());
        assertThatThrownBy(() -> OwnerHashKey.ensure(cluster.client, NS, NAME, calls))
                .isInstanceOf(IllegalStateException.class);
    }
}
