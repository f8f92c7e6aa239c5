package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.Watcher.Action;
import io.unboundedcloud.playpen.model.AllocViews;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * How pod events become allocation events: a pod whose allocation shows is ADDED, then MODIFIED (its delete asked
 * for: a deletionTimestamp); the allocation goes (DELETED, with the version of its going) when the pod does, when
 * its claim is released from it, or when it shows another allocation (then that one is ADDED); pods whose
 * allocation the caller may not see send nothing.
 */
class AllocWatchTest {
    static final ObjectMapper M = new ObjectMapper();
    final WatchStream stream = new WatchStream.Registry(1, 1, 1).open("alice", 60_000);
    final AllocViews.Query query = AllocViews.parseQuery(null, "watch=1", null);
    final TtlPolicy leases = new TtlPolicy(Duration.ofHours(1));

    AllocWatch watch(String owner) {
        return watch(owner, id -> true);
    }

    /** {@code shown}: whether this replica shows an allocation (false: its claim judged lost). */
    AllocWatch watch(String owner, java.util.function.Predicate<String> shown) {
        java.util.function.Function<Pod, Optional<AllocViews.Alloc>> named = p -> AllocViews.selectMatching(List.of(p),
                n -> Optional.of("203.0.113.10"), leases, owner::equals, query).items().stream().findFirst();
        return new AllocWatch(stream, p -> named.apply(p).filter(a -> shown.test(a.name())), named, query,
                Clock.systemUTC());
    }

