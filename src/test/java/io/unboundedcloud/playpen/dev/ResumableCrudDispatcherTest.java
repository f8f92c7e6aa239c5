package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.crud.Attribute;
import io.fabric8.mockwebserver.crud.AttributeSet;

/** The simulated API server keeps the watch and precondition guarantees of kube-apiserver that the operator needs. */
class ResumableCrudDispatcherTest {
    private static final String NS = "playpen";
    private KubernetesMockServer server;
    private KubernetesClient client;
    /** The store, with a way to plant an object behind its index (see {@link Tripwire}). */
    private Store store;

    static final class Store extends ResumableCrudDispatcher {
        Store(int history) {
            super(history);
        }

        void plant(AttributeSet attributes, String json) {
            map.put(attributes, json);
        }
    }

    /** Stored attributes that count every time a request matches against them (none may, but a LIST). */
    static final class Tripwire extends AttributeSet {
        final AtomicInteger touched = new AtomicInteger();

        Tripwire(Attribute... attributes) {
            super(attributes);
        }

        @Override
        public boolean matches(AttributeSet query) {
            touched.incrementAndGet();
            return false;
        }
    }

    void start(int history) {
        store = new Store(history);
        server = new KubernetesMockServer(new Context(Serialization.jsonMapper()), new MockWebServer(), new HashMap<>(),
                ResumableCrudDispatcher.mixed(new HashMap<>(), store), false);
        server.init(InetAddress.getLoopbackAddress(), 0);
        client = new KubernetesClientBuilder().withConfig(server.createClient().getConfiguration()).build();
    }

    @BeforeEach
    void defaults() {
        start(ResumableCrudDispatcher.DEFAULT_HISTORY);
    }

    @AfterEach
    void stop() {
        client.close();
        server.destroy();
    }

    private record Event(Watcher.Action action, String name, long rv) {
    }

