package io.unboundedcloud.playpen.kube;

import static io.unboundedcloud.playpen.kube.ScriptedReplica.cmd;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.otherRequest;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.parkedIn;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.podPath;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.runner;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Two calls of one replica at once, in a fixed order: the first is held at one API request (the mock API server
 * does not answer it until the test says so), the second runs until it waits for the first (the test waits for
 * that state, never for time), then the first goes on. Requests of one key share one outcome, a dealloc waits for
 * an alloc of its key under way, two requests never write to one pod at once, and one settle per key runs at a
 * time.
 */
class AllocatorInterleavingsTest {
    private ScriptedReplica r;
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void stop() {
        release.countDown();
        if (r != null) {
            r.close();
        }
    }

    /** The mock API server holds the first request whose "METHOD path" is {@code key} until {@link #release}. */
    private CountDownLatch holdFirst(String key) {
        CountDownLatch reached = new CountDownLatch(1);
        r.cluster.addRequestListener(k -> {
            if (k.equals(key) && reached.getCount() > 0) {
                reached.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        return reached;
    }

    private static final class Call<T> {
        final CompletableFuture<T> result = new CompletableFuture<>();
        final Thread thread;

        Call(Supplier<T> body) {
            thread = new Thread(() -> {
                try {
                    result.complete(body.get());
                } catch (Throwable e) {
                    result.completeExceptionally(e);
                }
            }, "interleaved-call");
            thread.setDaemon(true);
            thread.start();
        }

        void awaitParkedIn(String type, String method) throws InterruptedException {
            OperatorHarness.awaitTrue(() -> result.isDone() || parkedIn(thread, type, method), Duration.ofSeconds(20),
                    "the call waits in " + type + "." + method);
            assertThat(result).as("still waiting").isNotDone();
        }

        T get() throws Exception {
            return result.get(20, TimeUnit.SECONDS);
        }

        Throwable failure() throws Exception {
            try {
                result.get(20, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                return e.getCause();
            }
            throw new AssertionError("the call did not fail");
        }
    }

    private static void await(CountDownLatch latch) throws InterruptedException {
        assertThat(latch.await(20, TimeUnit.SECONDS)).as("the held request arrived").isTrue();
    }

    private String first(AllocCommand key) {
        return r.pods.ring(ScriptedReplica.KIND, Hashes.seed(key.keyHash())).next();
    }

    /**
     * A claim that lost is taken back by another replica's sweeper before its writer's watch delivers it, and the
     * pod is claimed again for the key, in the same second, by another request through another replica: that claim
     * stands (the claim the first lost to is gone) and is answered there. The first writer, judging its own claim
     * lost, takes back only its own claim, never that one; it judges the key again and meets the other request's
     * claim: 409.
     */
    @Test
    void aLostClaimsWriterNeverTakesBackTheClaimMadeAgainOnItsPodInTheSameSecond() throws Exception {
        SweptInTheSameSecond t = lostClaimSweptInTheSameSecond("taken-back");
        // the pod claimed again for another request of the key within the same second, and answered
        Pod theirs = t.elsewhere.claim(t.idle, t.idle.getMetadata().getResourceVersion(), otherRequest(t.key));
        r.watch.release();
        String pod = t.pod;
        CompletableFuture<Allocator.Allocation> mine = t.mine;

        Throwable outcome = catchFailure(mine);
        assertThat(r.inApi(pod).getMetadata().getResourceVersion()).as("the other request's claim is still there")
                .isEqualTo(theirs.getMetadata().getResourceVersion());
        assertThat(outcome).isInstanceOf(ApiException.class);
        assertThat(((ApiException) outcome).code()).isEqualTo(409);
    }

    /**
     * The same sequence, but the other request's claim is settled by the replica that answered it, and this
     * replica's watch goes past the writer's own claim without showing it (a relist, after a 410 Gone): the claim
     * the watch holds on the pod stands and has the key, but it is not the writer's (another claim-id). The writer
     * never answers with it: it judges the key again and meets the other request's claim: 409.
     */
    @Test
    void aWriterWhoseWatchWentPastItsClaimNeverTakesTheClaimMadeAgainOnItsPodForItsOwn() throws Exception {
        SweptInTheSameSecond t = lostClaimSweptInTheSameSecond("overtaken");
        Pod theirs = t.elsewhere.settle(t.elsewhere.claim(t.idle, t.idle.getMetadata().getResourceVersion(),
                otherRequest(t.key)));
        String pod = t.pod;
        CompletableFuture<Allocator.Allocation> mine = t.mine;
        // this replica's watch never delivers those events: it lists again and holds the other request's claim
        r.watch.forget();
        r.watch.gone();
        r.watch.release();
        assertThat(r.pods.claimOn(pod)).hasValueSatisfying(c -> assertThat(c.stands()).isTrue());

        Throwable outcome = catchFailure(mine);
        assertThat(r.inApi(pod).getMetadata().getResourceVersion()).as("the other request's claim is still there")
                .isEqualTo(theirs.getMetadata().getResourceVersion());
        assertThat(outcome).isInstanceOf(ApiException.class);
        assertThat(((ApiException) outcome).code()).isEqualTo(409);
    }

    /**
     * A replay reads the pod of the claim its replica's ledger holds standing, and the read answers a version on
     * which that claim was already taken back and the key claimed again by another request (a claim its client also
     * left); before the answer arrives, the watch relists and shows the key claimed on the pod a third time, for this
     * request, settled. The pod as read carries neither the claim the replay meant nor the one the ledger holds now:
     * it is never answered (here it would be a 409, the other request's); the replay judges the key again and
     * answers with the settled claim.
     */
    @Test
    void aReplayNeverAnswersWithAnotherClaimOfTheKeyThanTheOneItsLedgerHolds() throws Exception {
        r = new ScriptedReplica(2, 0);
        AllocCommand key = cmd("read-before-a-relist");
        Allocator.Allocation first = r.allocator.allocate(key);
        String pod = first.pod().getMetadata().getName();
        r.watch.hold();
        // the first claim's client left: its writer takes it back; another request claims the key on the pod and
        // its client leaves too; then this request's key is claimed on the pod again, through another replica
        assertThat(r.allocator.release(first, key)).isTrue();
        ClaimWriter elsewhere = new ClaimWriter(r.cluster.client, java.time.Clock.systemUTC(), new ApiCallCounter(),
                null, "other");
        elsewhere.claim(r.inApi(pod), r.inApi(pod).getMetadata().getResourceVersion(), otherRequest(key));
        Pod between = r.inApi(pod);
        assertThat(elsewhere.rollback(between, key.keyHash())).isEqualTo(ClaimWriter.Rollback.ROLLED_BACK);
        Pod idle = r.inApi(pod);
        Pod again = elsewhere.settle(elsewhere.claim(idle, idle.getMetadata().getResourceVersion(), key));
        // the replay's read answers the pod as it was between; the watch relists before the answer arrives
        r.cluster.server.expect().get().withPath(podPath(pod)).andReturn(200, between).once();
        java.util.concurrent.atomic.AtomicBoolean relisted = new java.util.concurrent.atomic.AtomicBoolean();
        r.cluster.addAnswerListener((m, path, answer) -> {
            if (m.equals("GET") && path.equals(podPath(pod)) && relisted.compareAndSet(false, true)) {
                r.watch.forget();
                try {
                    r.watch.gone();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        });

        Allocator.Allocation replayed = r.allocator.replay(key).orElseThrow();
        assertThat(relisted).isTrue();
        assertThat(replayed.replay()).isTrue();
        assertThat(replayed.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(ManagedPods.annotations(replayed.pod()).get(io.unboundedcloud.playpen.model.PlaypenKeys.CLAIM_ID))
                .as("the claim that stands now").isEqualTo(ManagedPods.annotations(again)
                        .get(io.unboundedcloud.playpen.model.PlaypenKeys.CLAIM_ID));
    }

    /**
     * A claim this replica judged standing at its commit keeps that verdict across a relist (same claim-id). Its
     * client then leaves and its writer takes it back, while a replay of the key has already read the pod still
     * carrying it: the replay's settle is conditional on the version it read, so it is refused, and the replay,
     * judging the key again once the watch has the rollback, answers nothing. The kept verdict never lets a replay
     * hand out a claim its writer has taken back.
     */
    @Test
    void aClaimKeptStandingAcrossARelistIsNeverReplayedOnceItsWriterHasTakenItBack() throws Exception {
        r = new ScriptedReplica(2, 0);
        AllocCommand key = cmd("kept-across-a-relist");
        Allocator.Allocation first = r.allocator.allocate(key);
        String pod = first.pod().getMetadata().getName();
        r.watch.gone();
        assertThat(r.pods.claimOn(pod).orElseThrow().stands()).as("still the claim judged at its commit").isTrue();
        Pod read = r.inApi(pod);
        r.watch.hold();
        assertThat(r.allocator.release(first, key)).isTrue();
        // the replay's read answers the pod as it was before the rollback
        r.cluster.server.expect().get().withPath(podPath(pod)).andReturn(200, read).once();
        long patches = r.calls.get(KubeApiCall.PODS_PATCH);
        CompletableFuture<java.util.Optional<Allocator.Allocation>> replay = ScriptedReplica.waitingForTheWatch(
                () -> r.allocator.replay(key));
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).as("the replay's settle, refused").isEqualTo(patches + 1);
        r.watch.release();
        assertThat(replay.get(60, TimeUnit.SECONDS)).isEmpty();
        Pod now = r.inApi(pod);
        assertThat(ManagedPods.isClaimed(now)).isFalse();
        assertThat(ClaimLedger.isSettled(now)).isFalse();
    }

    /** Where {@link #lostClaimSweptInTheSameSecond} leaves things: the pod idle again, the writer still waiting. */
    private record SweptInTheSameSecond(AllocCommand key, String pod, CompletableFuture<Allocator.Allocation> mine,
            ClaimWriter elsewhere, Pod idle) {
    }

    /**
     * This replica's writer claims the key's first pod while its watch is held, and that claim loses to an earlier
     * claim of the key made elsewhere; the earlier claim is deallocated and another replica's sweeper takes the lost
     * claim back. {@code elsewhere} writes with a clock fixed at the lost claim's second (claimed-at has whole
     * seconds), so a claim it makes again on the pod is in that same second. The watch is still held.
     */
    private SweptInTheSameSecond lostClaimSweptInTheSameSecond(String keyName) throws Exception {
        r = new ScriptedReplica(2, 0);
        AllocCommand key = cmd(keyName);
        String pod = first(key);
        String earlier = pod.equals(runner(0)) ? runner(1) : runner(0);
        r.watch.hold();
        r.claimElsewhere(earlier, key, null); // committed first, unseen by this replica yet: its claim will lose
        CompletableFuture<Allocator.Allocation> mine = ScriptedReplica.waitingForTheWatch(
                () -> r.allocator.allocate(key));
        Pod lost = r.inApi(pod);
        assertThat(ManagedPods.keyHash(lost)).isEqualTo(key.keyHash());
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(earlier).delete();
        java.time.Instant sameSecond = java.time.Instant.parse(
                ManagedPods.annotations(lost).get(io.unboundedcloud.playpen.model.PlaypenKeys.CLAIMED_AT));
        ClaimWriter elsewhere = new ClaimWriter(r.cluster.client,
                java.time.Clock.fixed(sameSecond, java.time.ZoneOffset.UTC), new ApiCallCounter(), null, "other");
        assertThat(elsewhere.rollback(lost, key.keyHash())).isEqualTo(ClaimWriter.Rollback.ROLLED_BACK);
        return new SweptInTheSameSecond(key, pod, mine, elsewhere, r.inApi(pod));
    }

    private static Throwable catchFailure(CompletableFuture<?> f) throws Exception {
        try {
            f.get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("the call did not fail");
    }

    @Test
    void aSecondRequestOfTheKeySharesTheFirstOnesClaimAsAPinnedReplay() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("shared");
        CountDownLatch claiming = holdFirst("PATCH " + podPath(first(key)));
        Call<Allocator.Allocation> one = new Call<>(() -> r.allocator.allocate(key));
        await(claiming);
        Call<Allocator.Allocation> two = new Call<>(() -> r.allocator.allocate(key));
        two.awaitParkedIn("Allocator", "join");
        release.countDown();
        Allocator.Allocation a = one.get();
        Allocator.Allocation b = two.get();
        assertThat(a.replay()).isFalse();
        assertThat(b.replay()).isTrue();
        assertThat(b.pod().getMetadata().getName()).isEqualTo(a.pod().getMetadata().getName());
        assertThat(ClaimLedger.isSettled(b.pod())).isTrue();
        assertThat(r.carriers(key.keyHash())).containsExactly(a.pod().getMetadata().getName());
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).as("one claim, one settle").isEqualTo(2);
    }

    @Test
    void aDifferentRequestSharingTheKeysOutcomeIs409() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("shared-conflict");
        CountDownLatch claiming = holdFirst("PATCH " + podPath(first(key)));
        Call<Allocator.Allocation> one = new Call<>(() -> r.allocator.allocate(key));
        await(claiming);
        Call<Allocator.Allocation> two = new Call<>(() -> r.allocator.allocate(otherRequest(key)));
        two.awaitParkedIn("Allocator", "join");
        release.countDown();
        assertThat(one.get().replay()).isFalse();
        assertThat(((ApiException) two.failure()).code()).isEqualTo(409);
        assertThat(ClaimLedger.isSettled(r.inApi(one.get().pod().getMetadata().getName()))).isFalse();
    }

    @Test
    void whenTheFirstRequestOfTheKeyConflictsTheMatchingSecondOneStillGetsItsReplay() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("owner-and-impostor");
        Allocator.Allocation made = r.allocator.allocate(key);
        String pod = made.pod().getMetadata().getName();
        CountDownLatch reading = holdFirst("GET " + podPath(pod));
        Call<Allocator.Allocation> impostor = new Call<>(() -> r.allocator.allocate(otherRequest(key)));
        await(reading);
        Call<Allocator.Allocation> owner = new Call<>(() -> r.allocator.allocate(key));
        owner.awaitParkedIn("Allocator", "join");
        release.countDown();
        assertThat(((ApiException) impostor.failure()).code()).isEqualTo(409);
        Allocator.Allocation again = owner.get();
        assertThat(again.replay()).isTrue();
        assertThat(again.pod().getMetadata().getName()).isEqualTo(pod);
    }

    @Test
    void aWaitingQueuesEmptyAnswerIsExplainedToARequestThatSharedIt() throws Exception {
        r = new ScriptedReplica(1, 0);
        AllocCommand key = cmd("no-capacity-shared");
        // the only pod is taken through another replica; this one's watch has not delivered it
        r.watch.hold();
        r.claimElsewhere(runner(0), cmd("faster"), null);
        CountDownLatch reading = holdFirst("GET " + podPath(runner(0)));
        Call<java.util.Optional<Allocator.Allocation>> queued = new Call<>(() -> r.allocator.tryAllocate(key, null));
        await(reading);
        Call<Allocator.Allocation> asked = new Call<>(() -> r.allocator.allocate(key));
        asked.awaitParkedIn("Allocator", "join");
        release.countDown();
        assertThat(queued.get()).isEmpty();
        ApiException e = (ApiException) asked.failure();
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).isEqualTo(r.allocator.unavailable(key).getMessage()).isNotEqualTo("no capacity");
        r.watch.release();
    }

    @Test
    void anErrorOfTheFirstRequestIsTheSecondOnesToo() throws Exception {
        r = new ScriptedReplica(1, 0);
        AllocCommand key = cmd("no-capacity-explained");
        r.watch.hold();
        r.claimElsewhere(runner(0), cmd("faster"), null);
        CountDownLatch reading = holdFirst("GET " + podPath(runner(0)));
        Call<Allocator.Allocation> one = new Call<>(() -> r.allocator.allocate(key));
        await(reading);
        Call<Allocator.Allocation> two = new Call<>(() -> r.allocator.allocate(key));
        two.awaitParkedIn("Allocator", "join");
        release.countDown();
        Throwable first = one.failure();
        assertThat(((ApiException) first).code()).isEqualTo(503);
        assertThat(two.failure()).isSameAs(first);
        r.watch.release();
    }

    @Test
    void aSharedClaimThatCannotBePinnedIsJudgedAgain() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("pin-conflict");
        String pod = first(key);
        CountDownLatch claiming = holdFirst("PATCH " + podPath(pod));
        // the pin's settle meets a change (the mock answers it 409 once, after the claim)
        r.cluster.addAnswerListener((m, path, answer) -> {
            if (m.equals("PATCH") && path.equals(podPath(pod)) && answer.code() / 100 == 2
                    && r.calls.get(KubeApiCall.PODS_PATCH) == 1) {
                r.cluster.server.expect().patch().withPath(podPath(pod))
                        .andReturn(409, "{\"kind\":\"Status\",\"code\":409}").once();
            }
        });
        Call<Allocator.Allocation> one = new Call<>(() -> r.allocator.allocate(key));
        await(claiming);
        Call<Allocator.Allocation> two = new Call<>(() -> r.allocator.allocate(key));
        two.awaitParkedIn("Allocator", "join");
        release.countDown();
        assertThat(one.get().replay()).isFalse();
        Allocator.Allocation b = two.get();
        assertThat(b.replay()).isTrue();
        assertThat(b.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(ClaimLedger.isSettled(r.inApi(pod))).isTrue();
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).as("claim, refused settle, settle").isEqualTo(3);
    }

    @Test
    void aDeallocWaitsForAnAllocOfItsKeyUnderWay() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("alloc-then-dealloc");
        String pod = first(key);
        CountDownLatch claiming = holdFirst("PATCH " + podPath(pod));
        Call<Allocator.Allocation> alloc = new Call<>(() -> r.allocator.allocate(key));
        await(claiming);
        Call<List<Pod>> dealloc = new Call<>(() -> r.allocator.deallocate(key.keyHash()));
        dealloc.awaitParkedIn("Allocator", "deallocate");
        release.countDown();
        assertThat(alloc.get().pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(dealloc.get()).extracting(ManagedPods::name).containsExactly(pod);
        assertThat(r.carriers(key.keyHash())).isEmpty();
    }

    @Test
    void aDeallocAfterAFailedAllocOfItsKeyStillRuns() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("failed-then-dealloc");
        String pod = first(key);
        CountDownLatch claiming = holdFirst("PATCH " + podPath(pod));
        r.cluster.forbidden = k -> k.equals("PATCH " + podPath(pod));
        Call<Allocator.Allocation> alloc = new Call<>(() -> r.allocator.allocate(key));
        await(claiming);
        Call<List<Pod>> dealloc = new Call<>(() -> r.allocator.deallocate(key.keyHash()));
        dealloc.awaitParkedIn("Allocator", "deallocate");
        release.countDown();
        assertThat(alloc.failure()).isInstanceOf(io.fabric8.kubernetes.client.KubernetesClientException.class);
        assertThat(dealloc.get()).isEmpty();
    }