    static Pod pod(String rv, String id, String owner, boolean deleting) {
        PodBuilder b = TestCluster.readyRunner("amd64", 51820, "node-a").editMetadata().withName("runner-1")
                .withResourceVersion(rv).endMetadata();
        if (id != null) {
            b.editMetadata().addToLabels(PlaypenKeys.ALLOCATED, id)
                    .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "k".repeat(64))
                    .addToAnnotations(PlaypenKeys.OWNER_HASH, owner).endMetadata();
        }
        if (deleting) {
            b.editMetadata().withDeletionTimestamp("2026-12-01T00:00:00Z").endMetadata();
        }
        return b.build();
    }

    List<String> events() throws Exception {
        List<String> out = new java.util.ArrayList<>();
        for (String line : stream.held()) {
            JsonNode e = M.readTree(line);
            out.add(e.path("type").asText() + " " + e.path("object").path("metadata").path("name").asText() + "@"
                    + e.path("object").path("metadata").path("resourceVersion").asText()
                    + (e.path("object").path("metadata").has("deletionTimestamp") ? " deleting" : ""));
        }
        return out;
    }

    /** The open watches are a gauge; one that ends leaves it, and so do all when the replica stops. */
    @Test
    void openWatchesAreCountedUntilTheyEnd() {
        WatchStream.Registry watches = new WatchStream.Registry(3, 2, 1);
        OperatorMetrics metrics = new OperatorMetrics();
        metrics.bindWatches(watches);
        WatchStream first = watches.open("alice", 60_000);
        watches.open("alice", 60_000);
        assertThat(metrics.registry().scrape()).contains("playpen_alloc_watches 2.0");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> watches.open("alice", 60_000))
                .hasMessageContaining("too many watches are open of yours on this operator replica (2)");
        watches.open("bob", 60_000);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> watches.open("carol", 60_000))
                .hasMessageContaining("too many watches are open on this operator replica (3)");
        first.end(null);
        first.end(null);
        assertThat(metrics.registry().scrape()).contains("playpen_alloc_watches 2.0");
        watches.open("alice", 60_000);
        watches.close();
        assertThat(metrics.registry().scrape()).contains("playpen_alloc_watches 0.0");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> watches.open("bob", 60_000))
                .hasMessageContaining("this operator replica is stopping");
    }

    @Test
    void aClaimedPodsAllocationComesIsBeingDeletedAndGoes() throws Exception {
        AllocWatch w = watch("alice");
        w.eventReceived(Action.ADDED, pod("10", null, null, false));
        w.eventReceived(Action.MODIFIED, pod("11", "aaaaaaaaaaaaaaaa", "alice", false));
        w.eventReceived(Action.MODIFIED, pod("12", "aaaaaaaaaaaaaaaa", "alice", true));
        w.eventReceived(Action.DELETED, pod("13", "aaaaaaaaaaaaaaaa", "alice", true));
        assertThat(events()).containsExactly("ADDED aaaaaaaaaaaaaaaa@11", "MODIFIED aaaaaaaaaaaaaaaa@12 deleting",
                "DELETED aaaaaaaaaaaaaaaa@13 deleting");
    }

    @Test
    void aReleasedOrReclaimedPodEndsItsAllocationAndAnotherUsersSendNothing() throws Exception {
        AllocWatch w = watch("alice");
        w.eventReceived(Action.MODIFIED, pod("20", "aaaaaaaaaaaaaaaa", "alice", false));
        w.eventReceived(Action.MODIFIED, pod("21", "bbbbbbbbbbbbbbbb", "alice", false));
        w.eventReceived(Action.MODIFIED, pod("22", null, null, false));
        w.eventReceived(Action.MODIFIED, pod("23", "cccccccccccccccc", "bob", false));
        w.eventReceived(Action.DELETED, pod("24", "cccccccccccccccc", "bob", false));
        // a pod the client knew from its list (not from this watch) that is deleted: named by its last state
        w.eventReceived(Action.DELETED, pod("25", "dddddddddddddddd", "alice", false));
        assertThat(events()).containsExactly("MODIFIED aaaaaaaaaaaaaaaa@20", "DELETED aaaaaaaaaaaaaaaa@21",
                "ADDED bbbbbbbbbbbbbbbb@21", "DELETED bbbbbbbbbbbbbbbb@22", "DELETED dddddddddddddddd@25");
    }

    /**
     * A claim this replica judged lost is not shown (as a list does not show it), but its going is still sent: the
     * client may have listed it while it was undecided, and must not keep it.
     */
    @Test
    void aLostClaimIsNotShownButItsGoingIsSent() throws Exception {
        AllocWatch w = watch("alice", id -> !id.equals("eeeeeeeeeeeeeeee"));
        w.eventReceived(Action.MODIFIED, pod("30", "eeeeeeeeeeeeeeee", "alice", false));
        w.eventReceived(Action.DELETED, pod("31", "eeeeeeeeeeeeeeee", "alice", false));
        assertThat(events()).containsExactly("DELETED eeeeeeeeeeeeeeee@31");
    }

    static Pod bookmark(String rv) {
        return new PodBuilder().withNewMetadata().withResourceVersion(rv).endMetadata().build();
    }

    /** A quiet watch moves its client's version on with the API server's bookmarks, when the client asked for them. */
    @Test
    void aBookmarkOfThePodsWatchIsSentWhenTheClientAskedForBookmarks() throws Exception {
        AllocViews.Query asked = AllocViews.parseQuery(null, "watch=1&allowWatchBookmarks=true", null);
        AllocWatch w = new AllocWatch(stream, p -> Optional.empty(), p -> Optional.empty(), asked, Clock.systemUTC());
        w.eventReceived(Action.BOOKMARK, bookmark("42"));
        List<String> held = stream.held();
        assertThat(held).hasSize(1);
        JsonNode e = M.readTree(held.get(0));
        assertThat(e.path("type").asText()).isEqualTo("BOOKMARK");
        assertThat(e.path("object").path("kind").asText()).isEqualTo("Alloc");
        assertThat(e.path("object").path("apiVersion").asText()).isEqualTo(PlaypenKeys.GROUP_VERSION);
        assertThat(e.path("object").path("metadata").path("resourceVersion").asText()).isEqualTo("42");
        assertThat(e.path("object").path("metadata").has("annotations")).as("not the initial events' end").isFalse();
    }

    @Test
    void noBookmarkIsSentWhenTheClientDidNotAskForBookmarks() {
        watch("o1").eventReceived(Action.BOOKMARK, bookmark("42"));
        assertThat(stream.held()).isEmpty();
    }
}
