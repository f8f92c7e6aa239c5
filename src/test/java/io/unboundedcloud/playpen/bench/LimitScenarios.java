package io.unboundedcloud.playpen.bench;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.unboundedcloud.playpen.kube.ClaimLedger;
import io.unboundedcloud.playpen.model.ManagedPods;

/**
 * What the answers of an exactly-once operator cannot cost less than on this machine, measured with the bare client
 * and nothing of the operator's, at concurrency 1:
 * <ul>
 * <li>{@link WatchedPatch}: the claim's conditional PATCH, and then the watch event of that very write. An
 * allocation is answered only once the replica's own watch has shown where its claim stands in the API server's
 * order of writes (a PATCH's answer says that the write committed, not whether an earlier claim of the key
 * committed first), so no allocation costs less than this plus the front door.</li>
 * <li>{@link BareGet}: one GET of a pod. A replay reads its pod from the API server (its cache could still show a
 * claim another replica has taken back), so no replay costs less than this plus the front door.</li>
 * </ul>
 */
final class LimitScenarios {
    static final String PATCH_WATCHED = "baseline-patch-watched";
    static final String GET = "baseline-get";

    private LimitScenarios() {
    }

    /** The bare claim PATCH, answered once a plain watch of the namespace has delivered the write's own event. */
    static final class WatchedPatch implements Bench.Scenario, AutoCloseable {
        private final Bench.BaselineScenario patch;
        private final Map<String, Long> seen = new HashMap<>();
        private Watch watch;

        /** {@code patch}: the bare PATCH scenario whose write this one waits for. */
        WatchedPatch(Bench.BaselineScenario patch) {
            this.patch = patch;
        }

        @Override
        public String name() {
            return PATCH_WATCHED;
        }

        @Override
        public boolean at(int concurrency) {
            return concurrency == 1;
        }

        /** As the PATCH it waits for (the huge phase's pool is never released between batches). */
        @Override
        public boolean claims() {
            return patch.claims();
        }

        @Override
        public void prepare(Bench.Env e, int first, int count) throws Exception {
            synchronized (seen) {
                if (watch == null) {
                    // from now on: a watch without a resourceVersion would first send every pod as ADDED (100,000
                    // of them in the huge phase); a LIST of one pod says where now is
                    String now = e.client.pods().inNamespace(Bench.NS)
                            .list(new ListOptionsBuilder().withLimit(1L).build()).getMetadata().getResourceVersion();
                    watch = e.client.pods().inNamespace(Bench.NS).withResourceVersion(now).watch(new Watcher<>() {
                        @Override
                        public void eventReceived(Action action, Pod pod) {
                            synchronized (seen) {
                                seen.merge(ManagedPods.name(pod), ClaimLedger.resourceVersion(pod), Math::max);
                                seen.notifyAll();
                            }
                        }

                        @Override
                        public void onClose(WatcherException cause) {
                        }
                    });
                }
            }
            patch.prepare(e, first, count);
        }

        @Override
        public void run(Bench.Env e, int index, int worker) throws Exception {
            Pod written = patch.claim(e, index);
            String name = ManagedPods.name(written);
            long rv = ClaimLedger.resourceVersion(written);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            synchronized (seen) {
                while (seen.getOrDefault(name, 0L) < rv) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new IllegalStateException("the watch did not deliver " + name + " at " + rv + " in 10 s");
                    }
                    TimeUnit.NANOSECONDS.timedWait(seen, left);
                }
            }
        }

        @Override
        public void close() {
            synchronized (seen) {
                if (watch != null) {
                    watch.close();
                }
            }
        }
    }

    /** One GET of a pod by name, the pods taken in turn. */
    static final class BareGet implements Bench.Scenario {
        private volatile List<String> names = List.of();

        @Override
        public String name() {
            return GET;
        }

        @Override
        public boolean at(int concurrency) {
            return concurrency == 1;
        }

        @Override
        public boolean claims() {
            return false;
        }

        @Override
        public void prepare(Bench.Env e, int first, int count) {
            if (names.isEmpty()) {
                names = e.client.pods().inNamespace(Bench.NS).list().getItems().stream().map(ManagedPods::name).toList();
            }
        }

        @Override
        public void run(Bench.Env e, int index, int worker) {
            List<String> all = names;
            String name = all.get(Math.floorMod(index, all.size()));
            if (e.client.pods().inNamespace(Bench.NS).withName(name).get() == null) {
                throw new IllegalStateException("GET " + name + " found no pod");
            }
        }
    }
}
