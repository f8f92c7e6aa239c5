package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.kube.ClaimWriter;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Owner hashes are keyed per installation, the same on every replica; claims written before the key existed
 * (the unkeyed sha256 of the user name) stay their owner's: listed, readable and deletable by them only, counted
 * by the quota, and moved to the keyed hash the first time their owner allocates.
 */
class OwnerHashMigrationRouteTest {
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    TestCluster cluster;
    OperatorHarness op;
    OperatorHarness op2;
    HttpClient http;

    @BeforeEach
    void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        // everyone's allocations (allocs/all) only for admins
        cluster.sarPolicy = sar -> {
            List<String> groups = sar.getSpec().getGroups() == null ? List.of() : sar.getSpec().getGroups();
            String sub = sar.getSpec().getResourceAttributes().getSubresource();
            return sub != null && !sub.isEmpty() ? groups.contains("playpen-admins") : groups.contains("playpen-users");
        };
    }

    @AfterEach
    void down() {
        if (op2 != null) {
            op2.close();
        }
        op.close();
        cluster.close();
    }

    HttpResponse<String> alloc(OperatorHarness to, String key, String user) throws Exception {
        return to.kubectlPost(http, ALLOCS, "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\""
                + TestCluster.wgKey(7) + "\"}", user, "playpen-users");
    }

    HttpResponse<String> send(String method, String path, String user) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(path))).timeout(Duration.ofSeconds(20))
                .method(method, HttpRequest.BodyPublishers.noBody()).header("Accept", "application/json");
        return http.send(OperatorHarness.asUser(b, user, "playpen-users").build(), HttpResponse.BodyHandlers.ofString());
    }

    Pod podOf(String key) {
        String hash = Hashes.keyHash(key);
        return cluster.pods().stream()
                .filter(p -> hash.equals(p.getMetadata().getAnnotations().get(PlaypenKeys.IDEMPOTENCY_KEY_HASH)))
                .findFirst().orElseThrow();
    }

    static String ownerOf(Pod p) {
        return p.getMetadata().getAnnotations().get(PlaypenKeys.OWNER_HASH);
    }

    /**
     * Rewrites a claim as an operator without the key wrote it: the unkeyed sha256 of the user name, in the
     * annotation and in the label that lists a user's claims (cut to a label value's 63 characters).
     */
    void makeLegacy(Pod claimed, String user) throws Exception {
        String legacy = Hashes.sha256Hex(user);
        cluster.client.pods().inNamespace(TestCluster.NS).withName(claimed.getMetadata().getName())
                .edit(p -> new PodBuilder(p).editMetadata().addToAnnotations(PlaypenKeys.OWNER_HASH, legacy)
                        .addToLabels(PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(legacy)).endMetadata().build());
        op.awaitCache(c -> c.stream().anyMatch(p -> Hashes.sha256Hex(user).equals(p.getMetadata().getAnnotations() == null
                ? null : p.getMetadata().getAnnotations().get(PlaypenKeys.OWNER_HASH))));
    }

    @Test
    void replicasWriteTheSameKeyedHash() throws Exception {
        op = new OperatorHarness(cluster);
        op2 = new OperatorHarness(cluster);
        http = op.frontProxy();
        for (int i = 0; i < 2; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
        }
        op.awaitCache(c -> c.size() == 2);
        op2.awaitCache(c -> c.size() == 2);
        assertThat(alloc(op, "on-one", "alice").statusCode()).isEqualTo(200);
        assertThat(alloc(op2, "on-two", "alice").statusCode()).isEqualTo(200);
        String keyed = op.app.ownerHashes().of("alice").current();
        assertThat(keyed).isEqualTo(op2.app.ownerHashes().of("alice").current()).isNotEqualTo(Hashes.sha256Hex("alice"));
        assertThat(ownerOf(podOf("on-one"))).isEqualTo(keyed);
        assertThat(ownerOf(podOf("on-two"))).isEqualTo(keyed);
    }

    @Test
    void aLegacyClaimStaysItsOwnersAndCountsAgainstTheirQuota() throws Exception {
        op = new OperatorHarness(cluster, "--max-allocs-per-user=1");
        http = op.frontProxy();
        for (int i = 0; i < 3; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
        }
        op.awaitCache(c -> c.size() == 3);
        assertThat(alloc(op, "before-the-key", "alice").statusCode()).isEqualTo(200);
        Pod claimed = podOf("before-the-key");
        makeLegacy(claimed, "alice");
        String id = claimed.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED);

        // alice lists and reads it; bob does not see it
        JsonNode mine = Json.MAPPER.readTree(send("GET", ALLOCS, "alice").body());
        assertThat(mine.get("items")).hasSize(1);
        assertThat(mine.at("/items/0/metadata/name").asText()).isEqualTo(id);
        assertThat(send("GET", ALLOCS + "/" + id, "alice").statusCode()).isEqualTo(200);
        assertThat(Json.MAPPER.readTree(send("GET", ALLOCS, "bob").body()).get("items")).isEmpty();
        assertThat(send("GET", ALLOCS + "/" + id, "bob").statusCode()).isEqualTo(404);

        // the quota counts it: alice holds 1 of 1
        HttpResponse<String> over = alloc(op, "after-the-key", "alice");
        assertThat(over.statusCode()).as(over.body()).isEqualTo(429);
        assertThat(over.body()).contains("you hold 1 of at most 1");
        // and the claim now carries the keyed hash
        String keyed = op.app.ownerHashes().of("alice").current();
        assertThat(ownerOf(podOf("before-the-key"))).isEqualTo(keyed);
        // listed under it too, as the quota counts an owner's claims from the API server when it settles one
        assertThat(podOf("before-the-key").getMetadata().getLabels())
                .containsEntry(PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(keyed));
        assertThat(cluster.client.pods().inNamespace(TestCluster.NS)
                .withLabel(PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(keyed)).list().getItems())
                .extracting(p -> p.getMetadata().getName()).containsExactly(claimed.getMetadata().getName());
        assertThat(cluster.pods().stream().map(OwnerHashMigrationRouteTest::ownerOf))
                .doesNotContain(Hashes.sha256Hex("alice"));
        // bob is not affected
        assertThat(alloc(op, "bobs", "bob").statusCode()).isEqualTo(200);
    }

    /**
     * The replica links a user's two owner hashes while an allocation of theirs is in flight, and afterwards only
     * while its cache holds a claim of theirs under the legacy hash: bob holds none, so once his allocation is done
     * the link is dropped (before, every user served added a link for good).
     */
    @Test
    void theLinkOfAUsersTwoHashesIsDroppedOnceTheirAllocationIsDoneAndNoLegacyClaimIsLeft() throws Exception {
        op = new OperatorHarness(cluster);
        http = op.frontProxy();
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        assertThat(alloc(op, "bobs", "bob").statusCode()).isEqualTo(200);
        String bob = op.app.ownerHashes().of("bob").current();
        OperatorHarness.awaitTrue(() -> op.app.podCache().legacyOwnerHashOf(bob).isEmpty(), Duration.ofSeconds(60),
                "bob's link dropped");
    }

    /**
     * A user whose legacy claim could not be moved keeps the link of their two hashes after their allocation is done
     * (the quota must count that claim); once the claim is gone, the replica drops the link on its own, at a tick of
     * the --reconcile-interval timer, though neither that user nor anyone else asks again.
     */
    @Test
    void theLinkOfAUserWhoseLegacyClaimIsGoneIsDroppedWithoutAnotherRequest() throws Exception {
        op = new OperatorHarness(cluster, "--reconcile-interval=1s");
        http = op.frontProxy();
        for (int i = 0; i < 2; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
        }
        op.awaitCache(c -> c.size() == 2);
        assertThat(alloc(op, "old", "alice").statusCode()).isEqualTo(200);
        Pod claimed = podOf("old");
        makeLegacy(claimed, "alice");
        // the move of the legacy claim meets a change every time: it stays under the legacy hash
        cluster.server.expect().patch().withPath("/api/v1/namespaces/" + TestCluster.NS + "/pods/"
                + claimed.getMetadata().getName()).andReturn(409, "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                        + "\"status\":\"Failure\",\"code\":409}").always();
        assertThat(alloc(op, "new", "alice").statusCode()).isEqualTo(200);
        String alice = op.app.ownerHashes().of("alice").current();
        assertThat(ownerOf(podOf("old"))).as("not moved").isEqualTo(Hashes.sha256Hex("alice"));
        assertThat(op.app.podCache().legacyOwnerHashOf(alice)).as("alice's legacy claim is in the cache")
                .contains(Hashes.sha256Hex("alice"));

        cluster.client.pods().inNamespace(TestCluster.NS).withName(claimed.getMetadata().getName()).delete();
        OperatorHarness.awaitTrue(() -> op.app.podCache().legacyOwnerHashOf(alice).isEmpty(), Duration.ofSeconds(60),
                "alice's link dropped with no request");
    }

    @Test
    void aLegacyClaimCanBeDeletedByItsOwnerOnly() throws Exception {
        op = new OperatorHarness(cluster);
        http = op.frontProxy();
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        assertThat(alloc(op, "old", "alice").statusCode()).isEqualTo(200);
        Pod claimed = podOf("old");
        makeLegacy(claimed, "alice");
        String id = claimed.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED);
        assertThat(send("DELETE", ALLOCS + "/" + id, "bob").statusCode()).isEqualTo(404);
        assertThat(send("DELETE", ALLOCS + "/" + id, "alice").statusCode()).isEqualTo(200);
        OperatorHarness.awaitTrue(() -> cluster.pods().stream().noneMatch(p -> p.getMetadata().getName()
                .equals(claimed.getMetadata().getName()) && p.getMetadata().getDeletionTimestamp() == null),
                Duration.ofSeconds(60), "deleted");
    }
}
