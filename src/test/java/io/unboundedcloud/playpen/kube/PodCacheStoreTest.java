package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.kube.ClaimLedger.Claim;
import io.unboundedcloud.playpen.kube.ClaimLedger.Standing;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.SlimPods;
import io.unboundedcloud.playpen.support.ScriptedWatch;
import io.unboundedcloud.playpen.support.TestCluster;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.UniqueElements;

/**
 * The pod cache's store, driven one watch event at a time ({@link ScriptedWatch}): its rings, its claim ledger and
 * the order guard that decides which events are judged exactly, the waits for the watch to reach a version, and the
 * overlay of this process's own writes. Every event is applied on the test's thread, so each assertion sees exactly
 * the events delivered before it.
 */
class PodCacheStoreTest {
    private static final String KIND = "runner/amd64";
    private static final String K1 = Hashes.keyHash("one");
    private static final String K2 = Hashes.keyHash("two");
    private static final String OWNER = Hashes.ownerHash("alice");
    private static final Candidates CANDIDATES = new Candidates(Map.of());

    private final List<PodCache> caches = new ArrayList<>();

    @AfterEach
    void close() {
        caches.forEach(PodCache::close);
    }

    /** A started cache whose LIST answered {@code listed} at resourceVersion {@code listRv}. */
    private PodCache started(ScriptedWatch watch, long listRv, Pod... listed) throws Exception {
        watch.listing(listRv, List.of(listed));
        PodCache pods = new PodCache(watch.client(), TestCluster.NS, CANDIDATES::kindKey);
        caches.add(pods);
        pods.start();
        watch.awaitWatching();
        return pods;
    }

    static String name(int n) {
        return "playpen-runner-amd64-" + (51820 + n);
    }

    static Pod idle(int n, long rv) {
        return TestCluster.readyRunner("amd64", 51820 + n, "node-a").editMetadata().withUid("uid-" + n)
                .withResourceVersion(String.valueOf(rv)).endMetadata().build();
    }