    @Test
    void twoRequestsWhoseWalksMeetAtOnePodNeverWriteToItAtOnce() throws Exception {
        r = new ScriptedReplica(6, 0);
        AllocCommand a = cmd("walker-a");
        String target = first(a);
        AllocCommand b = null;
        for (int k = 0; b == null; k++) {
            AllocCommand c = cmd("walker-b-" + k);
            if (first(c).equals(target)) {
                b = c;
            }
        }
        CountDownLatch claiming = holdFirst("PATCH " + podPath(target));
        Call<Allocator.Allocation> one = new Call<>(() -> r.allocator.allocate(a));
        await(claiming);
        AllocCommand second = b;
        Call<Allocator.Allocation> two = new Call<>(() -> r.allocator.allocate(second));
        OperatorHarness.awaitTrue(() -> r.allocator.reservationWaits() == 1, Duration.ofSeconds(20),
                "the second request waits for the first one's attempt");
        assertThat(r.cluster.requestCount(k -> k.equals("PATCH " + podPath(target)))).isEqualTo(1);
        release.countDown();
        Allocator.Allocation got = one.get();
        Allocator.Allocation other = two.get();
        assertThat(got.pod().getMetadata().getName()).isEqualTo(target);
        assertThat(other.pod().getMetadata().getName()).isNotEqualTo(target);
        assertThat(r.cluster.requestCount(k -> k.equals("PATCH " + podPath(target)))).as("no second write").isEqualTo(1);
        assertThat(r.allocator.reservationWaits()).isEqualTo(1);
    }

