package io.unboundedcloud.playpen.kube;

import static io.unboundedcloud.playpen.kube.ScriptedReplica.PODS;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.cmd;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.podPath;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.runner;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.OwnerHashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * The quota of a new claim once the owner's claims under the legacy (unkeyed) owner hash are counted too, when this
 * replica's watch had not delivered them as the owner asked (a replica of the previous version wrote them a moment
 * before): the scripted watch ({@link ScriptedReplica}) delivers them with the new claim, before its writer is
 * answered, so the writer judges its claim with both in its cache.
 */
class AllocatorLegacyQuotaTest {
    private static final OwnerHashes.Owner ALICE = LegacyOwnerClaimsTest.ALICE;
    private static final String LEGACY_POD = runner(3);

    private ScriptedReplica r;

    @AfterEach
    void stop() {
        if (r != null) {
            r.close();
        }
    }

    /** A claim of {@code key} as a replica of the previous version writes it (the legacy owner hash), as a merge patch. */
    private static String legacyClaim(AllocCommand key) {
        return "{\"metadata\":{\"annotations\":{\"" + PlaypenKeys.IDEMPOTENCY_KEY_HASH + "\":\"" + key.keyHash()
                + "\",\"" + PlaypenKeys.REQUEST_HASH + "\":\"" + key.requestHash() + "\",\"" + PlaypenKeys.CLAIMED_AT
                + "\":\"2026-01-01T00:00:00Z\",\"" + PlaypenKeys.OWNER_HASH + "\":\"" + ALICE.legacy()
                + "\"},\"labels\":{\"" + PlaypenKeys.KEY_HASH_LABEL + "\":\"" + ClaimWriter.labelValue(key.keyHash())
                + "\",\"" + PlaypenKeys.OWNER_HASH_LABEL + "\":\"" + ClaimWriter.labelValue(ALICE.legacy())
                + "\"}}}";
    }

    /**
     * {@code maxPerOwner} runners: alice's legacy claim is written while the watch is held, her hashes are linked
     * (nothing in the cache to move), and the held watch is delivered as her next claim is answered.
     */
    private void legacyClaimNotDelivered(int maxPerOwner) throws Exception {
        r = new ScriptedReplica(4, maxPerOwner);
        r.watch.hold();
        r.cluster.patchInStore(podPath(LEGACY_POD), legacyClaim(cmd("written-by-the-previous-version")));
        assertThat(new LegacyOwnerClaims(r.cluster.client, r.pods, r.calls).adopt(ALICE)).isZero();
        r.releaseOnAnswer("PATCH", PODS);
    }

    private long alicesClaims() {
        return r.cluster.pods().stream().filter(p -> ManagedPods.isClaimed(p) && ALICE.matches(ManagedPods.ownerHash(p)))
                .count();
    }

    @Test
    void aNewClaimOverTheQuotaOnceTheUndeliveredLegacyClaimCountsIsTakenBackAnd429() throws Exception {
        legacyClaimNotDelivered(1);
        AllocCommand next = cmd("one-more");

        ApiException e = catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(next, ALICE.current()));

        assertThat(e.code()).isEqualTo(429);
        assertThat(e.getMessage()).contains("you hold 1 of at most 1");
        assertThat(r.carriers(next.keyHash())).as("the new claim taken back").isEmpty();
        assertThat(alicesClaims()).isEqualTo(1);
    }

    /** Alice's next claim, with her undelivered legacy claim, under {@code maxPerOwner}: it stands, and she holds both. */
    private void theNewClaimStands(int maxPerOwner) throws Exception {
        legacyClaimNotDelivered(maxPerOwner);
        AllocCommand next = cmd("the-second");

        Allocator.Allocation a = r.allocator.allocate(next, ALICE.current());

        assertThat(a.replay()).isFalse();
        assertThat(r.carriers(next.keyHash())).containsExactly(ManagedPods.name(a.pod()));
        assertThat(alicesClaims()).isEqualTo(2);
    }

    @Test
    void aNewClaimThatReachesTheQuotaWithTheLegacyClaimStands() throws Exception {
        theNewClaimStands(2);
    }

    @Test
    void withoutAQuotaTheLegacyClaimsTakeNothingBack() throws Exception {
        theNewClaimStands(0);
    }

    @Test
    void aLegacyClaimCommittedAfterTheNewClaimDoesNotCountAgainstIt() throws Exception {
        r = new ScriptedReplica(4, 1);
        r.watch.hold();
        assertThat(new LegacyOwnerClaims(r.cluster.client, r.pods, r.calls).adopt(ALICE)).isZero();
        AllocCommand next = java.util.stream.IntStream.range(0, 100).mapToObj(i -> cmd("first-" + i)).filter(
                c -> !r.allocator.firstCandidate(c).map(u -> ManagedPods.name(u.pod())).orElseThrow()
                        .equals(LEGACY_POD)).findFirst().orElseThrow();
        // the previous version's claim commits right after alice's new one, and the watch delivers both before the
        // new claim's writer is answered
        AtomicBoolean once = new AtomicBoolean();
        r.cluster.addAnswerListener((method, path, answer) -> {
            if (method.equals("PATCH") && path.startsWith(PODS) && !path.equals(podPath(LEGACY_POD))
                    && once.compareAndSet(false, true)) {
                r.cluster.patchInStore(podPath(LEGACY_POD), legacyClaim(cmd("written-by-the-previous-version")));
                r.watch.release();
            }
        });

        Allocator.Allocation a = r.allocator.allocate(next, ALICE.current());

        assertThat(once).isTrue();
        assertThat(r.carriers(next.keyHash())).containsExactly(ManagedPods.name(a.pod()));
        assertThat(alicesClaims()).isEqualTo(2);
    }
}
