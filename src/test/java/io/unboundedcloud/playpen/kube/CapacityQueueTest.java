package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.HeldRequest;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The queue of alloc requests waiting for capacity, on one replica's allocation core against the mock API server:
 * first come first served as pods turn idle, a retried key joins its twin, the per-user and total caps refuse
 * with 429 before anything waits, a wait that ends is the 503 with how long it waited, a dealloc ends a wait with
 * 410, a client that leaves frees its place (a claim written for it meanwhile is given back, a slow give-back
 * holding up nobody behind it), a passing error of a claim keeps the waiter in line, any other error of one waiter
 * ends only that wait, and closing answers every waiter. Each outcome is told to the observers.
 */
class CapacityQueueTest {
    static final Duration SOON = Duration.ofSeconds(10);

    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(CapacityQueue.class);
    @RegisterExtension
    final CapturedLogs allocatorLogs = CapturedLogs.of(Allocator.class);

    ScriptedReplica r;
    CapacityQueue q;
    /** The clients' timers (null: the queue's own); set before {@link #start}. */
    ManualTimers clientTimers;
    /** The replica's write held on its way to the API server (null: none); set before {@link #start}. */
    HeldRequest held;
    final List<String> outcomes = new CopyOnWriteArrayList<>();
    final List<Duration> waits = new CopyOnWriteArrayList<>();

    /** The replica, then its queue, woken by the replica's pod cache as in the operator (and by nothing else). */
    void start(int runners, int maxPerOwner, CapacityQueue.Limits limits) throws Exception {
        java.util.concurrent.atomic.AtomicReference<CapacityQueue> queue = new java.util.concurrent.atomic.AtomicReference<>();
        r = new ScriptedReplica(runners, maxPerOwner, null, (change, pod) -> {
            CapacityQueue woken = queue.get();
            if (woken != null) {
                woken.onPodEvent(change, pod);
            }
        }, held == null ? c -> c.client : held::client);
        // no backstop sweep within a test: a waiter is served because a pod event or the queue itself woke it
        q = clientTimers == null ? new CapacityQueue(r.allocator, limits, Duration.ofHours(1))
                : new CapacityQueue(r.allocator, limits, Duration.ofHours(1), r.allocator::knowsStandingClaim,
                        clientTimers);
        q.addObserver((cmd, waited, outcome) -> {
            outcomes.add(cmd.keyHashPrefix() + " " + outcome);
            waits.add(waited);
        });
        queue.set(q);
    }

    @AfterEach
    void stop() {
        if (held != null) {
            held.release();
        }
        if (q != null) {
            q.close();
        }
        if (r != null) {
            r.close();
        }
    }

    static AllocCommand waiting(String key, int seconds) {
        return ScriptedReplica.cmd(key).withLease(null, seconds);
    }

    /** A ready runner on the replica's node, in the replica's cache (which wakes the queue). */
    String addRunner(int port) throws Exception {
        Pod p = r.cluster.create(TestCluster.readyRunner("amd64", port, ScriptedReplica.NODE));
        OperatorHarness.awaitTrue(() -> r.pods.get(p.getMetadata().getName()).isPresent(), SOON, "the new pod cached");
        return p.getMetadata().getName();
    }

    /** A runner still starting on the replica's node: a pod this replica cannot hand out, which a claim may carry. */
    String pendingPod(int port) {
        return r.cluster.create(TestCluster.readyRunner("amd64", port, ScriptedReplica.NODE).editStatus()
                .withPhase("Pending").endStatus()).getMetadata().getName();
    }

    static Allocator.Allocation served(CapacityQueue.Ticket t) throws Exception {
        return t.result().get(SOON.toSeconds(), TimeUnit.SECONDS);
    }

    static ApiException failure(CapacityQueue.Ticket t) {
        return failure(t.result());
    }

    static ApiException failure(CompletableFuture<?> f) {
        try {
            f.get(SOON.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(ApiException.class);
            return (ApiException) e.getCause();
        } catch (Exception e) {
            throw new AssertionError("no answer", e);
        }
        throw new AssertionError("served, but a failure was expected");
    }

    /** Nobody in line, no place taken, for any kind or user. */
    void assertNothingWaits() {
        assertThat(q.waiting()).isZero();
        assertThat(q.waiting(ResourceType.RUNNER, "amd64")).isZero();
        assertThat(q.waitingRequests()).isZero();
    }

    String prefix(String key) {
        return ScriptedReplica.cmd(key).keyHashPrefix();
    }

    /**
     * Clients' timers that the test runs when it chooses (each client's time is up when the test says so), so what
     * happens before a time is up does not race the clock.
     */
    static final class ManualTimers extends java.util.concurrent.ScheduledThreadPoolExecutor {
        final List<Runnable> scheduled = new CopyOnWriteArrayList<>();

        ManualTimers() {
            super(1);
            setRemoveOnCancelPolicy(true);
        }

        @Override
        public java.util.concurrent.ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
            scheduled.add(command);
            return super.schedule(command, 1, TimeUnit.DAYS);
        }
    }

