package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.unboundedcloud.playpen.model.SlimPodJsonTest;
import io.unboundedcloud.playpen.model.SlimPods;
import io.unboundedcloud.playpen.model.SlimPodsTest;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The operator's client decodes a pod in a watch event straight into its slim form ({@link PodWatchEvents}): the
 * result must be exactly {@code SlimPods.slim} of the pod the client's own decoding builds, for pods as the API
 * server sends them, in any field order and with fields missing or null; and every other event must decode as the
 * client's own decoding has it.
 */
class PodWatchEventsTest {
    private static final KubernetesSerialization OURS = KubeClients.serialization();
    private static final KubernetesSerialization CLIENTS_OWN = new KubernetesSerialization();
    private static final ObjectMapper TREES = new ObjectMapper();

    @Test
    void aPodInAWatchEventIsDecodedStraightIntoTheSlimCopy() throws Exception {
        Random r = new Random(20261126);
        for (int i = 0; i < 400; i++) {
            Pod full = SlimPodsTest.apiPod(r);
            ObjectNode pod = TREES.valueToTree(full);
            // fabric8 writes apiVersion first, the API server kind first
            ObjectNode object = r.nextBoolean() ? pod : SlimPodJsonTest.kindFirst(pod);
            String line = event(pick(r, List.of("ADDED", "MODIFIED", "DELETED")), object);

            WatchEvent ours = OURS.unmarshal(line, WatchEvent.class);
            WatchEvent own = CLIENTS_OWN.unmarshal(line, WatchEvent.class);
            assertThat(ours.getType()).isEqualTo(own.getType());
            assertThat(ours.getObject()).as("event %d: %s", i, line).isInstanceOf(Pod.class)
                    .isEqualTo(SlimPods.slim((Pod) own.getObject()));
            assertThat(CLIENTS_OWN.asJson(ours.getObject())).isEqualTo(CLIENTS_OWN.asJson(SlimPods.slim(full)));
            Pod slim = (Pod) ours.getObject();
            assertThat(slim.getMetadata().getManagedFields()).isEmpty();
            assertThat(slim.getSpec().getVolumes()).isEmpty();
            assertThat(slim.getSpec().getContainers().get(0).getEnv()).isEmpty();
        }
    }

    @Test
    void fieldsMissingNullReorderedOrWrittenAsTextDecodeAsTheClientsOwn() throws Exception {
        Random r = new Random(7);
        int slimPath = 0;
        for (int i = 0; i < 600; i++) {
            ObjectNode pod = SlimPodJsonTest.kindFirst(TREES.valueToTree(SlimPodsTest.apiPod(r)));
            SlimPodJsonTest.mutate(pod, r, 0);
            String line = event("MODIFIED", pod);
            WatchEvent own = CLIENTS_OWN.unmarshal(line, WatchEvent.class);
            WatchEvent ours = OURS.unmarshal(line, WatchEvent.class);
            Object expected = own.getObject() instanceof Pod p && isPodFirst(pod) ? SlimPods.slim(p) : own.getObject();
            assertThat(ours.getObject()).as("event %d: %s", i, line).isEqualTo(expected);
            slimPath += isPodFirst(pod) ? 1 : 0;
        }
        // both ways were taken often: the straight one and the client's own for objects that begin otherwise
        assertThat(slimPath).isBetween(100, 500);
    }

    @Test
    void otherEventsDecodeAsTheClientsOwn() throws Exception {
        Node node = new io.fabric8.kubernetes.api.model.NodeBuilder().withNewMetadata().withName("node-a")
                .withResourceVersion("9").endMetadata().withNewStatus().addNewAddress().withType("ExternalIP")
                .withAddress("203.0.113.10").endAddress().endStatus().build();
        Status gone = new io.fabric8.kubernetes.api.model.StatusBuilder().withStatus("Failure").withCode(410)
                .withReason("Expired").withMessage("too old resource version: 1 (200)").build();
        ObjectNode pod = TREES.valueToTree(SlimPodsTest.apiPod(new Random(1)));
        ObjectNode metadataFirst = JsonNodeFactory.instance.objectNode();
        metadataFirst.set("metadata", pod.get("metadata"));
        metadataFirst.setAll(pod);
        ObjectNode oddVersion = SlimPodJsonTest.kindFirst(pod.deepCopy());
        oddVersion.remove("apiVersion");
        ObjectNode versionAsNumber = JsonNodeFactory.instance.objectNode().put("apiVersion", 1).put("kind", "Pod");
        versionAsNumber.set("metadata", pod.get("metadata"));
        ObjectNode kindAsObject = JsonNodeFactory.instance.objectNode().put("apiVersion", "v1");
        kindAsObject.putObject("kind").put("x", "Pod");
        ObjectNode custom = JsonNodeFactory.instance.objectNode().put("kind", "Widget")
                .put("apiVersion", "example.com/v1");
        custom.putObject("metadata").put("name", "w");
        List<String> lines = List.of(
                event("ADDED", TREES.valueToTree(node)),
                event("ERROR", TREES.valueToTree(gone)),
                event("MODIFIED", metadataFirst),
                event("MODIFIED", oddVersion),
                event("MODIFIED", custom),
                event("MODIFIED", versionAsNumber),
                event("MODIFIED", kindAsObject),
                "{\"object\":" + TREES.writeValueAsString(TREES.valueToTree(node)) + ",\"type\":\"MODIFIED\"}",
                "{\"type\":\"MODIFIED\",\"object\":null}",
                "{\"type\":\"MODIFIED\",\"extra\":[1,{\"a\":2}],\"object\":" + TREES.writeValueAsString(custom)
                        + ",\"after\":true}",
                "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
                        + "{\"resourceVersion\":\"12\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}");
        for (String line : lines) {
            WatchEvent own = CLIENTS_OWN.unmarshal(line, WatchEvent.class);
            WatchEvent ours = OURS.unmarshal(line, WatchEvent.class);
            // fields of an event other than its type and object are not kept: nobody reads them
            assertThat(ours.getType()).as(line).isEqualTo(own.getType());
            assertThat(ours.getObject()).as(line).isEqualTo(line.contains("BOOKMARK")
                    ? SlimPods.slim((Pod) own.getObject()) : own.getObject());
        }
        assertThat(OURS.unmarshal(lines.get(1), WatchEvent.class).getObject()).isInstanceOf(Status.class);
        assertThat(OURS.unmarshal(lines.get(4), WatchEvent.class).getObject())
                .isInstanceOf(GenericKubernetesResource.class);
    }