    private static Pod pod(String name) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace(NS).endMetadata().withNewSpec()
                .addNewContainer().withName("c").withImage("i").endContainer().endSpec().build();
    }

    private Pod create(String name) {
        return client.pods().inNamespace(NS).resource(pod(name)).create();
    }

    private String listVersion() {
        return client.pods().inNamespace(NS).list().getMetadata().getResourceVersion();
    }

    private Watch watchFrom(String rv, BlockingQueue<Event> events, CompletableFuture<WatcherException> closed) {
        return client.pods().inNamespace(NS).watch(new ListOptionsBuilder().withResourceVersion(rv).build(),
                new Watcher<>() {
                    @Override
                    public void eventReceived(Action action, Pod p) {
                        events.add(new Event(action, p.getMetadata().getName(),
                                Long.parseLong(p.getMetadata().getResourceVersion())));
                    }

                    @Override
                    public boolean reconnecting() {
                        return false;
                    }

                    @Override
                    public void onClose(WatcherException cause) {
                        closed.complete(cause);
                    }
                });
    }

    @Test
    void aWatchFromAVersionDeliversEveryLaterChangeInCommitOrderAndNothingEarlier() throws Exception {
        create("before");
        String from = listVersion();
        // what happens while nobody watches: a resuming watch must get all of it, in order
        Pod a = create("a");
        client.pods().inNamespace(NS).withName("a").edit(p -> new PodBuilder(p).editMetadata()
                .addToLabels("x", "1").endMetadata().build());
        client.pods().inNamespace(NS).withName("a").delete();
        create("b");

        BlockingQueue<Event> events = new LinkedBlockingQueue<>();
        Watch w = watchFrom(from, events, new CompletableFuture<>());
        try {
            List<Event> got = new java.util.ArrayList<>();
            for (int i = 0; i < 4; i++) {
                got.add(events.poll(60, TimeUnit.SECONDS));
            }
            assertThat(got).extracting(Event::action, Event::name).containsExactly(
                    org.assertj.core.groups.Tuple.tuple(Watcher.Action.ADDED, "a"),
                    org.assertj.core.groups.Tuple.tuple(Watcher.Action.MODIFIED, "a"),
                    org.assertj.core.groups.Tuple.tuple(Watcher.Action.DELETED, "a"),
                    org.assertj.core.groups.Tuple.tuple(Watcher.Action.ADDED, "b"));
            // every event newer than the last, the delete's own version included (not the deleted object's last one)
            assertThat(got.get(0).rv()).isGreaterThan(Long.parseLong(from))
                    .isEqualTo(Long.parseLong(a.getMetadata().getResourceVersion()));
            for (int i = 1; i < got.size(); i++) {
                assertThat(got.get(i).rv()).isGreaterThan(got.get(i - 1).rv());
            }
            assertThat(events.poll(300, TimeUnit.MILLISECONDS)).as("nothing from before the version").isNull();
            // and it follows what comes next
            create("c");
            assertThat(events.poll(60, TimeUnit.SECONDS)).extracting(Event::action, Event::name)
                    .containsExactly(Watcher.Action.ADDED, "c");
        } finally {
            w.close();
        }
    }

    private Pod labelled(String name, String owner) {
        return client.pods().inNamespace(NS).resource(new PodBuilder(pod(name)).editMetadata()
                .addToLabels("owner", owner).addToLabels("kind", "runner").endMetadata().build()).create();
    }

    /**
     * A set-based selector ({@code owner in (a,b)}, as a user's own allocations are selected in both owner-hash
     * forms) lists and watches what it names: a move from one listed value to another is one MODIFIED, a move out
     * of the set a DELETED; {@code notin} and the equality terms beside it are kept.
     */
    @Test
    void aSetBasedLabelSelectorListsAndWatchesTheObjectsItNames() throws Exception {
        labelled("old", "legacy");
        labelled("new", "keyed");
        labelled("other", "bob");
        create("unlabelled");
        var mine = client.pods().inNamespace(NS).withLabelIn("owner", "keyed", "legacy");
        assertThat(mine.list().getItems()).extracting(p -> p.getMetadata().getName())
                .containsExactlyInAnyOrder("old", "new");
        assertThat(client.pods().inNamespace(NS).withLabelNotIn("owner", "keyed", "legacy").withLabel("kind", "runner")
                .list().getItems()).extracting(p -> p.getMetadata().getName()).containsExactly("other");

        String from = mine.list().getMetadata().getResourceVersion();
        BlockingQueue<Event> events = new LinkedBlockingQueue<>();
        Watch w = mine.watch(new ListOptionsBuilder().withResourceVersion(from).build(), new Watcher<>() {
            @Override
            public void eventReceived(Action action, Pod p) {
                events.add(new Event(action, p.getMetadata().getName(),
                        Long.parseLong(p.getMetadata().getResourceVersion())));
            }

            @Override
            public void onClose(WatcherException cause) {
            }
        });
        try {
            client.pods().inNamespace(NS).withName("other").edit(p -> new PodBuilder(p).editMetadata()
                    .addToAnnotations("touched", "1").endMetadata().build());
            client.pods().inNamespace(NS).withName("old").edit(p -> new PodBuilder(p).editMetadata()
                    .addToLabels("owner", "keyed").endMetadata().build());
            client.pods().inNamespace(NS).withName("new").edit(p -> new PodBuilder(p).editMetadata()
                    .addToLabels("owner", "bob").endMetadata().build());
            List<Event> got = new java.util.ArrayList<>();
            for (int i = 0; i < 2; i++) {
                got.add(events.poll(60, TimeUnit.SECONDS));
            }
            assertThat(got).extracting(Event::action, Event::name).containsExactly(
                    org.assertj.core.groups.Tuple.tuple(Watcher.Action.MODIFIED, "old"),
                    org.assertj.core.groups.Tuple.tuple(Watcher.Action.DELETED, "new"));
        } finally {
            w.close();
        }
    }

    /** A label value no label can have is refused 400 in a list and in a watch, as kube-apiserver refuses it. */
    @Test
    void aLabelSelectorWithAValueNoLabelCanHaveIsABadRequest() {
        create("first");
        for (String bad : List.of("ends-with-", "has space", "x".repeat(64), "bad!")) {
            assertThatThrownBy(() -> client.pods().inNamespace(NS).withLabel("allocated", bad).list())
                    .as(bad).isInstanceOfSatisfying(KubernetesClientException.class, e -> {
                        assertThat(e.getCode()).isEqualTo(400);
                        assertThat(e.getMessage()).contains("values[0][allocated]: Invalid value");
                    });
            assertThatThrownBy(() -> client.pods().inNamespace(NS).withLabelIn("owner", "fine", bad).list())
                    .as(bad).isInstanceOfSatisfying(KubernetesClientException.class,
                            e -> assertThat(e.getMessage()).contains("values[1][owner]: Invalid value"));
        }
        assertThatThrownBy(() -> client.pods().inNamespace(NS).withLabel("allocated", "ends-with-")
                .watch(new ListOptionsBuilder().withResourceVersion(listVersion()).build(), new Watcher<Pod>() {
                    @Override
                    public void eventReceived(Action action, Pod p) {
                    }

                    @Override
                    public void onClose(WatcherException cause) {
                    }
                })).isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(400));
        // values a label can have, and a selector without values, are read as before
        assertThat(client.pods().inNamespace(NS).withLabel("allocated", "0123456789abcdef").list().getItems()).isEmpty();
        assertThat(client.pods().inNamespace(NS).withLabel("allocated", "a.b_c-D").list().getItems()).isEmpty();
        assertThat(client.pods().inNamespace(NS).withoutLabel("allocated").list().getItems()).hasSize(1);
    }

    @Test
    void aWatchFromAVersionOlderThanTheKeptHistoryIsGone() throws Exception {
        stop();
        start(3);
        create("first");
        String from = listVersion();
        for (int i = 0; i < 5; i++) {
            create("p" + i);
        }
        CompletableFuture<WatcherException> closed = new CompletableFuture<>();
        Watch w = watchFrom(from, new LinkedBlockingQueue<>(), closed);
        try {
            WatcherException e = closed.get(60, TimeUnit.SECONDS);
            assertThat(e.isHttpGone()).isTrue();
        } finally {
            w.close();
        }
    }

    @Test
    void aDeleteWithAResourceVersionPreconditionIsRefusedWhenTheObjectChanged() {
        Pod p = create("guarded");
        client.pods().inNamespace(NS).withName("guarded").edit(x -> new PodBuilder(x).editMetadata()
                .addToLabels("changed", "yes").endMetadata().build());
        assertThatThrownBy(() -> client.pods().inNamespace(NS).resource(p)
                .lockResourceVersion(p.getMetadata().getResourceVersion()).delete())
                .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(409));
        assertThat(client.pods().inNamespace(NS).withName("guarded").get()).isNotNull();
        Pod now = client.pods().inNamespace(NS).withName("guarded").get();
        client.pods().inNamespace(NS).resource(now).lockResourceVersion(now.getMetadata().getResourceVersion()).delete();
        assertThat(client.pods().inNamespace(NS).withName("guarded").get()).isNull();
    }

    @Test
    void aMergePatchRemovesWhatItSetsToNullAndReplacesLists() {
        create("patched");
        client.pods().inNamespace(NS).withName("patched").patch(io.fabric8.kubernetes.client.dsl.base.PatchContext.of(
                io.fabric8.kubernetes.client.dsl.base.PatchType.JSON_MERGE),
                "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"},\"annotations\":{\"x\":\"y\"}}}");
        Pod p = client.pods().inNamespace(NS).withName("patched").patch(io.fabric8.kubernetes.client.dsl.base.PatchContext
                .of(io.fabric8.kubernetes.client.dsl.base.PatchType.JSON_MERGE),
                "{\"metadata\":{\"labels\":{\"a\":null},\"annotations\":{\"x\":null}},"
                        + "\"spec\":{\"containers\":[{\"name\":\"d\",\"image\":\"j\"}]}}");
        assertThat(p.getMetadata().getLabels()).containsExactly(java.util.Map.entry("b", "2"));
        assertThat(p.getMetadata().getAnnotations()).isNullOrEmpty();
        assertThat(p.getSpec().getContainers()).extracting(c -> c.getName()).containsExactly("d");
        assertThat(client.pods().inNamespace(NS).withLabel("a").list().getItems()).isEmpty();
        assertThat(client.pods().inNamespace(NS).withLabel("b").list().getItems()).hasSize(1);
    }

    @Test
    void aRequestForOneObjectByNameLooksAtNoOtherObject() {
        Tripwire other = new Tripwire(new Attribute("plural", "pods"), new Attribute("namespace", NS),
                new Attribute("name", "somebody-else"));
        store.plant(other, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"somebody-else\"}}");
        Pod a = create("a");
        client.pods().inNamespace(NS).withName("a").get();
        assertThat(client.pods().inNamespace(NS).withName("missing").get()).isNull();
        Pod patched = client.pods().inNamespace(NS).withName("a").patch(io.fabric8.kubernetes.client.dsl.base.PatchContext
                .of(io.fabric8.kubernetes.client.dsl.base.PatchType.JSON_MERGE), "{\"metadata\":{\"labels\":{\"x\":\"1\"}}}");
        client.pods().inNamespace(NS).resource(new PodBuilder(patched).editMetadata().addToLabels("y", "2").endMetadata()
                .build()).update();
        assertThatThrownBy(() -> client.pods().inNamespace(NS).resource(a)
                .lockResourceVersion(a.getMetadata().getResourceVersion()).delete())
                .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(409));
        assertThatThrownBy(() -> create("a"))
                .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(409));
        assertThat(other.touched).as("creates, reads, patches, updates and preconditions by name match no other object")
                .hasValue(0);
        assertThat(client.pods().inNamespace(NS).withName("a").get().getMetadata().getLabels())
                .containsEntry("x", "1").containsEntry("y", "2");

        client.pods().inNamespace(NS).list();
        assertThat(other.touched).as("a LIST still looks at every object").hasPositiveValue();
    }

    @Test
    void aListWithALimitAnswersInPagesFromOneSnapshot() throws Exception {
        for (int i = 0; i < 7; i++) {
            create("p" + i);
        }
        var first = client.pods().inNamespace(NS).list(new ListOptionsBuilder().withLimit(3L).build());
        assertThat(first.getItems()).hasSize(3);
        assertThat(first.getMetadata().getContinue()).isNotEmpty();
        String rv = first.getMetadata().getResourceVersion();
        // changes after the snapshot show in no later page, and a watch from its version delivers them
        create("later");
        client.pods().inNamespace(NS).withName("p6").delete();
        List<String> names = new java.util.ArrayList<>();
        first.getItems().forEach(p -> names.add(p.getMetadata().getName()));
        String token = first.getMetadata().getContinue();
        while (token != null && !token.isEmpty()) {
            var page = client.pods().inNamespace(NS).list(new ListOptionsBuilder().withLimit(3L).withContinue(token).build());
            assertThat(page.getMetadata().getResourceVersion()).isEqualTo(rv);
            assertThat(page.getItems()).hasSizeLessThanOrEqualTo(3);
            page.getItems().forEach(p -> names.add(p.getMetadata().getName()));
            token = page.getMetadata().getContinue();
        }
        assertThat(names).containsExactlyInAnyOrder("p0", "p1", "p2", "p3", "p4", "p5", "p6");

        BlockingQueue<Event> events = new LinkedBlockingQueue<>();
        Watch w = watchFrom(rv, events, new CompletableFuture<>());
        try {
            assertThat(events.poll(60, TimeUnit.SECONDS)).extracting(Event::action, Event::name)
                    .containsExactly(Watcher.Action.ADDED, "later");
            assertThat(events.poll(60, TimeUnit.SECONDS)).extracting(Event::action, Event::name)
                    .containsExactly(Watcher.Action.DELETED, "p6");
        } finally {
            w.close();
        }
        // a token nobody holds any more is Gone, as an expired one is on kube-apiserver
        assertThatThrownBy(() -> client.pods().inNamespace(NS).list(new ListOptionsBuilder().withLimit(3L)
                .withContinue("no-such-snapshot:3").build()))
                .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(410));
        // without a limit, everything at once, as before
        assertThat(client.pods().inNamespace(NS).list().getItems()).hasSize(7);
    }
}
