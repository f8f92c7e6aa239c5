package io.unboundedcloud.playpen.kube;

import static io.unboundedcloud.playpen.kube.ScriptedReplica.KIND;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.cmd;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;

/**
 * The allocation core with replica lanes, step by step against a scripted watch: lanes only change where a request
 * looks first; which claim of a key stands is still the claim ledger's.
 */
class ReplicaLanesRulesTest {
    static final String OTHER = ReplicaLanes.idOf("replica-2");
    ScriptedReplica r;

    @AfterEach
    void stop() {
        if (r != null) {
            r.close();
        }
    }

    /** The lanes have seen the other replica claim (the pod cache tells its listeners on a thread of its own). */
    private static void awaitTwoLanes(ReplicaLanes lanes) throws InterruptedException {
        OperatorHarness.awaitTrue(() -> lanes.replicas() == 2, Duration.ofSeconds(60), "the other replica seen");
    }

    /** Claims {@code pod} for {@code key} as the other replica does, claimed-by and all. */
    private void claimByOther(String pod, AllocCommand key) {
        r.claimElsewhere(pod, key, null);
        r.edit(pod, b -> b.editMetadata().addToAnnotations(PlaypenKeys.CLAIMED_BY, OTHER).endMetadata());
    }

    @Test
    void aClaimInThisReplicasLaneThatLostToAnEarlierOneInAnothersIsRolledBackAndTheEarlierOneReplayed()
            throws Exception {
        ReplicaLanes lanes = new ReplicaLanes("replica-1");
        r = new ScriptedReplica(10, 0, lanes);
        // the other replica is seen claiming (another key): two lanes now
        String warm = ScriptedReplica.runner(9);
        claimByOther(warm, cmd("elsewhere"));
        awaitTwoLanes(lanes);
        // a key whose walk starts in the other replica's lane (on one shared ring this replica would write there
        // first) and meets no other key's claim in this replica's lane before its first pod there
        AllocCommand key = null;
        String earlier = null;
        String mine = null;
        for (int i = 0; mine == null; i++) {
            key = cmd("lanes-race-" + i);
            List<String> order = new ArrayList<>();
            r.pods.ring(KIND, Hashes.seed(key.keyHash())).forEachRemaining(order::add);
            String first = order.stream().filter(lanes::mine).findFirst().orElseThrow();
            if (!lanes.mine(order.get(0)) && !order.get(0).equals(warm) && !first.equals(warm)) {
                earlier = order.get(0);
                mine = first;
            }
        }
        // the other replica's claim of the key lands first; this replica's watch shows it only after its own claim
        r.watch.hold();
        claimByOther(earlier, key);
        AtomicReference<Pod> written = new AtomicReference<>();
        String keyHash = key.keyHash();
        String own = mine;
        r.watch.whenRelayed(e -> name(e.pod()).equals(own) && keyHash.equals(ManagedPods.keyHash(e.pod())),
                e -> {
                    written.set(e.pod());
                    r.watch.release();
                });
        Allocator.Allocation a = r.allocator.allocate(key);
        assertThat(name(a.pod())).isEqualTo(earlier);
        assertThat(a.replay()).isTrue();
        assertThat(written.get()).as("this replica's claim went to its own lane").isNotNull();
        assertThat(ManagedPods.annotations(written.get())).as("the claim written in its own lane")
                .containsEntry(PlaypenKeys.CLAIMED_BY, lanes.self());
        assertThat(r.carriers(key.keyHash())).containsExactly(earlier);
        assertThat(ManagedPods.isClaimed(r.inApi(mine))).isFalse();
        assertThat(ManagedPods.annotations(r.inApi(mine))).doesNotContainKey(PlaypenKeys.CLAIMED_BY);
        assertThat(r.allocator.rollbacks()).isEqualTo(1);
    }

    @Test
    void whenItsLaneHasNothingToClaimTheWalkTakesAPodOfAnotherLane() throws Exception {
        ReplicaLanes lanes = new ReplicaLanes("replica-1");
        r = new ScriptedReplica(6, 0, lanes);
        List<String> all = new ArrayList<>();
        r.pods.ring(KIND, 0).forEachRemaining(all::add);
        claimByOther(all.get(0), cmd("elsewhere"));
        awaitTwoLanes(lanes);
        // every pod of this replica's lane taken by the other replica
        int n = 0;
        for (String p : all.subList(1, all.size())) {
            if (lanes.mine(p)) {
                claimByOther(p, cmd("taken-" + n++));
            }
        }
        assertThat(n).as("this replica has a lane").isPositive();
        Allocator.Allocation a = r.allocator.allocate(cmd("spill-over"));
        assertThat(a.replay()).isFalse();
        assertThat(lanes.mine(name(a.pod()))).isFalse();
        assertThat(ManagedPods.annotations(r.inApi(name(a.pod())))).containsEntry(PlaypenKeys.CLAIMED_BY, lanes.self());
    }

    private static String name(Pod p) {
        return p.getMetadata().getName();
    }
}