    @Test
    void theOperatorsClientWatchesSlimPodsButReadsWholeOnes() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            BlockingQueue<Pod> seen = new LinkedBlockingQueue<>();
            try (Watch w = cluster.client.pods().inNamespace(TestCluster.NS).watch(new Watcher<>() {
                @Override
                public void eventReceived(Action action, Pod pod) {
                    seen.add(pod);
                }

                @Override
                public void onClose(WatcherException cause) {
                }
            })) {
                Pod made = cluster.create(new PodBuilder(TestCluster.readyRunner("amd64", 51820, "node-a").build())
                        .editSpec().editFirstContainer().addNewEnv().withName("A").withValue("1").endEnv()
                        .endContainer().endSpec());
                Pod watched = seen.poll(30, TimeUnit.SECONDS);
                assertThat(watched).isNotNull();
                assertThat(watched).isEqualTo(SlimPods.slim(made));
                assertThat(watched.getSpec().getContainers().get(0).getEnv()).isEmpty();
                Pod read = cluster.client.pods().inNamespace(TestCluster.NS).withName(made.getMetadata().getName())
                        .get();
                assertThat(read.getSpec().getContainers().get(0).getEnv()).extracting("name").containsExactly("A");
            }
        }
    }

    @Test
    void aPageOfTheCachesListIsReadAsSlimPods() throws Exception {
        // the reader itself is SlimPodJsonTest's; here: the operator's client reads the cache's list type with it
        Random r = new Random(11);
        for (int i = 0; i < 4; i++) {
            String json = SlimPodJsonTest.page(r, i);
            io.unboundedcloud.playpen.model.SlimPodList ours = OURS.unmarshal(json,
                    io.unboundedcloud.playpen.model.SlimPodList.class);
            assertThat(ours.getItems()).as(json).isEqualTo(SlimPodJsonTest.slim(CLIENTS_OWN.unmarshal(json,
                    io.fabric8.kubernetes.api.model.PodList.class).getItems()));
            // the informer's page is a list it may change
            ours.getItems().replaceAll(SlimPods::slim);
        }
        // a client without the reader decodes the same type whole
        io.unboundedcloud.playpen.model.SlimPodList whole = CLIENTS_OWN.unmarshal(
                "{\"kind\":\"PodList\",\"items\":[" + TREES.writeValueAsString(TREES.valueToTree(
                        SlimPodsTest.apiPod(new Random(1)))) + "]}", io.unboundedcloud.playpen.model.SlimPodList.class);
        assertThat(whole.getItems().get(0).getMetadata().getManagedFields()).isNotEmpty();
    }

    @Test
    void theCachesListThroughTheOperatorsClientHasSlimPodsAndARequestsListWholeOnes() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.create(new PodBuilder(TestCluster.readyRunner("amd64", 51820, "node-a").build()).editSpec()
                    .editFirstContainer().addNewEnv().withName("A").withValue("1").endEnv().endContainer().endSpec());
            List<Pod> cached = cluster.client.resources(Pod.class, io.unboundedcloud.playpen.model.SlimPodList.class)
                    .inNamespace(TestCluster.NS).list().getItems();
            List<Pod> listed = cluster.client.pods().inNamespace(TestCluster.NS).list().getItems();
            assertThat(cached).hasSize(1);
            assertThat(cached.get(0).getSpec().getContainers().get(0).getEnv()).isEmpty();
            assertThat(cached.get(0)).isEqualTo(SlimPods.slim(listed.get(0)));
            assertThat(listed.get(0).getSpec().getContainers().get(0).getEnv()).extracting("name").containsExactly("A");
        }
    }

    /** Whether the object begins with apiVersion v1 and kind Pod, as strings, in either order. */
    private static boolean isPodFirst(ObjectNode pod) {
        Iterator<Map.Entry<String, JsonNode>> it = pod.fields();
        Map<String, String> first = new java.util.HashMap<>();
        for (int i = 0; i < 2 && it.hasNext(); i++) {
            Map.Entry<String, JsonNode> e = it.next();
            if (e.getValue().isTextual()) {
                first.putIfAbsent(e.getKey(), e.getValue().asText());
            }
        }
        return first.equals(Map.of("apiVersion", "v1", "kind", "Pod"));
    }

    private static String event(String type, JsonNode object) throws Exception {
        ObjectNode e = JsonNodeFactory.instance.objectNode().put("type", type);
        e.set("object", object);
        return TREES.writeValueAsString(e);
    }

    private static <T> T pick(Random r, List<T> from) {
        return from.get(r.nextInt(from.size()));
    }
}