    @Test
    void aClaimablePodServesAtOnceAndAKeyThatHoldsOneIsReplayedWithoutQueueing() throws Exception {
        start(1, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket first = q.await(waiting("now", 30), "owner-a");
        Allocator.Allocation a = served(first);
        assertThat(a.replay()).isFalse();
        assertThat(a.pod().getMetadata().getName()).isEqualTo("playpen-runner-amd64-51820");
        assertThat(ManagedPods.keyHash(r.cluster.pods().get(0))).isEqualTo(ScriptedReplica.cmd("now").keyHash());
        OperatorHarness.awaitTrue(() -> q.waitingRequests() == 0, SOON, "the served request's slot freed");
        assertThat(outcomes).containsExactly(prefix("now") + " served");

        // the same key again is answered from its claim at once: never queued, never counted
        CapacityQueue.Ticket again = q.await(waiting("now", 30), "owner-a");
        assertThat(again.result()).isDone();
        assertThat(again.result().get().replay()).isTrue();
        assertThat(again.result().get().pod().getMetadata().getName()).isEqualTo("playpen-runner-amd64-51820");
        assertNothingWaits();
        // and another request under that key is refused at once
        assertThatThrownBy(() -> q.await(ScriptedReplica.otherRequest(ScriptedReplica.cmd("now")).withLease(null, 30),
                "owner-a")).isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.code()).isEqualTo(409));
        assertThat(outcomes).hasSize(1);
    }

    /**
     * A client answered before its time is up leaves no timer behind: with the longest wait allowed and hundreds of
     * clients waiting, each answered one's timer would otherwise stay in memory until its whole wait had passed.
     */
    @Test
    void anAnsweredClientsTimerIsDroppedAtOnce() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        // the backstop sweep's timer (an hour here, so it never runs within the test) is there from the start
        int before = q.pendingTimers();
        CapacityQueue.Ticket t = q.await(waiting("answered", 3600), "owner-a");
        assertThat(q.pendingTimers()).isEqualTo(before + 1);
        addRunner(51820);
        assertThat(served(t).replay()).isFalse();
        OperatorHarness.awaitTrue(() -> q.pendingTimers() == before, SOON, "the answered client's timer dropped");
    }

    @Test
    void waitersAreServedInArrivalOrderAsPodsTurnIdle() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket k1 = q.await(waiting("k1", 30), "owner-a");
        CapacityQueue.Ticket k2 = q.await(waiting("k2", 30), "owner-b");
        CapacityQueue.Ticket k3 = q.await(waiting("k3", 30), "owner-a");
        assertThat(q.waiting()).isEqualTo(3);
        assertThat(q.waiting(ResourceType.RUNNER, "amd64")).isEqualTo(3);
        assertThat(q.waiting(ResourceType.RUNNER, "arm64")).isZero();
        assertThat(q.waitingRequests()).isEqualTo(3);
        assertThat(q.waitingRequests("owner-a")).isEqualTo(2);
        assertThat(q.waitingRequests("owner-b")).isEqualTo(1);
        assertThat(k1.result()).isNotDone();

        String pod1 = addRunner(51820);
        assertThat(served(k1).pod().getMetadata().getName()).isEqualTo(pod1);
        assertThat(k2.result()).isNotDone();
        assertThat(k3.result()).isNotDone();
        OperatorHarness.awaitTrue(() -> q.waiting() == 2 && q.waitingRequests("owner-a") == 1, SOON,
                "the first waiter gone from the queue");

        String pod2 = addRunner(51821);
        assertThat(served(k2).pod().getMetadata().getName()).isEqualTo(pod2);
        assertThat(k3.result()).isNotDone();
        assertThat(q.waiting(ResourceType.RUNNER, "amd64")).isEqualTo(1);

        // the last client leaves: its place is freed, it is answered 499 and nothing is claimed for it later
        k3.subscription().leave();
        assertThat(failure(k3).code()).isEqualTo(499);
        assertNothingWaits();
        assertThat(q.waitingRequests("owner-a")).isZero();
        String pod3 = addRunner(51822);
        q.drain();
        assertThat(ManagedPods.isClaimed(r.cluster.pods().stream()
                .filter(p -> pod3.equals(p.getMetadata().getName())).findFirst().orElseThrow())).isFalse();
        assertThat(outcomes).containsExactly(prefix("k1") + " served", prefix("k2") + " served", prefix("k3") + " left");
    }

    /**
     * The claim written for a wait every client left cannot be given back (the API server refuses the rollback):
     * the pass that wrote it logs that and goes on serving the waiters behind it, rather than ending there.
     */
    @Test
    void aGiveBackThatFailsIsLoggedAndThePassGoesOn() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        // pods on a node without an ExternalIP: cached, but nobody can be handed one until the node has it
        r.cluster.addNode("node-b", "amd64", null);
        CapacityQueue.Ticket gone = q.await(waiting("gone", 30), "owner-a");
        CapacityQueue.Ticket next = q.await(waiting("next", 30), "owner-b");
        for (int port : new int[] {51820, 51821}) {
            Pod p = r.cluster.create(TestCluster.readyRunner("amd64", port, "node-b"));
            OperatorHarness.awaitTrue(() -> r.pods.get(p.getMetadata().getName()).isPresent(), SOON, "the pod cached");
        }
        // the dispatcher has done with those pods' wake-ups (node changes wake nobody)
        OperatorHarness.awaitTrue(CapacityQueueTest::dispatcherIdle, SOON, "the dispatcher idle");
        // the first waiter's client leaves as its claim is written; the claim's rollback is then refused with 500
        java.util.concurrent.atomic.AtomicReference<String> claim = new java.util.concurrent.atomic.AtomicReference<>();
        r.cluster.addRequestListener(k -> {
            if (k.startsWith("PATCH " + ScriptedReplica.PODS + "/") && claim.compareAndSet(null, k)) {
                gone.subscription().leave();
            }
        });
        r.cluster.failBeforeWrite = k -> k.equals(claim.get()) && r.cluster.requestCount(k::equals) >= 2;
        r.cluster.client.nodes().withName("node-b").edit(n -> new io.fabric8.kubernetes.api.model.NodeBuilder(n)
                .editStatus().addNewAddress().withType("ExternalIP").withAddress("203.0.113.11").endAddress()
                .endStatus().build());
        OperatorHarness.awaitTrue(() -> r.nodes.externalIp("node-b").isPresent(), SOON, "the node's ExternalIP cached");

        org.assertj.core.api.Assertions.assertThatCode(q::drain).doesNotThrowAnyException();
        assertThat(failure(gone).code()).isEqualTo(499);
        assertThat(served(next).pod().getMetadata().getName()).isNotEqualTo(claim.get().substring(claim.get().lastIndexOf('/') + 1));
        // the give-back runs off the pass (on the queue's own thread), and is logged when it is over
        OperatorHarness.awaitTrue(() -> allocatorLogs.lines().stream().anyMatch(l -> l.getFormattedMessage()
                .startsWith("release failed")), SOON, "the give-back over");
        assertThat(allocatorLogs.lines()).anySatisfy(l -> {
            assertThat(l.getLevel()).isEqualTo(ch.qos.logback.classic.Level.WARN);
            assertThat(l.getFormattedMessage()).startsWith("release failed").contains("key=" + prefix("gone"))
                    .contains("result=kept-until-ttl");
        });
        assertThat(outcomes).containsExactly(prefix("gone") + " left", prefix("next") + " served");
    }

    /** The give-back of a claim (the write that takes the key off its pod), held on the replica's side. */
    static HeldRequest givingBack() {
        String unclaim = "\"" + io.unboundedcloud.playpen.model.PlaypenKeys.IDEMPOTENCY_KEY_HASH + "\":null";
        return new HeldRequest(w -> "PATCH".equals(w.method()) && String.valueOf(w.bodyString()).contains(unclaim));
    }

    /**
     * The last client of the wait of {@code key} leaves as the dispatcher is about to write its claim: at its first
     * try once a pod is cached (a try before, on a wake-up of its joining, finds none to claim).
     */
    void leavesAsItsClaimIsWritten(String key, CapacityQueue.Ticket t) {
        String keyHash = ScriptedReplica.cmd(key).keyHash();
        q.beforeClaim(cmd -> {
            if (cmd.keyHash().equals(keyHash) && !r.pods.pods().isEmpty() && !t.result().isDone()) {
                t.subscription().leave();
            }
        });
    }

    /**
     * The only client of a wait leaves as its claim is written, and the give-back of that claim is slow (the API
     * server has not answered its write): the next waiter of the same kind is handed the pod that comes meanwhile,
     * not only once the give-back is over; the claim goes back when its write is answered.
     */
    @Test
    void aSlowGiveBackHoldsUpNoWaiterBehindIt() throws Exception {
        held = givingBack();
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket gone = q.await(waiting("gone", 30), "owner-a");
        CapacityQueue.Ticket next = q.await(waiting("next", 30), "owner-b");
        leavesAsItsClaimIsWritten("gone", gone);
        String first = addRunner(51820);
        assertThat(held.awaitHeld(SOON.toSeconds())).as("the give-back's write held").isTrue();
        assertThat(failure(gone).code()).isEqualTo(499);

        String second = addRunner(51821);
        assertThat(served(next).pod().getMetadata().getName()).isEqualTo(second);
        assertThat(ManagedPods.keyHash(r.inApi(first))).as("the first claim, its give-back still held")
                .isEqualTo(ScriptedReplica.cmd("gone").keyHash());
        held.release();
        OperatorHarness.awaitTrue(() -> !ManagedPods.isClaimed(r.inApi(first)), SOON, "the first claim given back");
        assertThat(outcomes).containsExactly(prefix("gone") + " left", prefix("next") + " served");
    }

    /**
     * The only client of a wait leaves as its claim is written, and the same request is sent again before the claim
     * lands (no claim of its key to answer yet: it waits); the give-back of the claim is slow. The dispatcher hands
     * the new request that claim as a replay, settled first by a write conditional on the version it read, and the
     * give-back, conditional on the version it claimed, then finds it settled and leaves it: a pod handed out is
     * never given back. (Had the give-back landed first, the settle would have been refused and a claim made anew.)
     */
    @Test
    void aRequestOfTheKeySentAgainWhileItsClaimIsGivenBackIsHandedThatClaimAndKeepsIt() throws Exception {
        held = givingBack();
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket gone = q.await(waiting("again", 30), "owner-a");
        java.util.concurrent.atomic.AtomicReference<CapacityQueue.Ticket> again =
                new java.util.concurrent.atomic.AtomicReference<>();
        q.beforeClaim(cmd -> {
            if (!r.pods.pods().isEmpty() && !gone.result().isDone()) {
                gone.subscription().leave();
                again.set(q.await(waiting("again", 30), "owner-a"));
            }
        });
        String pod = addRunner(51820);
        assertThat(held.awaitHeld(SOON.toSeconds())).as("the give-back's write held").isTrue();
        assertThat(failure(gone).code()).isEqualTo(499);

        Allocator.Allocation a = served(again.get());
        assertThat(a.replay()).isTrue();
        assertThat(a.pod().getMetadata().getName()).isEqualTo(pod);
        held.release();
        OperatorHarness.awaitTrue(() -> allocatorLogs.lines().stream().anyMatch(l -> l.getFormattedMessage()
                .startsWith("released pod=")), SOON, "the give-back over");
        assertThat(allocatorLogs.lines()).filteredOn(l -> l.getFormattedMessage().startsWith("released pod="))
                .singleElement().satisfies(l -> assertThat(l.getFormattedMessage()).contains("result=settled"));
        Pod now = r.inApi(pod);
        assertThat(ManagedPods.keyHash(now)).isEqualTo(ScriptedReplica.cmd("again").keyHash());
        assertThat(ClaimLedger.isSettled(now)).isTrue();
        assertThat(outcomes).containsExactly(prefix("again") + " left", prefix("again") + " served");
    }

    /**
     * A dealloc of the key ends the wait as its claim is about to be written, and the give-back of that claim is
     * slow: the dealloc answers only once the give-back is over (as it waits for the claim itself), so it never
     * answers while the claim is still on its pod. Here the give-back takes the claim off, and the dealloc then has
     * nothing of the key to delete: the pod stays in the pool.
     */
    @Test
    void aDeallocDuringTheClaimForItsWaitAnswersAfterItsSlowGiveBack() throws Exception {
        held = givingBack();
        start(0, 0, CapacityQueue.Limits.NONE);
        String key = ScriptedReplica.cmd("gone").keyHash();
        CapacityQueue.Ticket t = q.await(waiting("gone", 30), "owner-a");
        java.util.concurrent.CountDownLatch atClaim = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch go = stopsAtClaim(atClaim);
        String pod = addRunner(51820);
        assertThat(atClaim.await(SOON.toSeconds(), TimeUnit.SECONDS)).as("the dispatcher at the claim").isTrue();
        // the dealloc as the API runs it: the key's wait ended, then the key's pods deleted
        CompletableFuture<List<Pod>> dealloc = new CompletableFuture<>();
        Thread deallocating = new Thread(() -> {
            try {
                assertThat(q.cancel(key)).isTrue();
                dealloc.complete(r.allocator.deallocate(key));
            } catch (Throwable e) {
                dealloc.completeExceptionally(e);
            }
        }, "dealloc");
        deallocating.setDaemon(true);
        deallocating.start();
        OperatorHarness.awaitTrue(() -> dealloc.isDone() || q.cancelsAwaitingAClaim() > 0, SOON,
                "the dealloc answered or waiting for the claim");
        assertThat(failure(t).code()).isEqualTo(410);
        go.countDown();
        assertThat(held.awaitHeld(SOON.toSeconds())).as("the give-back's write held").isTrue();
        OperatorHarness.awaitTrue(() -> dealloc.isDone() || dispatcherIdle()
                && ScriptedReplica.parkedIn(deallocating, "CapacityQueue", "awaitAttempt"), SOON,
                "the dealloc answered, or waiting while the dispatcher is done");
        assertThat(dealloc.isDone()).as("the dealloc answered, the give-back still held").isFalse();
        assertThat(ManagedPods.keyHash(r.inApi(pod))).as("the claim, its give-back still held").isEqualTo(key);

        held.release();
        assertThat(dealloc.get(SOON.toSeconds(), TimeUnit.SECONDS)).as("deleted by the dealloc").isEmpty();
        Pod now = r.inApi(pod);
        assertThat(now).isNotNull();
        assertThat(ManagedPods.isClaimed(now)).isFalse();
        assertThat(outcomes).containsExactly(prefix("gone") + " deallocated");
    }

    /**
     * The queue closes (the operator stops) while the give-back of a claim written for a wait every client left is
     * under way (the API server has not answered its write): the give-back is not cut short, and the claim goes back
     * once its write is answered, instead of staying on its pod until its TTL.
     */
    @Test
    void aGiveBackUnderWayWhenTheQueueClosesStillTakesTheClaimBack() throws Exception {
        held = givingBack();
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket gone = q.await(waiting("gone", 30), "owner-a");
        leavesAsItsClaimIsWritten("gone", gone);
        String pod = addRunner(51820);
        assertThat(held.awaitHeld(SOON.toSeconds())).as("the give-back's write held").isTrue();
        assertThat(failure(gone).code()).isEqualTo(499);

        q.close();
        held.release();
        OperatorHarness.awaitTrue(() -> !ManagedPods.isClaimed(r.inApi(pod)), SOON, "the claim given back");
        // the give-back logs once its write is answered, which may be a moment after the API server has it
        OperatorHarness.awaitTrue(() -> allocatorLogs.lines().stream().anyMatch(l -> l.getFormattedMessage()
                .startsWith("released pod=")), SOON, "the give-back's log line");
        assertThat(allocatorLogs.lines()).anySatisfy(l -> assertThat(l.getFormattedMessage())
                .startsWith("released pod=").contains("result=rolled_back"));
    }

    /**
     * The dispatcher stops right before each claim, counting {@code atClaim} down, until the latch returned is
     * counted down.
     */
    java.util.concurrent.CountDownLatch stopsAtClaim(java.util.concurrent.CountDownLatch atClaim) {
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        q.beforeClaim(cmd -> {
            atClaim.countDown();
            try {
                go.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return go;
    }

    /** Every dispatcher of the queue is idle: done with its wake-ups, waiting for the next. */
    static boolean dispatcherIdle() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().equals("capacity-dispatch"))
                .allMatch(t -> ScriptedReplica.parkedIn(t, "LinkedBlockingQueue", "take"));
    }

    /**
     * The only client leaves while the claim for its wait is being written: nobody will get that pod, so the claim
     * goes back to the pool instead of being held until its TTL.
     */
    @Test
    void aClaimWrittenForAWaitEveryClientLeftGoesBack() throws Exception {
        goesAsItsClaimIsWritten("left", t -> t.subscription().leave(), 499, "left");
    }

    /**
     * The only client is answered (a reload of its route ends its wait) while the claim for its wait is being
     * written: its answer comes at once, without waiting for that write, and the claim goes back to the pool.
     */
    @Test
    void aClientAnsweredAsItsClaimIsWrittenIsAnsweredAtOnceAndTheClaimGoesBack() throws Exception {
        goesAsItsClaimIsWritten("ended", t -> t.subscription().end(ApiException.unavailable("routes reloaded", 1),
                "reloaded"), 503, "reloaded");
    }

    /**
     * The only client of a wait {@code goes} while the claim for it is being written (the API server holds the
     * write until the client is answered {@code code}): the claim is written, then taken back, and the wait ends
     * with {@code outcome}.
     */
    void goesAsItsClaimIsWritten(String key, java.util.function.Consumer<CapacityQueue.Ticket> goes, int code,
            String outcome) throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket t = q.await(waiting(key, 30), "owner-a");
        java.util.concurrent.CountDownLatch writing = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch answer = new java.util.concurrent.CountDownLatch(1);
        r.cluster.addRequestListener(k -> {
            if (k.equals("PATCH " + ScriptedReplica.podPath(ScriptedReplica.runner(0))) && writing.getCount() > 0) {
                writing.countDown();
                try {
                    answer.await(SOON.toSeconds(), TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        // the version the pod was created with: no read of the simulated API server while it holds the claim's
        // write (it answers one request at a time)
        Pod created = r.cluster.create(TestCluster.readyRunner("amd64", 51820, ScriptedReplica.NODE));
        String pod = created.getMetadata().getName();
        long idle = Long.parseLong(created.getMetadata().getResourceVersion());
        assertThat(writing.await(SOON.toSeconds(), TimeUnit.SECONDS)).isTrue();
        goes.accept(t);
        assertThat(failure(t).code()).isEqualTo(code);
        answer.countDown();
        // written (a newer version, claimed), then taken back (a newer version still, not claimed)
        OperatorHarness.awaitTrue(() -> r.cluster.pods().stream().anyMatch(p -> pod.equals(p.getMetadata().getName())
                && Long.parseLong(p.getMetadata().getResourceVersion()) > idle && !ManagedPods.isClaimed(p)), SOON,
                "the claim written and taken back");
        assertThat(r.cluster.pods()).hasSize(1).noneMatch(ManagedPods::isClaimed);
        assertThat(outcomes).containsExactly(prefix(key) + " " + outcome);
        assertNothingWaits();
    }

    /**
     * One of two clients of a key is answered before its wait ends (a reload of its route): it alone gets that
     * answer, at once; the other keeps waiting and is handed the pod that comes as new, never as a replay.
     */
    @Test
    void aClientAnsweredWhileAnotherOfItsKeyWaitsIsAnsweredAloneAndTheOtherGetsThePodAsNew() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket first = q.await(waiting("twins", 30), "owner-a");
        CapacityQueue.Ticket retry = q.await(waiting("twins", 30), "owner-a");
        first.subscription().end(ApiException.unavailable("routes reloaded", 1), "reloaded");
        assertThat(failure(first).code()).isEqualTo(503);
        assertThat(retry.result()).isNotDone();
        assertThat(q.waiting()).isEqualTo(1);
        assertThat(q.waitingRequests()).isEqualTo(1);

        String pod = addRunner(51820);
        Allocator.Allocation a = served(retry);
        assertThat(a.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(a.replay()).as("handed as new, so a caller that finds its client gone gives it back").isFalse();
        assertThat(outcomes).containsExactly(prefix("twins") + " served");
    }

    /**
     * The client leaves in the very moment its wait is handed the claim: after the claim is taken out of the line
     * for it (too late to be given back by the queue) and before its answer is complete (told to the observers in
     * between, where this test makes it leave). The claim is not left on the pod: the client is answered it as new,
     * which its caller, finding the connection closed, gives back (ApiFlows#allocate), and its place is freed.
     */
    @Test
    void aClientThatLeavesAsTheClaimIsHandedToItGetsItAsNewSoItsCallerGivesItBack() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        AllocCommand cmd = waiting("handover", 30);
        java.util.concurrent.atomic.AtomicReference<CapacityQueue.Ticket> ticket =
                new java.util.concurrent.atomic.AtomicReference<>();
        List<Boolean> doneWhenLeft = leaveWhenServed(ticket);
        ticket.set(q.await(cmd, "owner-a"));
        String pod = addRunner(51820);

        assertHandedAsNewAndGivenBack(ticket.get(), doneWhenLeft, pod, cmd);
        assertThat(outcomes).containsExactly(prefix("handover") + " served");
    }

    /**
     * Makes the client of {@code ticket} leave in the very moment its wait is served: after the claim is taken out
     * of the line for it and before its answer is complete (told to the observers in between). Returns whether its
     * answer was complete when it left, once it has.
     */
    List<Boolean> leaveWhenServed(java.util.concurrent.atomic.AtomicReference<CapacityQueue.Ticket> ticket) {
        List<Boolean> doneWhenLeft = new CopyOnWriteArrayList<>();
        q.addObserver((c, waited, outcome) -> {
            if (outcome.equals("served")) {
                doneWhenLeft.add(ticket.get().result().isDone());
                ticket.get().subscription().leave();
            }
        });
        return doneWhenLeft;
    }

    /**
     * The client of {@code t} left as its wait was served ({@link #leaveWhenServed}) and is answered the claim of
     * {@code pod} as new, so that its caller, finding the connection closed, gives it back; its place is freed.
     */
    void assertHandedAsNewAndGivenBack(CapacityQueue.Ticket t, List<Boolean> doneWhenLeft, String pod,
            AllocCommand cmd) throws Exception {
        Allocator.Allocation handed = served(t);
        assertThat(doneWhenLeft).as("left before its answer was complete").containsExactly(false);
        assertThat(handed.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(handed.replay()).as("answered as new, so the caller gives it back").isFalse();
        OperatorHarness.awaitTrue(() -> q.waitingRequests() == 0, SOON, "the place freed");
        assertNothingWaits();
        // what the caller does with a claim answered as new to a closed connection
        assertThat(r.allocator.release(handed, cmd)).isTrue();
        assertThat(r.cluster.pods()).hasSize(1).noneMatch(ManagedPods::isClaimed);
    }

    /**
     * A shared wait whose first client's time was up (answered its 503) and whose other client leaves in the very
     * moment the claim is handed to the wait: nobody is there any more, and the claim must go to a client whose
     * answer is still to come, as new, so that its caller, finding the connection closed, gives it back. Answered as
     * new to the client that already had its 503, it would reach nobody and stay on its pod.
     */
    @Test
    void aClientThatLeavesAsTheClaimIsHandedToItAfterItsTwinsTimeWasUpGetsItAsNew() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        AllocCommand hurried = waiting("handover-twin", 1);
        AllocCommand patient = waiting("handover-twin", 30);
        java.util.concurrent.atomic.AtomicReference<CapacityQueue.Ticket> ticket =
                new java.util.concurrent.atomic.AtomicReference<>();
        List<Boolean> doneWhenLeft = leaveWhenServed(ticket);
        CapacityQueue.Ticket first = q.await(hurried, "owner-a");
        ticket.set(q.await(patient, "owner-a"));
        assertThat(failure(first).code()).isEqualTo(503);
        OperatorHarness.awaitTrue(() -> q.waitingRequests("owner-a") == 1, SOON, "the first client's slot freed");
        String pod = addRunner(51820);

        assertHandedAsNewAndGivenBack(ticket.get(), doneWhenLeft, pod, patient);
    }

    /**
     * A shared wait whose first client is gone and whose other client is answered before its wait ends (a reload of
     * its route) in the very moment the claim is handed to the wait: too late for that answer, so the claim is the
     * other client's, as new; the gone client is handed it as a replay, which its caller never gives back. Handed as
     * new to the gone client, its caller would give back the pod the other client is answered.
     */
    @Test
    void aClientAnsweredAsTheClaimIsHandedToItAfterItsTwinLeftGetsItAsNewAndTheTwinAsAReplay() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        java.util.concurrent.atomic.AtomicReference<CapacityQueue.Ticket> ticket =
                new java.util.concurrent.atomic.AtomicReference<>();
        q.addObserver((c, waited, outcome) -> {
            if (outcome.equals("served")) {
                ticket.get().subscription().end(ApiException.unavailable("routes reloaded", 1), "reloaded");
            }
        });
        CapacityQueue.Ticket gone = q.await(waiting("reload-twin", 30), "owner-a");
        ticket.set(q.await(waiting("reload-twin", 30), "owner-a"));
        gone.subscription().leave();
        assertThat(q.waiting()).isEqualTo(1);
        String pod = addRunner(51820);

        Allocator.Allocation answered = served(ticket.get());
        assertThat(answered.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(answered.replay()).as("the claim is the answer of the client still there, as new").isFalse();
        assertThat(served(gone).replay()).as("the gone client's caller must not give back the pod").isTrue();
        assertThat(r.cluster.pods()).hasSize(1).allMatch(ManagedPods::isClaimed);
    }

    @Test
    void aRetriedKeyJoinsItsTwinAndGetsTheSameClaimAsAReplay() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket first = q.await(waiting("twin", 30), "owner-a");
        CapacityQueue.Ticket retry = q.await(waiting("twin", 30), "owner-a");
        CapacityQueue.Ticket third = q.await(waiting("twin", 30), "owner-a");
        // one wait, three clients, each counted against the owner
        assertThat(q.waiting()).isEqualTo(1);
        assertThat(q.waitingRequests("owner-a")).isEqualTo(3);
        assertThatThrownBy(() -> q.await(ScriptedReplica.otherRequest(ScriptedReplica.cmd("twin")).withLease(null, 30),
                "owner-a")).isInstanceOfSatisfying(ApiException.class, e -> {
                    assertThat(e.code()).isEqualTo(409);
                    assertThat(e.getMessage()).isEqualTo(Allocator.CONFLICT_MESSAGE);
                });
        assertThat(q.waitingRequests("owner-a")).isEqualTo(3);

        // one of the clients leaves: the others keep waiting
        first.subscription().leave();
        assertThat(q.waiting()).isEqualTo(1);
        assertThat(q.waitingRequests("owner-a")).isEqualTo(2);

        String pod = addRunner(51820);
        // two clients still there when the claim comes are both answered it, so each as a replay (which a client
        // gone by then never takes back), as is the one that left
        Allocator.Allocation viaRetry = served(retry);
        assertThat(viaRetry.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(viaRetry.replay()).isTrue();
        assertThat(served(third).pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(served(third).replay()).isTrue();
        assertThat(served(first).pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(served(first).replay()).isTrue();
        assertThat(r.cluster.pods()).filteredOn(ManagedPods::isClaimed).hasSize(1);
        OperatorHarness.awaitTrue(() -> q.waitingRequests() == 0, SOON, "every slot freed");
        assertThat(outcomes).containsExactly(prefix("twin") + " served");
    }

    /**
     * Two clients of one key are both still there when the claim comes: both are answered the pod, so a client that
     * turns out to be gone before its answer must not take it back (ApiFlows gives back what it was answered as new)
     * while the other client holds it.
     */
    @Test
    void aClaimTwoClientsStillWaitForIsNotTakenBackWhenOneOfThemIsGone() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        AllocCommand cmd = waiting("both", 30);
        CapacityQueue.Ticket first = q.await(cmd, "owner-a");
        CapacityQueue.Ticket retry = q.await(cmd, "owner-a");
        String pod = addRunner(51820);
        Allocator.Allocation toFirst = served(first);
        Allocator.Allocation toRetry = served(retry);
        assertThat(toFirst.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(toRetry.pod().getMetadata().getName()).isEqualTo(pod);
        // whichever client's connection is found closed when its answer is written gives back what it got
        assertThat(r.allocator.release(toFirst, cmd)).isFalse();
        assertThat(r.allocator.release(toRetry, cmd)).isFalse();
        assertThat(r.cluster.pods()).filteredOn(ManagedPods::isClaimed).hasSize(1);
        assertThat(outcomes).containsExactly(prefix("both") + " served");
    }

    /**
     * waitSeconds is not part of what a retry must match, but each request waits only as long as it asked: a retry
     * that asked for less is answered the 503 when its own time is up, and the wait goes on for the first.
     */
    @Test
    void aRetryWithAShorterWaitIsAnsweredWhenItsOwnTimeIsUp() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket first = q.await(waiting("patient", 30), "owner-a");
        CapacityQueue.Ticket hurried = q.await(waiting("patient", 1), "owner-a");
        ApiException e = failure(hurried);
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).contains("no pod was free for it in the 1 second this request waited");
        assertThat(first.result()).isNotDone();
        assertThat(q.waiting()).isEqualTo(1);
        OperatorHarness.awaitTrue(() -> q.waitingRequests("owner-a") == 1, SOON, "the retry's slot freed");
        String pod = addRunner(51820);
        assertThat(served(first).pod().getMetadata().getName()).isEqualTo(pod);
        OperatorHarness.awaitTrue(() -> q.waitingRequests() == 0, SOON, "every slot freed");
        assertNothingWaits();
    }

    /**
     * A user at their allocation quota who asks to wait is refused 429 at once, also while another user's request
     * waits ahead of theirs (not kept in line to end with a 503 saying no pod became idle).
     */
    @Test
    void aUserAtQuotaIsRefusedAtOnceAlsoBehindAnotherWaiter() throws Exception {
        start(1, 1, CapacityQueue.Limits.NONE);
        assertThat(served(q.await(waiting("mine", 30), "owner-a")).replay()).isFalse();
        CapacityQueue.Ticket ahead = q.await(waiting("ahead", 30), "owner-b");
        OperatorHarness.awaitTrue(() -> q.waiting() == 1, SOON, "another user waits");
        ApiException e;
        try {
            e = failure(q.await(waiting("more", 30), "owner-a"));
        } catch (ApiException refused) {
            e = refused;
        }
        assertThat(e.code()).isEqualTo(429);
        assertThat(e.getMessage()).startsWith("allocation quota exceeded: you hold 1 of at most 1 allocations");
        assertThat(ahead.result()).isNotDone();
        OperatorHarness.awaitTrue(() -> q.waitingRequests("owner-a") == 0, SOON, "owner-a waits for nothing");
    }

    /**
     * The user's last allocation was made a moment ago through another replica, and this replica's watch has not
     * delivered it yet: the request that asks to wait is refused 429 at once all the same, on the API server's count,
     * instead of waiting in line for a pod its claim would be refused (or for its whole wait, then a 503).
     */
    @Test
    void aUserAtQuotaByAClaimTheWatchHasNotDeliveredIsRefusedAtOnce() throws Exception {
        start(0, 1, CapacityQueue.Limits.NONE);
        r.watch.hold();
        String elsewhere = pendingPod(51830);
        r.claimElsewhere(elsewhere, ScriptedReplica.cmd("made-elsewhere"), "owner-a");
        assertThat(r.allocator.ownedBy("owner-a")).as("the watch has not delivered that claim").isZero();

        ApiException e = catchThrowableOfType(ApiException.class, () -> q.await(waiting("more", 30), "owner-a"));
        assertThat(e).as("refused at once, not queued").isNotNull();
        assertThat(e.code()).isEqualTo(429);
        assertThat(e.getMessage()).isEqualTo("allocation quota exceeded: you hold 1 of at most 1 allocations"
                + " (--max-allocs-per-user); deallocate one first");
        assertNothingWaits();
        r.watch.release();
    }

    /**
     * A request sent again with the key of a request still waiting is counted against the quota anew, on the API
     * server's count of its user's claims then, before it joins that wait: the first request's count may be out of
     * date. Here the user's last allocation was made through another replica after the first request was counted,
     * and this replica's watch has not delivered it: the retry is refused 429 at once (neither the first request's
     * count nor this replica's cache knows of that allocation), while the first request still waits.
     */
    @Test
    void aRetryOfAWaitingKeyIsCountedAgainstTheQuotaAnewBeforeItJoins() throws Exception {
        start(0, 1, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket first = q.await(waiting("twin", 30), "owner-a");
        assertThat(q.waiting()).isEqualTo(1);
        r.watch.hold();
        String elsewhere = pendingPod(51830);
        r.claimElsewhere(elsewhere, ScriptedReplica.cmd("made-elsewhere"), "owner-a");
        assertThat(r.allocator.ownedBy("owner-a")).as("the watch has not delivered that claim").isZero();
        long lists = r.calls.get(KubeApiCall.PODS_LIST);

        ApiException e = catchThrowableOfType(ApiException.class, () -> q.await(waiting("twin", 30), "owner-a"));
        assertThat(e).as("refused at once, not joined to the wait").isNotNull();
        assertThat(e.code()).isEqualTo(429);
        assertThat(e.getMessage()).startsWith("allocation quota exceeded: you hold 1 of at most 1 allocations");
        assertThat(r.calls.get(KubeApiCall.PODS_LIST) - lists).as("the retry's own count of the user's claims")
                .isEqualTo(1);
        assertThat(first.result()).isNotDone();
        assertThat(q.waitingRequests("owner-a")).as("the first request alone").isEqualTo(1);
        r.watch.release();
    }

    @Test
    void thePerUserAndTotalCapsRefuseWith429BeforeAnythingWaits() throws Exception {
        start(0, 0, new CapacityQueue.Limits(2, 3, 7));
        CapacityQueue.Ticket a1 = q.await(waiting("a1", 30), "owner-a");
        q.await(waiting("a2", 30), "owner-a");
        assertThatThrownBy(() -> q.await(waiting("a3", 30), "owner-a"))
                .isInstanceOfSatisfying(ApiException.class, e -> {
                    assertThat(e.code()).isEqualTo(429);
                    assertThat(e.reason()).isEqualTo("TooManyRequests");
                    assertThat(e.headers()).containsEntry("Retry-After", "7");
                    assertThat(e.getMessage()).isEqualTo("you have 2 alloc requests waiting for capacity, the most one"
                            + " user may have (--max-waiting-per-user); wait for one of them to be answered, or ask"
                            + " without waitSeconds");
                });
        // a retry of a waiting key is a client that waits too
        assertThatThrownBy(() -> q.await(waiting("a1", 30), "owner-a")).isInstanceOf(ApiException.class);
        q.await(waiting("b1", 30), "owner-b");
        assertThatThrownBy(() -> q.await(waiting("b2", 30), "owner-b"))
                .isInstanceOfSatisfying(ApiException.class, e -> {
                    assertThat(e.code()).isEqualTo(429);
                    assertThat(e.headers()).containsEntry("Retry-After", "7");
                    assertThat(e.getMessage()).isEqualTo("too many alloc requests are waiting for capacity (3,"
                            + " --max-waiting); retry later, or ask without waitSeconds for an answer now");
                });
        assertThat(q.waiting()).isEqualTo(3);
        assertThat(q.waitingRequests()).isEqualTo(3);

        // a place freed (its client left) is a place again, for the same user
        a1.subscription().leave();
        a1.subscription().leave();
        assertThat(q.waitingRequests()).isEqualTo(2);
        assertThat(q.waitingRequests("owner-a")).isEqualTo(1);
        q.await(waiting("a4", 30), "owner-a");
        assertThat(q.waitingRequests("owner-a")).isEqualTo(2);
        assertThat(outcomes).containsExactly(prefix("a1") + " left");
    }

    @Test
    void aWaitThatEndsIsThe503WithWhyAndHowLongItWaited() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        long start = System.nanoTime();
        CapacityQueue.Ticket t = q.await(waiting("late", 1), null);
        ApiException e = failure(t);
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        // the observers are told how long it waited: its second, within what the caller saw
        assertThat(waits).hasSize(1);
        assertThat(waits.get(0)).isGreaterThanOrEqualTo(Duration.ofMillis(900)).isLessThanOrEqualTo(elapsed);
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.headers()).containsEntry("Retry-After", "1");
        assertThat(e.getMessage()).isEqualTo("no idle amd64 playpen runner pods are available; no pod was free for it in the"
                + " 1 second this request waited; kubectl get pools shows which pools have idle pods");
        assertNothingWaits();
        assertThat(outcomes).containsExactly(prefix("late") + " timeout");
        assertThat(CapacityQueue.waitedAdvice(30)).startsWith("; no pod was free for it in the 30 seconds this request");
    }

    /**
     * Two requests wait in line and one pod comes: the first is served, and the second, when its time is up, is
     * told that a pod went to a request ahead of it in line, not that no pod was free for it while it waited.
     */
    @Test
    void aWaitInVainBehindARequestThatWasServedSaysSo() throws Exception {
        clientTimers = new ManualTimers();
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket ahead = q.await(waiting("ahead", 30), "owner-a");
        CapacityQueue.Ticket behind = q.await(waiting("behind", 30), "owner-b");
        assertThat(clientTimers.scheduled).hasSize(2);
        addRunner(51820);
        assertThat(served(ahead).replay()).isFalse();
        assertThat(behind.result()).isNotDone();

        clientTimers.scheduled.get(1).run();
        ApiException e = failure(behind);
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).isEqualTo("no idle amd64 playpen runner pods are available; in the 30 seconds this"
                + " request waited, 1 pod went to a request ahead of it in line and none was left for it; kubectl get"
                + " pools shows which pools have idle pods");
        assertThat(outcomes).containsExactly(prefix("ahead") + " served", prefix("behind") + " timeout");
    }

    /**
     * A waiter whose key is claimed meanwhile by another request (on another replica, or one that did not wait) is
     * answered that claim, as a replay, once the watch shows it: it is not kept behind a head that no pod comes for
     * until its time is up, and then told that no pod became idle while its key holds one.
     */
    @Test
    void aWaiterWhoseKeyIsClaimedByAnotherRequestIsAnsweredThatClaim() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket head = q.await(waiting("head", 30), "owner-a");
        AllocCommand key = waiting("claimed-elsewhere", 30);
        CapacityQueue.Ticket behind = q.await(key, "owner-b");
        // a pod this replica cannot hand out (still starting), claimed for the key behind the head elsewhere
        String pod = pendingPod(51820);
        r.claimElsewhere(pod, key, "owner-b");
        Allocator.Allocation a = served(behind);
        assertThat(a.replay()).isTrue();
        assertThat(a.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(head.result()).isNotDone();
        assertThat(q.waiting()).isEqualTo(1);
        assertThat(q.waitingRequests("owner-b")).isZero();
        assertThat(outcomes).containsExactly(prefix("claimed-elsewhere") + " served");
    }

    /**
     * A waiter behind a head whose key another request claims meanwhile with another body (a client that reused its
     * key, here or on another replica) is answered the 409 as soon as the claim shows: no pod turns idle meanwhile
     * and the backstop sweep is off, so the claim's own pod event is what has its key looked up.
     */
    @Test
    void aWaiterWhoseKeyIsClaimedWithAnotherRequestGetsThe409AsTheClaimShows() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket head = q.await(waiting("head", 30), "owner-a");
        AllocCommand key = waiting("reused", 30);
        CapacityQueue.Ticket behind = q.await(key, "owner-b");
        String pod = pendingPod(51820);
        r.claimElsewhere(pod, ScriptedReplica.otherRequest(key), "owner-b");
        ApiException e = failure(behind);
        assertThat(e.code()).isEqualTo(409);
        assertThat(e.getMessage()).isEqualTo(Allocator.CONFLICT_MESSAGE);
        assertThat(head.result()).isNotDone();
        assertThat(q.waiting()).isEqualTo(1);
        assertThat(q.waitingRequests("owner-b")).isZero();
        assertThat(outcomes).containsExactly(prefix("reused") + " failed");
    }

    /**
     * The claim of a waiter's key shows, but answering it fails for a passing reason (the API server refuses the
     * write that makes it safe to hand out with a 500): the waiter stays in line, and its key is looked up again on
     * the next wake-up, which answers it once the API server does, with no new pod event for the key.
     */
    @Test
    void aWaiterWhoseClaimedKeyCouldNotBeAnsweredYetIsAnsweredOnTheNextWakeUp() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket head = q.await(waiting("head", 30), "owner-a");
        AllocCommand key = waiting("refused-once", 30);
        CapacityQueue.Ticket behind = q.await(key, "owner-b");
        String pod = pendingPod(51820);
        OperatorHarness.awaitTrue(() -> r.pods.get(pod).isPresent(), SOON, "the new pod cached");
        String patch = "PATCH " + ScriptedReplica.podPath(pod);
        r.watch.hold();
        r.claimElsewhere(pod, key, "owner-b");
        int before = r.cluster.requestCount(patch::equals);
        r.cluster.failBeforeWrite = patch::equals;
        r.watch.release();
        // the write and the client's one retry of it (KubeClients), both refused
        OperatorHarness.awaitTrue(() -> r.cluster.requestCount(patch::equals) >= before + 2, SOON,
                "the refused writes of the answer");
        assertThat(behind.result()).as("a waiter whose answer met a 500").isNotDone();
        r.cluster.failBeforeWrite = k -> false;
        q.requestDrain();
        Allocator.Allocation a = served(behind);
        assertThat(a.replay()).isTrue();
        assertThat(a.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(head.result()).isNotDone();
        assertThat(outcomes).containsExactly(prefix("refused-once") + " served");
    }

    /**
     * Should the queue miss the pod event of a claim of a waiter's key, its backstop sweep still looks the key up:
     * here the queue hears of no pod event at all, and the waiter behind a head is answered the claim by the sweep.
     */
    @Test
    void theSweepAnswersAWaiterWhoseKeysClaimNoEventShowedTheQueue() throws Exception {
        r = new ScriptedReplica(0, 0);
        q = new CapacityQueue(r.allocator, CapacityQueue.Limits.NONE, Duration.ofMillis(200));
        q.addObserver((cmd, waited, outcome) -> outcomes.add(cmd.keyHashPrefix() + " " + outcome));
        CapacityQueue.Ticket head = q.await(waiting("head", 60), "owner-a");
        AllocCommand key = waiting("unheard", 60);
        CapacityQueue.Ticket behind = q.await(key, "owner-b");
        String pod = pendingPod(51820);
        r.claimElsewhere(pod, key, "owner-b");
        Allocator.Allocation a = served(behind);
        assertThat(a.replay()).isTrue();
        assertThat(a.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(head.result()).isNotDone();
        assertThat(outcomes).containsExactly(prefix("unheard") + " served");
    }

    /**
     * Looking up one waiter's key in the claim ledger fails (a fault of this replica): the keys of that pass not yet
     * looked up stay named for the next drain, so the next wake-up answers the claims they carry, not only the next
     * backstop sweep (off here, as are the pod events but the two the test hands the queue).
     */
    @Test
    void aFailedLookUpOfOneKeyLeavesTheKeysNotYetLookedUpForTheNextDrain() throws Exception {
        r = new ScriptedReplica(0, 0);
        AllocCommand first = waiting("first", 60);
        AllocCommand second = waiting("second", 60);
        java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicBoolean failed = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.Set<String> looked = java.util.concurrent.ConcurrentHashMap.newKeySet();
        q = new CapacityQueue(r.allocator, CapacityQueue.Limits.NONE, Duration.ofHours(1), key -> {
            looked.add(key);
            if (armed.get() && key.equals(first.keyHash()) && failed.compareAndSet(false, true)) {
                throw new IllegalStateException("the claim ledger failed");
            }
            return r.allocator.knowsStandingClaim(key);
        });
        q.addObserver((cmd, waited, outcome) -> outcomes.add(cmd.keyHashPrefix() + " " + outcome));
        CapacityQueue.Ticket head = q.await(waiting("head", 60), "owner-a");
        CapacityQueue.Ticket one = q.await(first, "owner-b");
        CapacityQueue.Ticket two = q.await(second, "owner-c");
        // the keys named as the waiters joined are looked up (no claim yet): none is left named
        OperatorHarness.awaitTrue(() -> looked.contains(second.keyHash()), SOON, "the joined keys looked up");
        String podOne = pendingPod(51820);
        String podTwo = pendingPod(51821);
        r.claimElsewhere(podOne, first, "owner-b");
        r.claimElsewhere(podTwo, second, "owner-c");
        OperatorHarness.awaitTrue(() -> r.allocator.knowsStandingClaim(first.keyHash())
                && r.allocator.knowsStandingClaim(second.keyHash()), SOON, "both claims cached");
        // both keys named for one drain (the test holds the queue's lock, so none runs before both are)
        synchronized (q) {
            armed.set(true);
            q.onPodEvent(PodCache.Change.UPDATED, r.pods.get(podOne).orElseThrow());
            q.onPodEvent(PodCache.Change.UPDATED, r.pods.get(podTwo).orElseThrow());
        }
        OperatorHarness.awaitTrue(failed::get, SOON, "the failed look-up");
        // a wake-up that names no key (another pod's event, a node turning Ready)
        q.requestDrain();
        assertThat(served(one).pod().getMetadata().getName()).isEqualTo(podOne);
        assertThat(served(two).pod().getMetadata().getName()).isEqualTo(podTwo);
        assertThat(head.result()).isNotDone();
        assertThat(outcomes).containsExactlyInAnyOrder(prefix("first") + " served", prefix("second") + " served");
    }

    @Test
    void aDeallocEndsTheWaitWith410AndNothingIsClaimedForIt() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket t = q.await(waiting("gone", 30), "owner-a");
        assertThat(q.cancel(ScriptedReplica.cmd("other").keyHash())).isFalse();
        assertThat(q.cancel(ScriptedReplica.cmd("gone").keyHash())).isTrue();
        ApiException e = failure(t);
        assertThat(e.code()).isEqualTo(410);
        assertThat(e.reason()).isEqualTo("Gone");
        // what happened to this request, and what to do should the caller still need an allocation
        assertThat(e.getMessage()).isEqualTo("the allocation was deallocated while it waited for capacity: nothing"
                + " was allocated for this request; send it again should you still need an allocation");
        assertThat(q.cancel(ScriptedReplica.cmd("gone").keyHash())).isFalse();
        assertNothingWaits();
        addRunner(51820);
        q.drain();
        assertThat(r.cluster.pods()).noneMatch(ManagedPods::isClaimed);
        assertThat(outcomes).containsExactly(prefix("gone") + " deallocated");
    }

    /**
     * A dealloc that ends a wait while the dispatcher is about to claim for it (it took the wait as its head, the
     * claim not written yet) answers only once that claim is over: its give-back, or its delete by the dealloc,
     * comes before the dealloc's answer. Before, the dealloc found nothing to delete and answered at once, and the
     * claim landed on a pod after the key was said to be released.
     */
    @Test
    void aDeallocDuringTheClaimForItsWaitAnswersAfterThatClaimIsOver() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        java.util.concurrent.CountDownLatch atClaim = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch go = stopsAtClaim(atClaim);
        String key = ScriptedReplica.cmd("gone").keyHash();
        CapacityQueue.Ticket t = q.await(waiting("gone", 30), "owner-a");
        String pod = addRunner(51820);
        assertThat(atClaim.await(SOON.toSeconds(), TimeUnit.SECONDS)).as("the dispatcher at the claim").isTrue();

        // pod writes from the moment the dealloc has answered
        java.util.concurrent.atomic.AtomicBoolean answered = new java.util.concurrent.atomic.AtomicBoolean();
        List<String> writesAfter = new CopyOnWriteArrayList<>();
        List<String> patches = new CopyOnWriteArrayList<>();
        r.cluster.addRequestListener(k -> {
            if (k.startsWith("PATCH ")) {
                patches.add(k);
            }
            if (answered.get() && (k.startsWith("PATCH ") || k.startsWith("PUT ") || k.startsWith("DELETE "))) {
                writesAfter.add(k);
            }
        });
        // the dealloc as the API runs it: the key's wait ended, then the key's pods deleted
        CompletableFuture<List<Pod>> dealloc = CompletableFuture.supplyAsync(() -> {
            assertThat(q.cancel(key)).isTrue();
            List<Pod> deleted = r.allocator.deallocate(key);
            answered.set(true);
            return deleted;
        });
        OperatorHarness.awaitTrue(() -> dealloc.isDone() || q.cancelsAwaitingAClaim() > 0, SOON,
                "the dealloc answered or waiting for the claim");
        assertThat(failure(t).code()).isEqualTo(410);
        go.countDown();
        dealloc.get(SOON.toSeconds(), TimeUnit.SECONDS);
        // the dispatcher's claim and its give-back (the wait it was for has ended), whenever they come
        OperatorHarness.awaitTrue(() -> patches.size() >= 2, SOON, "the claim and its give-back");
        assertThat(r.cluster.pods()).as("no pod carries the key once the dealloc answered").noneMatch(ManagedPods::isClaimed);
        assertThat(writesAfter).as("nothing written for the key after the dealloc answered").isEmpty();
        assertThat(r.cluster.pods()).extracting(p -> p.getMetadata().getName()).contains(pod);
    }

    /** A dealloc refused because the pod cache is not synced changes nothing: a request of its key keeps waiting. */
    @Test
    void aDeallocRefusedBeforeThePodCacheSyncedLeavesTheWaitAlone() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket t = q.await(waiting("kept", 30), "owner-a");
        Allocator unsynced = new Allocator(new PodCache(null, TestCluster.NS, p -> null), r.nodes, r.writer,
                r.candidates, 4);
        io.unboundedcloud.playpen.camel.ApiFlows flows = new io.unboundedcloud.playpen.camel.ApiFlows(null, null,
                unsynced, null, () -> null, 4, q);
        org.apache.camel.Exchange exchange = new org.apache.camel.support.DefaultExchange(
                new org.apache.camel.impl.DefaultCamelContext());

        ApiException e = org.assertj.core.api.Assertions.catchThrowableOfType(ApiException.class,
                () -> flows.deleteClaimed(ScriptedReplica.cmd("kept").keyHash(), null, exchange));

        assertThat(e.code()).isEqualTo(503);
        assertThat(t.result()).as("the request of the key still waits").isNotDone();
        assertThat(q.waiting()).isEqualTo(1);
        assertThat(outcomes).isEmpty();
    }

    @Test
    void anErrorOfOneWaiterEndsThatWaitAndTheNextIsServed() throws Exception {
        // quota 1: owner-a's two requests both wait (owner-a holds nothing yet), and once the first is served the
        // same drain goes on to the second, whose claim is refused (429), and past it to owner-b's
        start(0, 1, CapacityQueue.Limits.NONE);
        String held = prefix("held");
        CapacityQueue.Ticket first = q.await(waiting("held", 30), "owner-a");
        CapacityQueue.Ticket over = q.await(waiting("over", 30), "owner-a");
        CapacityQueue.Ticket next = q.await(waiting("next", 30), "owner-b");
        assertThat(q.waiting()).isEqualTo(3);
        addRunner(51820);
        assertThat(served(first).pod().getMetadata().getName()).isEqualTo("playpen-runner-amd64-51820");
        ApiException e = failure(over);
        assertThat(e.code()).isEqualTo(429);
        assertThat(e.getMessage()).startsWith("allocation quota exceeded: you hold 1 of at most 1 allocations");
        // the same drain went on past the refused waiter: the next one is still in line, and served by a new pod
        OperatorHarness.awaitTrue(() -> q.waiting() == 1, SOON, "the refused waiter out of the line");
        assertThat(next.result()).isNotDone();
        String pod = addRunner(51821);
        assertThat(served(next).pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(q.waiting()).isZero();
        assertThat(outcomes).containsExactly(held + " served", prefix("over") + " failed", prefix("next") + " served");
    }

    /**
     * The API server refuses the claim written for a waiter with a 500 (nothing written): a passing failure, so the
     * waiter keeps its place and is served on a later wake-up, once the API server answers again.
     */
    @Test
    void aPassingErrorOfAClaimKeepsTheWaiterInLine() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket t = q.await(waiting("patient", 30), "owner-a");
        String patch = "PATCH " + ScriptedReplica.podPath(ScriptedReplica.runner(0));
        r.cluster.failBeforeWrite = patch::equals;
        String pod = addRunner(51820);
        // a pass of the test's own while the API server still refuses (the dispatcher's may have come first)
        q.drain();
        assertThat(r.cluster.requestCount(patch::equals)).isPositive();
        assertThat(t.result()).as("a waiter whose claim met a 500").isNotDone();
        assertThat(q.waiting()).isEqualTo(1);
        r.cluster.failBeforeWrite = k -> false;
        q.requestDrain();
        assertThat(served(t).pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(outcomes).containsExactly(prefix("patient") + " served");
    }

    /**
     * This replica's watch lags, so the claim written for a waiter cannot be confirmed in time ("behind", the claim
     * taken back): the waiter stays in line and is served once the watch has caught up, within its own time.
     */
    @Test
    void aLaggingWatchDoesNotEndTheWait() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        String pod = addRunner(51820);
        String patch = "PATCH " + ScriptedReplica.podPath(pod);
        r.watch.hold();
        CapacityQueue.Ticket t = q.await(waiting("lagging", 55), "owner-a");
        // the claim, then (its verdict not in time) its rollback
        OperatorHarness.awaitTrue(() -> r.cluster.requestCount(patch::equals) >= 2
                && r.cluster.pods().stream().noneMatch(ManagedPods::isClaimed), Duration.ofSeconds(60),
                "the unconfirmed claim taken back");
        r.watch.release();
        assertThat(served(t).pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(outcomes).containsExactly(prefix("lagging") + " served");
    }

    /**
     * A waiter whose claims failed for a passing reason (here the API server's 500) is not told, when its time is up,
     * that no pod became idle: an idle pod was there and could not be claimed. It is told why, still a 503 with
     * Retry-After, and it is not counted as a wait for lack of a pod (its message does not start "no idle").
     */
    @Test
    void aWaitWhoseClaimsFailedForAPassingReasonSaysWhyWhenItsTimeIsUp() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        String patch = "PATCH " + ScriptedReplica.podPath(ScriptedReplica.runner(0));
        r.cluster.failBeforeWrite = patch::equals;
        CapacityQueue.Ticket t = q.await(waiting("refused", 2), "owner-a");
        addRunner(51820);
        q.drain();
        assertThat(r.cluster.requestCount(patch::equals)).isPositive();
        ApiException e = failure(t);
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.headers()).containsEntry("Retry-After", "1");
        // a claim answered 500 may still be committed later: with its fence refused too, nothing tells whether it was
        assertThat(e.getMessage()).isEqualTo("no amd64 playpen runner pod could be claimed in the 2 seconds this"
                + " request waited: a claim failed because the Kubernetes API server gave no clear answer to the claim"
                + " of pod " + ScriptedReplica.runner(0) + " (it answered 500), and whether it was made could not be"
                + " learnt: nothing may have been allocated, and the same request sent again with the same"
                + " idempotency key answers with the allocation if there is one; try again");
        assertThat(outcomes).containsExactly(prefix("refused") + " timeout");
        assertNothingWaits();
    }

    /**
     * An observer (the metrics) that throws must not leave a waiter unanswered: each wait is answered whatever its
     * observers do, the failure is logged, and the observers after it are still told.
     */
    @Test
    void anObserverThatThrowsLeavesNoWaiterUnanswered() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        q.addObserver((cmd, waited, outcome) -> {
            throw new IllegalStateException("observer broken");
        });
        List<String> after = new CopyOnWriteArrayList<>();
        q.addObserver((cmd, waited, outcome) -> after.add(outcome));
        CapacityQueue.Ticket served = q.await(waiting("served", 30), "owner-a");
        CapacityQueue.Ticket late = q.await(waiting("late", 1), "owner-b");
        CapacityQueue.Ticket gone = q.await(ScriptedReplica.cmd("gone").withLease(null, 30), "owner-c");
        CapacityQueue.Ticket stopped = q.await(ScriptedReplica.cmd("stopped").withLease(null, 30), "owner-d");
        String pod = addRunner(51820);
        assertThat(served(served).pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(failure(late).code()).isEqualTo(503);
        gone.subscription().leave();
        assertThat(failure(gone).code()).isEqualTo(499);
        q.close();
        assertThat(failure(stopped).code()).isEqualTo(503);
        assertThat(outcomes).containsExactlyInAnyOrder(prefix("served") + " served", prefix("late") + " timeout",
                prefix("gone") + " left", prefix("stopped") + " shutdown");
        assertThat(after).containsExactlyInAnyOrder("served", "timeout", "left", "shutdown");
        assertThat(logs.lines()).anySatisfy(l -> {
            assertThat(l.getLevel()).isEqualTo(ch.qos.logback.classic.Level.WARN);
            assertThat(l.getFormattedMessage()).startsWith("wait observer failed").contains("observer broken");
        });
    }

    /**
     * A node's change can make an idle pod usable (here its node gets an ExternalIP): the node watch wakes the
     * queue as a pod event does (wired as the operator wires it), not the backstop wake-up, which these tests turn
     * off.
     */
    @Test
    void aNodeThatGetsItsExternalIpWakesTheQueue() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        r.nodes.addListener(q::requestDrain);
        r.cluster.addNode("node-b", "amd64", null);
        CapacityQueue.Ticket t = q.await(waiting("node", 30), "owner-a");
        Pod p = r.cluster.create(TestCluster.readyRunner("amd64", 51820, "node-b"));
        String pod = p.getMetadata().getName();
        OperatorHarness.awaitTrue(() -> r.pods.get(pod).isPresent(), SOON, "the pod cached");
        // the pod's own wake-up found it unusable (its node has no ExternalIP yet), and the dispatcher is idle
        OperatorHarness.awaitTrue(() -> Thread.getAllStackTraces().keySet().stream()
                .filter(th -> th.isAlive() && th.getName().equals("capacity-dispatch"))
                .allMatch(th -> ScriptedReplica.parkedIn(th, "LinkedBlockingQueue", "take")), SOON, "the dispatcher idle");
        assertThat(t.result()).isNotDone();
        r.cluster.client.nodes().withName("node-b").edit(n -> new io.fabric8.kubernetes.api.model.NodeBuilder(n)
                .editStatus().addNewAddress().withType("ExternalIP").withAddress("203.0.113.11").endAddress()
                .endStatus().build());
        Allocator.Allocation a = served(t);
        assertThat(a.pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(a.externalIp()).isEqualTo("203.0.113.11");
        assertThat(outcomes).containsExactly(prefix("node") + " served");
    }

    /**
     * One kind's head can hold a claim attempt for long, here up to the allocator's confirm time: its claim's commit
     * never reaches this replica's watch (dropped, while the watch goes on delivering everything after it). A waiter
     * of another kind, whose pods are idle and whose claims the watch confirms, is served meanwhile, not only once
     * that attempt has ended (with a short waitSeconds, it would have waited in vain).
     */
    @Test
    void aSlowClaimOfOneKindDoesNotHoldAnotherKindsLine() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        r.cluster.addNode("node-arm", "arm64", "203.0.113.12");
        Pod armPod = r.cluster.create(TestCluster.readyRunner("arm64", 51900, "node-arm"));
        String arm = armPod.getMetadata().getName();
        OperatorHarness.awaitTrue(() -> r.pods.get(arm).isPresent(), SOON, "the arm64 pod cached");
        String amd = addRunner(51820);
        String patch = "PATCH " + ScriptedReplica.podPath(amd);
        r.watch.hold();
        CapacityQueue.Ticket slow = q.await(waiting("slow", 55), "owner-a");
        OperatorHarness.awaitTrue(() -> r.cluster.requestCount(patch::equals) == 1 && Thread.getAllStackTraces()
                .keySet().stream().anyMatch(t -> t.isAlive() && t.getName().equals("capacity-dispatch")
                        && ScriptedReplica.parkedIn(t, "ClaimResolver", "await")), SOON,
                "the amd64 claim written and waiting for the watch");
        r.watch.forget();
        r.watch.release();
        AllocCommand other = new AllocCommand(io.unboundedcloud.playpen.model.Hashes.keyHash("other-kind"),
                ResourceType.RUNNER, "", TestCluster.wgKey(3), "arm64").withLease(null, 55);
        CapacityQueue.Ticket served = q.await(other, "owner-b");
        Allocator.Allocation a = served.result().get(60, TimeUnit.SECONDS);
        assertThat(a.pod().getMetadata().getName()).isEqualTo(arm);
        // served while the amd64 attempt still waits: its claim neither confirmed nor taken back yet
        assertThat(r.cluster.requestCount(patch::equals)).as("writes to the amd64 pod").isEqualTo(1);
        assertThat(ManagedPods.isClaimed(r.inApi(amd))).isTrue();
        assertThat(slow.result()).isNotDone();
        assertThat(outcomes).containsExactly(io.unboundedcloud.playpen.model.Hashes.keyHashPrefix(other.keyHash())
                + " served");
    }

    /**
     * A request sent again with its key just as the last client of the wait has its time up joins the wait and
     * keeps waiting for its own waitSeconds: it is not answered the other client's 503 at once. The queue's lock is held by the test while the other client's end is under way (its thread waits for
     * the lock inside the queue), and the retry is sent then.
     */
    @Test
    void aRetryThatJoinsAsTheLastClientsTimeIsUpKeepsWaiting() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket first = q.await(waiting("edge", 1), "owner-a");
        CapacityQueue.Ticket retry;
        synchronized (q) {
            OperatorHarness.awaitTrue(() -> blockedInQueue("capacity-timeouts"), SOON,
                    "the first client's time up, its end waiting for the queue");
            retry = q.await(waiting("edge", 30), "owner-a");
        }
        assertThat(failure(first).code()).isEqualTo(503);
        assertThat(q.waiting()).as("waits").isEqualTo(1);
        assertThat(q.waitingRequests("owner-a")).isEqualTo(1);
        String pod = addRunner(51820);
        assertThat(served(retry).pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(outcomes).containsExactly(prefix("edge") + " served");
    }

    /** The named thread waits for the queue's lock inside the queue. */
    static boolean blockedInQueue(String threadName) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().equals(threadName))
                .anyMatch(t -> t.getState() == Thread.State.BLOCKED && java.util.Arrays.stream(t.getStackTrace())
                        .anyMatch(e -> e.getClassName().equals(CapacityQueue.class.getName())));
    }

    /** A claim the API server forbids (RBAC) is no passing failure: the wait ends with that error at once. */
    @Test
    void aForbiddenClaimEndsTheWait() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket t = q.await(waiting("forbidden", 30), "owner-a");
        String patch = "PATCH " + ScriptedReplica.podPath(ScriptedReplica.runner(0));
        r.cluster.forbidden = patch::equals;
        addRunner(51820);
        try {
            t.result().get(SOON.toSeconds(), TimeUnit.SECONDS);
            throw new AssertionError("served, but the claim was forbidden");
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOfSatisfying(io.fabric8.kubernetes.client.KubernetesClientException.class,
                    k -> assertThat(k.getCode()).isEqualTo(403));
        }
        assertNothingWaits();
        assertThat(outcomes).containsExactly(prefix("forbidden") + " failed");
    }

    /**
     * The operator stops while the claim for the head waiter waits for this replica's watch to confirm it: the
     * waiter ends like every other at shutdown (503, outcome shutdown), and its claim goes back to the pool rather
     * than staying on the pod for a request nobody was answered.
     */
    @Test
    void aShutdownDuringAClaimEndsItsWaiterAsShutdownAndTakesTheClaimBack() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        String pod = addRunner(51820);
        r.watch.hold();
        CapacityQueue.Ticket head = q.await(waiting("head", 30), "owner-a");
        CapacityQueue.Ticket behind = q.await(waiting("behind", 30), "owner-b");
        OperatorHarness.awaitTrue(() -> Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.isAlive() && t.getName().equals("capacity-dispatch")
                        && ScriptedReplica.parkedIn(t, "ClaimResolver", "await")), SOON,
                "the head's claim written and waiting for the watch");
        assertThat(ManagedPods.isClaimed(r.inApi(pod))).isTrue();
        q.close();
        for (CapacityQueue.Ticket t : List.of(head, behind)) {
            ApiException e = failure(t);
            assertThat(e.code()).isEqualTo(503);
            assertThat(e.getMessage()).isEqualTo(CapacityQueue.SHUTTING_DOWN);
        }
        assertThat(outcomes).containsExactlyInAnyOrder(prefix("head") + " shutdown", prefix("behind") + " shutdown");
        OperatorHarness.awaitTrue(() -> !ManagedPods.isClaimed(r.inApi(pod)), SOON, "the head's claim taken back");
    }

    /**
     * The operator stops while the claim for a waiter is on its way to the API server (the dispatcher interrupted
     * inside the write, which lands): whether it landed is read back with the interrupt set aside, and the claim goes
     * back to the pool, as one whose answer waits for the watch does, rather than staying on the pod until its TTL
     * for a client that was told to send the request elsewhere.
     */
    @Test
    void aClaimInFlightWhenTheQueueClosesGoesBackToThePool() throws Exception {
        String keyHash = ScriptedReplica.cmd("inflight").keyHash();
        held = new HeldRequest(w -> "PATCH".equals(w.method()) && String.valueOf(w.bodyString()).contains(keyHash));
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket t = q.await(waiting("inflight", 30), "owner-a");
        String pod = addRunner(51820);
        assertThat(held.awaitHeld(SOON.toSeconds())).as("the claim's write held on its way").isTrue();
        q.close(); // interrupts the dispatcher inside the write, which then goes on to the API server
        ApiException e = failure(t);
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).isEqualTo(CapacityQueue.SHUTTING_DOWN);
        assertThat(outcomes).containsExactly(prefix("inflight") + " shutdown");
        OperatorHarness.awaitTrue(() -> r.cluster.requestCount(k -> k.startsWith("PATCH ")
                && k.endsWith("/pods/" + pod)) >= 2, SOON, "the claim written, then its give-back");
        OperatorHarness.awaitTrue(() -> !ManagedPods.isClaimed(r.inApi(pod)), SOON, "the claim taken back");
    }

    /**
     * Every pod and node event wakes the queue: with nobody waiting (the usual case) that wake-up returns without
     * taking the queue's lock, here held by the test, also after a waiter has come and gone.
     */
    @Test
    void aWakeUpWithNobodyWaitingTakesNoLock() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket t = q.await(waiting("gone", 30), "owner-a");
        t.subscription().leave();
        assertThat(failure(t).code()).isEqualTo(499);
        assertNothingWaits();
        synchronized (q) {
            Thread wake = new Thread(() -> q.onPodEvent(PodCache.Change.UPDATED, null), "wake-with-nobody-waiting");
            wake.start();
            OperatorHarness.awaitTrue(() -> !wake.isAlive() || blockedOn(wake, q), SOON,
                    "the wake-up to return or wait for the queue's lock");
            assertThat(blockedOn(wake, q)).as("a wake-up with nobody waiting returns without the queue's lock")
                    .isFalse();
            wake.join();
        }
    }

    /** Whether the thread waits to enter this object's monitor now. */
    static boolean blockedOn(Thread t, Object monitor) {
        java.lang.management.ThreadInfo info = java.lang.management.ManagementFactory.getThreadMXBean()
                .getThreadInfo(t.getId());
        return info != null && info.getThreadState() == Thread.State.BLOCKED && info.getLockInfo() != null
                && info.getLockInfo().getIdentityHashCode() == System.identityHashCode(monitor);
    }

    @Test
    void closingAnswersEveryWaiter503AndTellsTheObservers() throws Exception {
        start(0, 0, new CapacityQueue.Limits(Integer.MAX_VALUE, Integer.MAX_VALUE, 4));
        CapacityQueue.Ticket a = q.await(waiting("a", 30), "owner-a");
        CapacityQueue.Ticket b = q.await(ScriptedReplica.cmd("b").withLease(null, 30), "owner-b");
        q.close();
        for (CapacityQueue.Ticket t : List.of(a, b)) {
            ApiException e = failure(t);
            assertThat(e.code()).isEqualTo(503);
            assertThat(e.getMessage()).isEqualTo(CapacityQueue.SHUTTING_DOWN);
            assertThat(e.headers()).as("--retry-after-seconds").containsEntry("Retry-After", "4");
        }
        // and a request that comes after the close
        ApiException late = catchThrowableOfType(ApiException.class, () -> q.await(waiting("late", 30), "owner-c"));
        assertThat(late.headers()).containsEntry("Retry-After", "4");
        // the wait metric hears of both waits as ended by the shutdown
        assertThat(outcomes).containsExactlyInAnyOrder(prefix("a") + " shutdown", prefix("b") + " shutdown");
        assertNothingWaits();
        // a wake-up after close is harmless
        q.requestDrain();
        q.onPodEvent(PodCache.Change.UPDATED, null);
    }

    /**
     * Closing answers the waiters once it has let go of the queue's lock: a callback on an answer that needs that lock
     * from another thread (here it waits for that thread) gets it, instead of waiting for the thread that closes.
     */
    @Test
    void closingAnswersTheWaitersOutsideTheQueuesLock() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket t = q.await(waiting("closing", 30), "owner-a");
        java.util.concurrent.atomic.AtomicReference<String> seen = new java.util.concurrent.atomic.AtomicReference<>();
        CompletableFuture<Void> callback = t.result().handle((a, e) -> {
            Thread closing = Thread.currentThread();
            Thread other = new Thread(q::waiting, "needs-the-queue");
            other.start();
            try {
                OperatorHarness.awaitTrue(() -> !other.isAlive() || heldBy(other, q, closing), SOON,
                        "the other thread to get the queue's lock or wait for the closing thread");
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
            seen.set(other.isAlive() ? "the other thread waits for the queue's lock the closing thread holds"
                    : "the other thread got the queue's lock");
            return null;
        });
        q.close();
        callback.get(SOON.toSeconds(), TimeUnit.SECONDS);
        assertThat(seen.get()).isEqualTo("the other thread got the queue's lock");
        assertThat(failure(t).code()).isEqualTo(503);
        assertThat(outcomes).containsExactly(prefix("closing") + " shutdown");
    }

    /** Whether the thread waits to enter this object's monitor, held by {@code owner}, now. */
    static boolean heldBy(Thread t, Object monitor, Thread owner) {
        java.lang.management.ThreadInfo info = java.lang.management.ManagementFactory.getThreadMXBean()
                .getThreadInfo(t.getId());
        return blockedOn(t, monitor) && info != null && info.getLockOwnerId() == owner.getId();
    }

    /**
     * A request sent again with its key just as the only client of the wait leaves joins the wait and keeps waiting:
     * it is not answered the leaving client's 499. The leaving counts the client out and ends the wait in one step
     * under the queue's lock, which a retry joins under; the test holds that lock while the leaving is under way
     * (its thread waits for the lock inside the queue), and sends the retry then.
     */
    @Test
    void aRetryThatJoinsAsTheOnlyClientLeavesKeepsWaiting() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket first = q.await(waiting("edge", 30), "owner-a");
        Thread leaving = new Thread(() -> first.subscription().leave(), "client-leaving");
        CapacityQueue.Ticket retry;
        synchronized (q) {
            leaving.start();
            OperatorHarness.awaitTrue(() -> blockedInQueue("client-leaving"), SOON,
                    "the client's leaving waiting for the queue");
            retry = q.await(waiting("edge", 30), "owner-a");
        }
        leaving.join();
        assertThat(retry.result()).as("the retry's answer").isNotDone();
        assertThat(q.waiting()).as("waits").isEqualTo(1);
        assertThat(q.waitingRequests("owner-a")).isEqualTo(1);
        String pod = addRunner(51820);
        assertThat(served(retry).pod().getMetadata().getName()).isEqualTo(pod);
        assertThat(outcomes).containsExactly(prefix("edge") + " served");
    }

    /**
     * A client of a shared wait that left before the wait ended in vain is answered 499, not the wait's 503 "no
     * idle": that 503 is counted as demand for the pool, and a client that left waits for no pod.
     */
    @Test
    void aClientThatLeftASharedWaitIsNotAnsweredItsWaitInVain() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        CapacityQueue.Ticket first = q.await(waiting("twin", 1), "owner-a");
        CapacityQueue.Ticket retry = q.await(waiting("twin", 1), "owner-a");
        first.subscription().leave();
        ApiException stayed = failure(retry);
        assertThat(stayed.code()).isEqualTo(503);
        assertThat(stayed.getMessage()).startsWith("no idle");
        ApiException left = failure(first);
        assertThat(left.code()).as("the answer of the client that left: " + left.getMessage()).isEqualTo(499);
        OperatorHarness.awaitTrue(() -> q.waitingRequests() == 0, SOON, "every slot freed");
        assertNothingWaits();
        assertThat(outcomes).containsExactly(prefix("twin") + " timeout");
    }

    /**
     * The operator's after-wait advice and Retry-After fail: a request that waited in vain is answered its 503 all
     * the same, with the default advice and Retry-After, as the last client of its wait and as one that leaves a
     * wait others go on with; the failure is logged.
     */
    @Test
    void aWaitInVainIsAnsweredAlsoWhenTheAfterWaitHooksFail() throws Exception {
        start(0, 0, CapacityQueue.Limits.NONE);
        q.afterWait(cmd -> {
            throw new IllegalStateException("advice broken");
        }, cmd -> {
            throw new IllegalStateException("retry-after broken");
        });
        CapacityQueue.Ticket patient = q.await(waiting("patient", 30), "owner-a");
        CapacityQueue.Ticket hurried = q.await(waiting("patient", 1), "owner-a");
        CapacityQueue.Ticket late = q.await(waiting("late", 1), "owner-b");
        for (CapacityQueue.Ticket t : List.of(hurried, late)) {
            ApiException e = failure(t);
            assertThat(e.code()).isEqualTo(503);
            assertThat(e.headers()).containsEntry("Retry-After", "1");
            assertThat(e.getMessage()).isEqualTo("no idle amd64 playpen runner pods are available; no pod was free for it"
                    + " in the 1 second this request waited" + CapacityQueue.POOLS_ADVICE);
        }
        assertThat(patient.result()).isNotDone();
        assertThat(outcomes).containsExactly(prefix("late") + " timeout");
        assertThat(logs.lines()).anySatisfy(l -> {
            assertThat(l.getLevel()).isEqualTo(ch.qos.logback.classic.Level.WARN);
            assertThat(l.getFormattedMessage()).startsWith("after-wait advice failed").contains("advice broken");
        });
        assertThat(logs.lines()).anySatisfy(l -> {
            assertThat(l.getLevel()).isEqualTo(ch.qos.logback.classic.Level.WARN);
            assertThat(l.getFormattedMessage()).startsWith("after-wait Retry-After failed")
                    .contains("retry-after broken");
        });
    }

    /**
     * A wait in vain whose reasons cannot be read (the pods' hand-out policy fails as its 503 is built) is answered
     * the plain "no idle" 503 with the configured Retry-After (--retry-after-seconds), not 1 second.
     */
    @Test
    void aWaitInVainWhoseReasonsFailCarriesTheConfiguredRetryAfter() throws Exception {
        start(1, 0, CapacityQueue.Limits.NONE);
        // the one idle pod is held back from the claims, and the policy fails when the 503 is built (timer thread)
        io.unboundedcloud.playpen.model.Candidates failing = new io.unboundedcloud.playpen.model.Candidates(
                io.unboundedcloud.playpen.model.LabelSelector.equality(java.util.Map.of()), (kind, pod, ip) -> {
                    if (Thread.currentThread().getName().equals("capacity-timeouts")) {
                        throw new IllegalStateException("policy broken");
                    }
                    return "held back";
                });
        Allocator allocator = new Allocator(r.pods, r.nodes, r.writer, failing, 7);
        try (CapacityQueue queue = new CapacityQueue(allocator, CapacityQueue.Limits.NONE, Duration.ofHours(1))) {
            ApiException e = failure(queue.await(waiting("late", 1), "owner-a"));
            assertThat(e.code()).isEqualTo(503);
            assertThat(e.getMessage()).startsWith("no idle playpen pods are available; no pod was free for it in the 1");
            assertThat(e.headers()).containsEntry("Retry-After", "7");
        }
    }
}