    static Pod claimed(int n, long rv, String key) {
        return new PodBuilder(idle(n, rv)).editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key)
                .endMetadata().build();
    }

    static Pod owned(int n, long rv, String key, String owner) {
        return new PodBuilder(claimed(n, rv, key)).editMetadata().addToAnnotations(PlaypenKeys.OWNER_HASH, owner)
                .endMetadata().build();
    }

    static Pod at(Pod p, long rv) {
        return new PodBuilder(p).editMetadata().withResourceVersion(String.valueOf(rv)).endMetadata().build();
    }

    private static List<String> names(Iterator<String> it) {
        List<String> out = new ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }

    private static List<String> names(java.util.Collection<Pod> pods) {
        return pods.stream().map(ManagedPods::name).sorted().toList();
    }

    // ---- the rings

    /** The ring a walk goes round: every pod of the kind, claimed or not, by unsigned position, from the start. */
    @Property(tries = 40)
    void aWalkVisitsEveryPodOfTheKindOnceClockwiseFromItsStart(
            @ForAll @Size(min = 1, max = 12) @UniqueElements List<@IntRange(min = 0, max = 400) Integer> ports,
            @ForAll long start, @ForAll @Size(max = 12) List<Boolean> claimedFlags) throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        List<Pod> listed = new ArrayList<>();
        for (int i = 0; i < ports.size(); i++) {
            boolean claimed = i < claimedFlags.size() && claimedFlags.get(i);
            listed.add(claimed ? claimed(ports.get(i), 5, Hashes.keyHash("k" + i)) : idle(ports.get(i), 5));
        }
        // another kind and a pod of no kind never show
        listed.add(TestCluster.readyRunner("arm64", 52000, "node-a").editMetadata().withResourceVersion("5")
                .endMetadata().build());
        listed.add(new PodBuilder().withNewMetadata().withName("stranger").withNamespace(TestCluster.NS)
                .withResourceVersion("5").endMetadata().build());
        PodCache pods = started(watch, 9, listed.toArray(Pod[]::new));
        try {
            List<String> sorted = ports.stream().map(PodCacheStoreTest::name)
                    .sorted(Comparator.<String, Long>comparing(Hashes::ringPosition, Long::compareUnsigned)
                            .thenComparing(Comparator.naturalOrder()))
                    .toList();
            int first = 0;
            while (first < sorted.size() && Long.compareUnsigned(Hashes.ringPosition(sorted.get(first)), start) < 0) {
                first++;
            }
            List<String> expected = new ArrayList<>(sorted.subList(first, sorted.size()));
            expected.addAll(sorted.subList(0, first));
            assertThat(names(pods.ring(KIND, start))).isEqualTo(expected);
            assertThat(pods.ringSize(KIND)).isEqualTo(ports.size());
            assertThat(names(pods.ring("runner/arm64", start))).containsExactly("playpen-runner-arm64-52000");
        } finally {
            pods.close();
            caches.remove(pods);
        }
    }

    @Test
    void aWalkThatStartsExactlyAtAPodBeginsWithThatPod() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5), idle(1, 5), idle(2, 5));
        for (int n = 0; n < 3; n++) {
            assertThat(pods.ring(KIND, Hashes.ringPosition(name(n))).next()).isEqualTo(name(n));
            // one past its position: it comes last
            assertThat(names(pods.ring(KIND, Hashes.ringPosition(name(n)) + 1))).hasSize(3).last().isEqualTo(name(n));
        }
        assertThat(pods.ring("controlPlane/v1.31", 0).hasNext()).isFalse();
        assertThat(pods.ringSize("controlPlane/v1.31")).isZero();
    }

    @Test
    void aPodKeepsItsPlaceWhileClaimedAndLeavesWhenItsKindGoesOrItIsDeleted() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5), idle(1, 5));
        List<String> before = names(pods.ring(KIND, 0));
        watch.modified(claimed(0, 10, K1));
        assertThat(names(pods.ring(KIND, 0))).isEqualTo(before);
        watch.modified(idle(0, 11));
        assertThat(names(pods.ring(KIND, 0))).isEqualTo(before);
        // relabelled to another architecture: it moves to that kind's ring
        watch.modified(new PodBuilder(idle(0, 12)).editMetadata().addToLabels(PlaypenKeys.ARCHITECTURE, "arm64")
                .endMetadata().build());
        assertThat(names(pods.ring(KIND, 0))).containsExactly(name(1));
        assertThat(names(pods.ring("runner/arm64", 0))).containsExactly(name(0));
        // no kind any more (not a managed pod): off every ring
        watch.modified(new PodBuilder(idle(0, 13)).editMetadata().withLabels(Map.of()).endMetadata().build());
        assertThat(pods.ringSize("runner/arm64")).isZero();
        assertThat(pods.ringSize(KIND)).isEqualTo(1);
        watch.modified(idle(0, 14));
        assertThat(pods.ringSize(KIND)).isEqualTo(2);
        watch.deleted(idle(1, 14), 15);
        assertThat(names(pods.ring(KIND, 0))).containsExactly(name(0));
        assertThat(pods.get(name(1))).isEmpty();
    }

    // ---- the ledger, judged in commit order

    @Test
    void claimsSeenInTheListAreUndecidedAndClaimsSeenAtTheirCommitAreJudged() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, claimed(0, 5, K1), idle(1, 6), idle(2, 7), idle(3, 8));
        assertThat(pods.claimOn(name(0)).orElseThrow().standing()).isEqualTo(Standing.UNKNOWN);
        watch.modified(owned(1, 10, K2, OWNER));
        watch.modified(owned(2, 11, K2, OWNER));
        assertThat(pods.claimsOf(K2)).extracting(Claim::pod, Claim::standing)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(name(1), Standing.WON),
                        org.assertj.core.groups.Tuple.tuple(name(2), Standing.LOST));
        assertThat(pods.claimsOfOwner(OWNER)).extracting(Claim::pod).containsExactly(name(1), name(2));
        assertThat(pods.lostClaims()).extracting(l -> l.claim().pod(), l -> l.pod().getMetadata().getResourceVersion())
                .containsExactly(org.assertj.core.groups.Tuple.tuple(name(2), "11"));
        assertThat(pods.claimOn(name(3))).isEmpty();
        // the pod's delete takes its claim off the ledger
        watch.deleted(owned(2, 11, K2, OWNER), 12);
        assertThat(pods.claimsOf(K2)).extracting(Claim::pod).containsExactly(name(1));
        assertThat(pods.lostClaims()).isEmpty();
        assertThat(pods.claimOn(name(2))).isEmpty();
    }

    @Test
    void anEventOutOfCommitOrderStopsExactJudgementUntilTheNextList() throws Exception {
        ListAppender<ILoggingEvent> log = capture();
        try {
            ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
            PodCache pods = started(watch, 9, idle(0, 5), idle(1, 6), idle(2, 7), idle(3, 8));
            watch.modified(claimed(0, 10, K1));
            assertThat(pods.claimOn(name(0)).orElseThrow().standing()).isEqualTo(Standing.WON);
            // the same version again: not after the last one
            watch.modified(claimed(1, 10, K2));
            assertThat(pods.claimOn(name(1)).orElseThrow().standing()).isEqualTo(Standing.UNKNOWN);
            // and nothing after it is judged exactly either, even in order
            watch.modified(claimed(2, 11, Hashes.keyHash("three")));
            watch.modified(claimed(3, 12, K1));
            assertThat(pods.claimOn(name(2)).orElseThrow().standing()).isEqualTo(Standing.UNKNOWN);
            assertThat(pods.claimOn(name(3)).orElseThrow().standing()).isEqualTo(Standing.UNKNOWN);
            assertThat(warnings(log)).containsExactly(
                    "pod watch delivered resourceVersion 10 after 10: new claims are not judged from this watch until it "
                            + "relists");
            // the watch expires and relists: judged exactly again from the LIST's version on
            watch.listing(20, List.of(claimed(0, 10, K1), idle(1, 13), idle(2, 14), idle(3, 15)));
            watch.gone();
            watch.modified(claimed(1, 21, K2));
            assertThat(pods.claimOn(name(1)).orElseThrow().standing()).isEqualTo(Standing.WON);
            watch.modified(claimed(2, 22, K2));
            assertThat(pods.claimOn(name(2)).orElseThrow().standing()).isEqualTo(Standing.LOST);
            assertThat(pods.claimOn(name(3))).as("gone from the ledger with the relist").isEmpty();
        } finally {
            release(log);
        }
    }

    @Test
    void anOlderEventIsOutOfOrderToo() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5), idle(1, 6));
        watch.modified(claimed(0, 8, K1));
        assertThat(pods.claimOn(name(0)).orElseThrow().standing()).isEqualTo(Standing.UNKNOWN);
    }

    @Test
    void aDeleteOutOfOrderStopsExactJudgementToo() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5), idle(1, 6));
        watch.deleted(idle(0, 5), 9);
        assertThat(pods.get(name(0))).isEmpty();
        watch.modified(claimed(1, 10, K1));
        assertThat(pods.claimOn(name(1)).orElseThrow().standing()).isEqualTo(Standing.UNKNOWN);
    }

    @Test
    void aWatchFromVersionOneJudgesExactlyAndAWatchWithoutAVersionNever() throws Exception {
        ScriptedWatch one = new ScriptedWatch(TestCluster.NS);
        PodCache exact = started(one, 1, idle(0, 1));
        one.modified(claimed(0, 2, K1));
        assertThat(exact.claimOn(name(0)).orElseThrow().standing()).isEqualTo(Standing.WON);

        ScriptedWatch zero = new ScriptedWatch(TestCluster.NS);
        PodCache unordered = started(zero, 0, idle(0, 1));
        zero.modified(claimed(0, 2, K1));
        assertThat(unordered.claimOn(name(0)).orElseThrow().standing()).isEqualTo(Standing.UNKNOWN);
    }

    @Test
    void aRelistDropsThePodsDeletedWhileTheWatchWasDown() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5), claimed(1, 6, K1), idle(2, 7));
        watch.listing(30, List.of(idle(0, 5)));
        watch.gone();
        assertThat(names(pods.pods())).containsExactly(name(0));
        assertThat(names(pods.ring(KIND, 0))).containsExactly(name(0));
        assertThat(pods.claimsOf(K1)).isEmpty();
        assertThat(pods.get(name(1))).isEmpty();
        assertThat(watch.lists()).isEqualTo(2);
    }

    // ---- waiting for the watch

    @Test
    void awaitClaimCompletesOnceTheWatchHasAppliedThatVersion() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5), idle(1, 6));
        watch.modified(claimed(0, 10, K1));
        // already there: at once, with the ledger's verdict (the version itself, and any older one)
        assertThat(pods.awaitClaim(name(0), 10).getNow(null)).map(Claim::standing).contains(Standing.WON);
        assertThat(pods.awaitClaim(name(0), 9).getNow(null)).map(Claim::keyHash).contains(K1);

        CompletableFuture<Optional<Claim>> later = pods.awaitClaim(name(0), 12);
        CompletableFuture<Optional<Claim>> other = pods.awaitClaim(name(1), 11);
        assertThat(later).isNotDone();
        watch.modified(at(claimed(0, 10, K1), 11));
        assertThat(later).as("an older version does not complete it").isNotDone();
        assertThat(other).as("nor another pod's").isNotDone();
        watch.modified(idle(1, 12));
        assertThat(other.getNow(null)).as("the pod carries no claim at that version").isEmpty();
        assertThat(later).isNotDone();
        watch.modified(at(claimed(0, 10, K1), 13));
        assertThat(later.getNow(null)).map(Claim::claimRv).contains(10L);
    }

    @Test
    void awaitClaimOfAPodTheWatchNoLongerHasCompletesEmptyOnlyOnceTheWatchIsPastThatVersion() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5));
        // not stored, and the watch is at 9: a version up to 9 of it is gone already
        assertThat(pods.awaitClaim(name(3), 9).getNow(null)).isEmpty();
        assertThat(pods.awaitClaim(name(3), 1).getNow(null)).isEmpty();
        CompletableFuture<Optional<Claim>> ahead = pods.awaitClaim(name(3), 10);
        assertThat(ahead).as("the watch may still deliver version 10").isNotDone();
        watch.added(claimed(3, 10, K1));
        assertThat(ahead.getNow(null)).map(Claim::keyHash).contains(K1);

        // a pod deleted while someone waits for a version of it (up to the delete's: a later one is a new pod's)
        CompletableFuture<Optional<Claim>> deleted = pods.awaitClaim(name(0), 11);
        CompletableFuture<Optional<Claim>> cancelled = pods.awaitClaim(name(0), 30);
        cancelled.cancel(false);
        watch.deleted(idle(0, 5), 11);
        assertThat(deleted.getNow(null)).isEmpty();
        assertThat(cancelled).isCancelled();
    }

    /**
     * Pod names come back: the pool makes a pod again under the name of one it deleted. A request that claimed the new
     * pod waits for its claim's version; the old pod's delete, at an earlier version, is not the watch getting there,
     * and must not answer "no claim on it" (the request would take its own claim for gone, and hand it out as a
     * replay, or answer 503 while it holds it). A delete answers only the waits for versions up to its own.
     */
    @Test
    void theOldPodsDeleteDoesNotEndAWaitForTheClaimOfTheNewPodOfThatName() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5));
        CompletableFuture<Optional<Claim>> gone = pods.awaitClaim(name(0), 10);
        CompletableFuture<Optional<Claim>> mine = pods.awaitClaim(name(0), 12);
        watch.deleted(idle(0, 5), 10);
        assertThat(gone.getNow(null)).as("gone at 10").isEmpty();
        assertThat(mine).as("the watch is at 10, not yet at the new pod's claim").isNotDone();
        watch.added(reborn(idle(0, 11)));
        assertThat(mine).isNotDone();
        watch.modified(reborn(claimed(0, 12, K1)));
        assertThat(mine.getNow(null)).map(Claim::standing).contains(Standing.WON);
    }

    /** The same across a relist: a pod the LIST no longer has is gone at the LIST's version, not at a later one. */
    @Test
    void aRelistThatDropsTheOldPodDoesNotEndAWaitForALaterVersionOfItsName() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5), idle(1, 6));
        CompletableFuture<Optional<Claim>> gone = pods.awaitClaim(name(0), 20);
        CompletableFuture<Optional<Claim>> mine = pods.awaitClaim(name(0), 31);
        watch.listing(30, List.of(idle(1, 6)));
        watch.gone();
        assertThat(gone.getNow(null)).as("not in the LIST at 30").isEmpty();
        assertThat(mine).as("version 31 comes after the LIST").isNotDone();
        watch.modified(reborn(claimed(0, 31, K1)));
        assertThat(mine.getNow(null)).map(Claim::standing).contains(Standing.WON);
    }

    /** The pod made again under the same name: another uid. */
    private static Pod reborn(Pod p) {
        return new PodBuilder(p).editMetadata().withUid("uid-reborn").endMetadata().build();
    }

    @Test
    void waitersOfOnePodCompleteEachAtItsOwnVersion() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5));
        CompletableFuture<Optional<Claim>> at11 = pods.awaitClaim(name(0), 11);
        CompletableFuture<Optional<Claim>> at12 = pods.awaitClaim(name(0), 12);
        CompletableFuture<Optional<Claim>> abandoned = pods.awaitClaim(name(0), 11);
        abandoned.complete(Optional.empty());
        watch.modified(claimed(0, 11, K1));
        assertThat(at11.getNow(null)).map(Claim::claimRv).contains(11L);
        assertThat(at12).isNotDone();
        watch.modified(claimed(0, 12, K1));
        assertThat(at12.getNow(null)).map(Claim::claimRv).contains(11L);
        CompletableFuture<Optional<Claim>> again = pods.awaitClaim(name(0), 13);
        watch.modified(idle(0, 13));
        assertThat(again.getNow(null)).isEmpty();
    }

    @Test
    void awaitClaimBeforeTheCacheHasSyncedWaitsForTheWatch() {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = new PodCache(watch.client(), TestCluster.NS, CANDIDATES::kindKey);
        caches.add(pods);
        assertThat(pods.awaitClaim(name(0), 1)).isNotDone();
        assertThat(pods.awaitChange(name(0)).getNow(null)).isEmpty();
    }

    @Test
    void awaitChangeCompletesWithTheNextVersionOfThePod() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, claimed(0, 5, K1));
        assertThat(pods.awaitChange(name(3)).getNow(null)).as("not stored: nothing to wait for").isEmpty();
        CompletableFuture<Optional<Claim>> change = pods.awaitChange(name(0));
        assertThat(change).isNotDone();
        watch.modified(at(claimed(0, 5, K1), 5));
        assertThat(change).as("the same version again is no change").isNotDone();
        watch.modified(claimed(0, 10, K2));
        assertThat(change.getNow(null)).map(Claim::keyHash).contains(K2);
    }

    // ---- this process's own writes (the overlay)

    @Test
    void aVersionThisProcessWroteIsSeenAtOnceAndGivesWayToTheWatch() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, idle(0, 5), idle(1, 6));
        assertThat(names(pods.idleOfKind(KIND))).containsExactly(name(0), name(1));
        Pod mine = owned(0, 10, K1, OWNER);
        pods.observe(mine);
        assertThat(pods.get(name(0))).contains(mine);
        assertThat(names(pods.idleOfKind(KIND))).containsExactly(name(1));
        assertThat(names(pods.byKeyHash(K1))).containsExactly(name(0));
        assertThat(names(pods.byOwnerHash(OWNER))).containsExactly(name(0));
        assertThat(pods.pods()).hasSize(2).contains(mine);
        assertThat(pods.claimOn(name(0))).as("the ledger is the watch's alone").isEmpty();
        // an older version is no news
        pods.observe(idle(1, 2));
        assertThat(pods.get(name(1)).orElseThrow().getMetadata().getResourceVersion()).isEqualTo("6");
        // the watch delivers it: the watch's own version from then on (marked here to tell the two apart; the cache
        // keeps a slim copy of what the watch delivers)
        Pod delivered = new PodBuilder(owned(0, 10, K1, OWNER)).editMetadata().addToAnnotations("example.com/from",
                "watch").endMetadata().build();
        watch.modified(delivered);
        assertThat(pods.get(name(0)).orElseThrow()).isEqualTo(SlimPods.slim(delivered));
        assertThat(names(pods.byKeyHash(K1))).containsExactly(name(0));
        // released again by the watch: the index follows the freshest version
        watch.modified(idle(0, 11));
        assertThat(pods.byKeyHash(K1)).isEmpty();
        assertThat(pods.byOwnerHash(OWNER)).isEmpty();
        assertThat(names(pods.idleOfKind(KIND))).containsExactly(name(0), name(1));
    }

    @Test
    void aClaimThisProcessJustReleasedLeavesTheIndexesAtOnce() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, owned(0, 5, K1, OWNER), idle(1, 6));
        assertThat(names(pods.byKeyHash(K1))).containsExactly(name(0));
        pods.observe(idle(0, 10));
        assertThat(pods.byKeyHash(K1)).isEmpty();
        assertThat(pods.byOwnerHash(OWNER)).isEmpty();
        // idle again only once the watch says so (the idle walk lists the watch's idle pods, fresher or not)
        assertThat(names(pods.idleOfKind(KIND))).containsExactly(name(1));
        watch.modified(idle(0, 10));
        assertThat(names(pods.idleOfKind(KIND))).containsExactly(name(0), name(1));
        // relabelled for another kind by this process: not idle of this one any more
        pods.observe(new PodBuilder(idle(1, 11)).editMetadata().addToLabels(PlaypenKeys.ARCHITECTURE, "arm64")
                .endMetadata().build());
        assertThat(names(pods.idleOfKind(KIND))).containsExactly(name(0));
        assertThat(names(pods.idleOfKind("runner/arm64"))).as("the idle walk lists the watch's idle pods").isEmpty();
    }

    @Test
    void aPodThisProcessDeletedIsGoneAtOnce() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        PodCache pods = started(watch, 9, claimed(0, 5, K1), idle(1, 6));
        pods.observeDeleted(name(0));
        pods.observeDeleted(name(1));
        assertThat(pods.get(name(0))).isEmpty();
        assertThat(pods.pods()).isEmpty();
        assertThat(pods.idleOfKind(KIND)).isEmpty();
        assertThat(pods.byKeyHash(K1)).isEmpty();
        // a newer version from the watch (the pool made the pod again): it is back
        watch.modified(idle(1, 10));
        assertThat(pods.get(name(1))).isPresent();
        assertThat(names(pods.pods())).containsExactly(name(1));
        // a pod the watch never had: nothing to remember
        Pod unseen = claimed(7, 12, K2);
        pods.observe(unseen);
        assertThat(pods.get(name(7))).contains(unseen);
        assertThat(names(pods.byKeyHash(K2))).containsExactly(name(7));
        pods.observeDeleted(name(7));
        assertThat(pods.get(name(7))).isEmpty();
        assertThat(pods.byKeyHash(K2)).isEmpty();
    }

    @Test
    void podsThatAreNotManagedAreNeverAKeysOrAnOwnersClaims() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        Pod stranger = new PodBuilder().withNewMetadata().withName("stranger").withNamespace(TestCluster.NS)
                .withResourceVersion("5").addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, K1)
                .addToAnnotations(PlaypenKeys.OWNER_HASH, OWNER).endMetadata().build();
        PodCache pods = started(watch, 9, stranger, claimed(0, 6, K1));
        assertThat(names(pods.byKeyHash(K1))).containsExactly(name(0));
        assertThat(pods.byOwnerHash(OWNER)).isEmpty();
        pods.observe(at(stranger, 10));
        pods.observe(new PodBuilder(at(stranger, 10)).editMetadata().withName("stranger-2").endMetadata().build());
        assertThat(names(pods.byKeyHash(K1))).containsExactly(name(0));
        assertThat(pods.byOwnerHash(OWNER)).isEmpty();
    }

    /**
     * The pool reuses pod names: this process's claim of the new pod, recorded before the watch delivered the old
     * pod's delete, outlives that delete; a recorded version no newer than the delete does not.
     */
    @Test
    void theOldPodsDeleteKeepsAClaimOfTheNewPodThatThisProcessRecorded() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        watch.listing(9, List.of(idle(0, 5), idle(1, 6)));
        PodCache pods = new PodCache(watch.client(), TestCluster.NS, CANDIDATES::kindKey);
        caches.add(pods);
        java.util.concurrent.BlockingQueue<String> deletes = new java.util.concurrent.LinkedBlockingQueue<>();
        pods.addListener((change, pod) -> {
            if (change == PodCache.Change.DELETED) {
                deletes.add(ManagedPods.name(pod));
            }
        });
        pods.start();
        watch.awaitWatching();
        Pod reborn = new PodBuilder(claimed(0, 20, K1)).editMetadata().withUid("uid-new").endMetadata().build();
        pods.observe(reborn);
        pods.observe(idle(1, 7));
        watch.deleted(idle(0, 5), 10);
        watch.deleted(idle(1, 6), 11);
        assertThat(deletes.poll(20, TimeUnit.SECONDS)).isEqualTo(name(0));
        assertThat(deletes.poll(20, TimeUnit.SECONDS)).isEqualTo(name(1));
        assertThat(pods.get(name(0))).contains(reborn);
        assertThat(names(pods.byKeyHash(K1))).containsExactly(name(0));
        assertThat(pods.get(name(1))).as("the recorded version was older than the delete").isEmpty();
        assertThat(pods.pods()).containsExactly(reborn);
    }

    @Test
    void resourceVersionsCompareAsNumbersAndOtherwiseAsDifferentOrNot() {
        assertThat(PodCache.isNewer(idle(0, 10), idle(0, 9))).isTrue();
        assertThat(PodCache.isNewer(idle(0, 9), idle(0, 10))).isFalse();
        assertThat(PodCache.isNewer(idle(0, 9), idle(0, 9))).isFalse();
        Pod a = new PodBuilder(idle(0, 1)).editMetadata().withResourceVersion("a").endMetadata().build();
        Pod b = new PodBuilder(idle(0, 1)).editMetadata().withResourceVersion("b").endMetadata().build();
        assertThat(PodCache.isNewer(a, b)).isTrue();
        assertThat(PodCache.isNewer(a, a)).isFalse();
    }

    // ---- start, listeners, before the start

    @Test
    void listenersHearEveryChangeAndOneFailingListenerDoesNotSilenceTheNext() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        watch.listing(9, List.of(idle(0, 5)));
        PodCache pods = new PodCache(watch.client(), TestCluster.NS, CANDIDATES::kindKey);
        caches.add(pods);
        java.util.concurrent.BlockingQueue<String> heard = new java.util.concurrent.LinkedBlockingQueue<>();
        pods.addListener((change, pod) -> {
            throw new IllegalStateException("a broken listener");
        });
        pods.addListener((change, pod) -> heard.add(change + " " + ManagedPods.name(pod)));
        pods.start();
        pods.start();
        watch.awaitWatching();
        assertThat(watch.lists()).as("started once").isEqualTo(1);
        watch.modified(claimed(0, 10, K1));
        watch.deleted(claimed(0, 10, K1), 11);
        assertThat(List.of(heard.poll(20, TimeUnit.SECONDS), heard.poll(20, TimeUnit.SECONDS),
                heard.poll(20, TimeUnit.SECONDS))).containsExactly("ADDED " + name(0), "UPDATED " + name(0),
                        "DELETED " + name(0));
        assertThatThrownBy(() -> pods.addListener((c, p) -> { })).isInstanceOf(IllegalStateException.class)
                .hasMessage("PodCache listeners must be added before start(): the initial list's events would be "
                        + "missed");
    }

    @Test
    void beforeItStartsTheCacheKnowsNothingAndAfterItClosesItIsNotSynced() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        watch.listing(9, List.of(claimed(0, 5, K1)));
        PodCache pods = new PodCache(watch.client(), TestCluster.NS, CANDIDATES::kindKey);
        caches.add(pods);
        assertThat(pods.namespace()).isEqualTo(TestCluster.NS);
        assertThat(pods.hasSynced()).isFalse();
        assertThat(pods.isWatching()).isFalse();
        assertThat(pods.pods()).isEmpty();
        assertThat(pods.get(name(0))).isEmpty();
        assertThat(pods.idleOfKind(KIND)).isEmpty();
        assertThat(pods.byKeyHash(K1)).isEmpty();
        pods.observe(claimed(1, 3, K1));
        assertThat(names(pods.byKeyHash(K1))).containsExactly(name(1));
        pods.start();
        watch.awaitWatching();
        assertThat(pods.hasSynced()).isTrue();
        assertThat(names(pods.byKeyHash(K1))).containsExactly(name(0), name(1));
        pods.close();
        assertThat(pods.hasSynced()).isFalse();
        assertThat(pods.pods()).isEmpty();
        pods.close();
    }

    @Test
    void theWatchersReconnectAnswerIsTheInformers() throws Exception {
        ScriptedWatch watch = new ScriptedWatch(TestCluster.NS);
        started(watch, 9, idle(0, 5));
        assertThat(watch.watcherReconnecting()).isTrue();
    }

    private static ListAppender<ILoggingEvent> capture() {
        ListAppender<ILoggingEvent> log = new ListAppender<>();
        Logger logger = (Logger) LoggerFactory.getLogger(PodCache.class);
        log.start();
        logger.addAppender(log);
        return log;
    }

    private static void release(ListAppender<ILoggingEvent> log) {
        ((Logger) LoggerFactory.getLogger(PodCache.class)).detachAppender(log);
    }

    private static List<String> warnings(ListAppender<ILoggingEvent> log) {
        return CapturedLogs.snapshot(log).stream().filter(e -> e.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage)
                .toList();
    }
}
