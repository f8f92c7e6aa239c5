package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.support.TestCluster;

/** The lazy hot-path walk yields exactly the order and the usable set of the full selection. */
class CandidatesWalkTest {
    @Test
    void walkMatchesSelectOrderAndSkipsUnusableOnesLazily() {
        List<Pod> pods = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            var b = TestCluster.readyRunner(i % 3 == 0 ? "arm64" : "amd64", 51820 + i, i % 7 == 0 ? "node-noip" : "node-a");
            if (i % 5 == 0) {
                b.editStatus().withPhase("Pending").endStatus();
            }
            if (i % 11 == 0) {
                b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32)).endMetadata();
            }
            pods.add(b.build());
        }
        Candidates c = new Candidates(Map.of("app.kubernetes.io/name", "playpen-runner"));
        for (String key : List.of("k1", "k2", "another key")) {
            AllocCommand cmd = new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64");
            var lookup = (java.util.function.Function<String, Optional<String>>) n ->
                    "node-a".equals(n) ? Optional.of("203.0.113.10") : Optional.empty();
            List<String> expected = c.select(cmd, pods, lookup).ordered().stream()
                    .map(u -> u.pod().getMetadata().getName()).toList();
            List<String> walked = new ArrayList<>();
            Candidates.Walk walk = c.walk(cmd, pods, lookup);
            for (var u = walk.next(); u.isPresent(); u = walk.next()) {
                walked.add(u.get().pod().getMetadata().getName());
            }
            assertThat(expected).isNotEmpty();
            assertThat(walked).isEqualTo(expected);
        }
    }

    @Test
    void idleKindKeyAgreesWithTheKindAndClaimChecks() {
        Candidates c = new Candidates(Map.of("app.kubernetes.io/name", "playpen-runner"));
        List<Pod> pods = List.of(
                TestCluster.readyRunner("amd64", 1, "n").build(),
                TestCluster.readyRunner("arm64", 2, "n").build(),
                TestCluster.readyRunner("amd64", 3, "n").editMetadata()
                        .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32)).endMetadata().build(),
                TestCluster.readyRunner("amd64", 4, "n").editMetadata()
                        .addToLabels("app.kubernetes.io/name", "something-else").endMetadata().build(),
                TestCluster.readyControlPlane("v1.33.0", 5, "n", "k").build(),
                TestCluster.readyControlPlane("v1.32.1", 6, "n", "k").build());
        List<AllocCommand> cmds = List.of(
                new AllocCommand(Hashes.keyHash("a"), ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64"),
                new AllocCommand(Hashes.keyHash("b"), ResourceType.RUNNER, "", TestCluster.wgKey(1), "arm64"),
                new AllocCommand(Hashes.keyHash("c"), ResourceType.CONTROL_PLANE, "v1.33.0", "", "amd64"),
                new AllocCommand(Hashes.keyHash("d"), ResourceType.CONTROL_PLANE, "v1.32.1", "", "amd64"));
        for (AllocCommand cmd : cmds) {
            for (Pod p : pods) {
                boolean indexed = Candidates.idleKindKey(cmd).equals(c.idleKindKey(p));
                assertThat(indexed).as("%s for %s", p.getMetadata().getName(), cmd)
                        .isEqualTo(c.isOfKind(cmd, p) && !ManagedPods.isClaimed(p));
            }
        }
        assertThat(c.idleKindKey(pods.get(2))).isNull();
        assertThat(c.idleKindKey(pods.get(3))).isNull();
    }
}