    @Test
    void aRequestInterruptedWhileItWaitsForAnotherOnesAttemptIs503AndKeepsTheInterrupt() throws Exception {
        r = new ScriptedReplica(6, 0);
        AllocCommand a = cmd("holder");
        String target = first(a);
        AllocCommand b = null;
        for (int k = 0; b == null; k++) {
            AllocCommand c = cmd("waiter-" + k);
            if (first(c).equals(target)) {
                b = c;
            }
        }
        CountDownLatch claiming = holdFirst("PATCH " + podPath(target));
        Call<Allocator.Allocation> one = new Call<>(() -> r.allocator.allocate(a));
        await(claiming);
        AllocCommand second = b;
        java.util.concurrent.atomic.AtomicBoolean stillInterrupted = new java.util.concurrent.atomic.AtomicBoolean();
        Call<Allocator.Allocation> two = new Call<>(() -> {
            try {
                return r.allocator.allocate(second);
            } finally {
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            }
        });
        OperatorHarness.awaitTrue(() -> r.allocator.reservationWaits() == 1, Duration.ofSeconds(20),
                "the second request waits for the first one's attempt");
        two.thread.interrupt();
        ApiException e = (ApiException) two.failure();
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).isEqualTo("interrupted: this operator replica is stopping; send the same request"
                + " again, which is safe: another replica answers it");
        assertThat(stillInterrupted).isTrue();
        release.countDown();
        assertThat(one.get().pod().getMetadata().getName()).isEqualTo(target);
        assertThat(r.carriers(second.keyHash())).isEmpty();
    }

    @Test
    void oneSettlePerKeyRunsAtATimeAndTheOthersWaitForIt() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("settled-once");
        r.watch.hold();
        r.claimElsewhere(runner(2), key, null);
        r.watch.forget();
        r.watch.gone();
        r.watch.release();
        ClaimResolver resolver = r.allocator.resolver();
        CountDownLatch listing = holdFirst("GET " + ScriptedReplica.PODS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Call<java.util.Optional<ClaimResolver.Standing>> one = new Call<>(() -> resolver.standing(key.keyHash(), false,
                deadline));
        await(listing);
        Call<java.util.Optional<ClaimResolver.Standing>> two = new Call<>(() -> resolver.standing(key.keyHash(), false,
                deadline));
        two.awaitParkedIn("ClaimResolver", "settle");
        release.countDown();
        assertThat(one.get()).isPresent();
        assertThat(two.get()).isPresent();
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).as("one settle").isEqualTo(1);
        assertThat(r.calls.get(KubeApiCall.PODS_LIST)).as("one list").isEqualTo(1);
    }
}
