package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.TestCluster;

/** Which replicas share the ring, learned from the claims the watch delivers, and which pods are whose. */
class ReplicaLanesTest {
    final AtomicLong now = new AtomicLong(1_000_000_000L);

    ReplicaLanes lanes(String identity) {
        return new ReplicaLanes(identity, now::get);
    }

    static Pod claimedBy(String replica) {
        return new PodBuilder(TestCluster.readyRunner("amd64", 51820, "node-a").build()).editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32))
                .addToAnnotations(PlaypenKeys.CLAIMED_BY, replica).endMetadata().build();
    }

    static List<String> names(int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add("playpen-runner-amd64-" + (20000 + i));
        }
        return out;
    }

    @Test
    void aloneEveryPodIsMine() {
        ReplicaLanes a = lanes("a");
        assertThat(a.replicas()).isEqualTo(1);
        assertThat(names(200)).allMatch(a::mine);
        assertThat(a.self()).hasSize(16).matches("[0-9a-f]+").isNotEqualTo(lanes("b").self());
    }

    @Test
    void replicasThatSeeEachOthersClaimsSplitThePodsBetweenThem() {
        ReplicaLanes a = lanes("a");
        ReplicaLanes b = lanes("b");
        ReplicaLanes c = lanes("c");
        for (ReplicaLanes x : List.of(a, b, c)) {
            for (ReplicaLanes y : List.of(a, b, c)) {
                x.onPodEvent(PodCache.Change.UPDATED, claimedBy(y.self()));
            }
        }
        assertThat(a.replicas()).isEqualTo(3);
        Map<ReplicaLanes, Integer> owned = new HashMap<>();
        for (String name : names(3000)) {
            List<ReplicaLanes> owners = List.of(a, b, c).stream().filter(x -> x.mine(name)).toList();
            assertThat(owners).as(name).hasSize(1);
            owned.merge(owners.get(0), 1, Integer::sum);
        }
        assertThat(owned.values()).allSatisfy(n -> assertThat(n).isBetween(800, 1200));

        // c stops claiming: once it lapses, only its pods change hands, and a and b agree on them again
        now.addAndGet(ReplicaLanes.MEMBER_TTL_NANOS / 2);
        a.onPodEvent(PodCache.Change.UPDATED, claimedBy(b.self()));
        b.onPodEvent(PodCache.Change.UPDATED, claimedBy(a.self()));
        now.addAndGet(ReplicaLanes.MEMBER_TTL_NANOS / 2 + 1);
        assertThat(a.replicas()).isEqualTo(2);
        assertThat(b.replicas()).isEqualTo(2);
        for (String name : names(3000)) {
            assertThat(a.mine(name)).as(name).isNotEqualTo(b.mine(name));
        }
        // nobody seen for a while: alone again
        now.addAndGet(ReplicaLanes.MEMBER_TTL_NANOS);
        assertThat(a.replicas()).isEqualTo(1);
        assertThat(names(100)).allMatch(a::mine);
    }

    @Test
    void onlyOtherReplicasClaimsCount() {
        ReplicaLanes a = lanes("a");
        a.onPodEvent(PodCache.Change.UPDATED, claimedBy(a.self()));
        a.onPodEvent(PodCache.Change.DELETED, claimedBy(lanes("b").self()));
        a.onPodEvent(PodCache.Change.UPDATED, claimedBy("not-a-replica-id"));
        a.onPodEvent(PodCache.Change.UPDATED, claimedBy("ZZZZZZZZZZZZZZZZ"));
        Pod unclaimed = new PodBuilder(TestCluster.readyRunner("amd64", 51820, "node-a").build()).editMetadata()
                .addToAnnotations(PlaypenKeys.CLAIMED_BY, lanes("c").self()).endMetadata().build();
        a.onPodEvent(PodCache.Change.UPDATED, unclaimed);
        assertThat(a.replicas()).isEqualTo(1);
        a.onPodEvent(PodCache.Change.ADDED, claimedBy(lanes("b").self()));
        assertThat(a.replicas()).isEqualTo(2);
    }

    @Test
    void aReplicaLapsesExactlyWhenItHasNotBeenSeenForTheWholeTtl() {
        lapsesExactlyAtItsTtl();
    }

    @Test
    void aReplicaLapsesOnTimeWhenTheClockReadsNegative() {
        // System.nanoTime counts from an arbitrary origin: its values may be negative
        now.set(-4_000_000_000_000_000_000L);
        lapsesExactlyAtItsTtl();
    }

    private void lapsesExactlyAtItsTtl() {
        ReplicaLanes a = lanes("a");
        long seenAt = now.get();
        a.onPodEvent(PodCache.Change.UPDATED, claimedBy(lanes("b").self()));
        assertThat(a.replicas()).isEqualTo(2);
        now.set(seenAt + ReplicaLanes.MEMBER_TTL_NANOS - 1);
        assertThat(a.replicas()).as("one nanosecond before its TTL").isEqualTo(2);
        now.set(seenAt + ReplicaLanes.MEMBER_TTL_NANOS);
        assertThat(a.replicas()).as("at its TTL").isEqualTo(1);
        assertThat(names(50)).allMatch(a::mine);
        // seen again: back at once, and its TTL counts from the new sighting
        long again = now.get();
        a.onPodEvent(PodCache.Change.UPDATED, claimedBy(lanes("b").self()));
        assertThat(a.replicas()).isEqualTo(2);
        now.set(again + ReplicaLanes.MEMBER_TTL_NANOS - 1);
        assertThat(a.replicas()).isEqualTo(2);
        now.set(again + ReplicaLanes.MEMBER_TTL_NANOS);
        assertThat(a.replicas()).isEqualTo(1);
    }

    @Test
    void readingTheLanesReadsTheClockOnceUntilASightingCanHaveLapsed() {
        AtomicLong reads = new AtomicLong();
        LongSupplier clock = () -> {
            reads.incrementAndGet();
            return now.get();
        };
        ReplicaLanes a = new ReplicaLanes("a", clock);
        // a lookup reads the clock once; a second read is the re-check of who lapsed, under the lock, which is only
        // due once the oldest sighting reaches its TTL. Alone, long after starting: nothing can lapse
        now.addAndGet(ReplicaLanes.MEMBER_TTL_NANOS);
        reads.set(0);
        for (int i = 0; i < 10; i++) {
            assertThat(a.replicas()).isEqualTo(1);
        }
        assertThat(reads.get()).as("clock reads of 10 lookups, alone").isEqualTo(10);

        long seenAt = now.get();
        a.onPodEvent(PodCache.Change.UPDATED, claimedBy(lanes("b").self()));
        now.set(seenAt + ReplicaLanes.MEMBER_TTL_NANOS - 1);
        reads.set(0);
        for (String name : names(10)) {
            a.mine(name);
        }
        assertThat(a.replicas()).isEqualTo(2);
        assertThat(reads.get()).as("clock reads of 11 lookups before the sighting's TTL").isEqualTo(11);

        // the re-check at the TTL: b lapses, and alone again nothing is checked until a new sighting
        now.set(seenAt + ReplicaLanes.MEMBER_TTL_NANOS);
        assertThat(a.replicas()).isEqualTo(1);
        now.addAndGet(ReplicaLanes.MEMBER_TTL_NANOS * 10);
        reads.set(0);
        for (int i = 0; i < 10; i++) {
            assertThat(a.replicas()).isEqualTo(1);
        }
        assertThat(reads.get()).as("clock reads of 10 lookups, alone again").isEqualTo(10);
    }
}
