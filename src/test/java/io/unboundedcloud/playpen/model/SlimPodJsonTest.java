package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodList;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * {@link SlimPodJson} on its own: whatever pod JSON it reads, the result is exactly {@code SlimPods.slim} of the pod
 * the client's own decoding builds, and JSON that decoding refuses it refuses too. The operator's client wires it
 * into the watch and the cache's LIST ({@code PodWatchEventsTest}); here a plain mapper calls it.
 */
public class SlimPodJsonTest {
    private static final KubernetesSerialization CLIENTS_OWN = new KubernetesSerialization();
    private static final ObjectMapper TREES = new ObjectMapper();
    /** A pod with one of each field the slim copy keeps, and nothing else. */
    public static final String EVERY_SLIM_FIELD = """
            {"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"n","uid":"u",
            "resourceVersion":"9","generateName":"g-","creationTimestamp":"2026-01-02T03:04:05Z",
            "deletionTimestamp":"2026-01-02T03:04:06Z","deletionGracePeriodSeconds":30,"generation":2,
            "labels":{"a":"1"},"annotations":{"b":"2"},"finalizers":["f"],
            "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","uid":"o"}]},
            "spec":{"nodeName":"node-a","containers":[{"name":"c","image":"i","ports":[{"containerPort":1,
            "hostIP":"192.0.2.1","hostPort":2,"name":"wg","protocol":"UDP"}]}]},
            "status":{"phase":"Running","reason":"R","conditions":[{"type":"Ready","status":"False",
            "lastProbeTime":"2026-01-02T03:04:07Z","lastTransitionTime":"2026-01-02T03:04:08Z","message":"m",
            "observedGeneration":2,"reason":"why"}],"containerStatuses":[{"name":"c","ready":false,
            "started":true,"restartCount":4,"image":"i","state":{"terminated":{"containerID":"x","exitCode":1,
            "finishedAt":"2026-01-02T03:04:09Z","message":"tm","reason":"Error","signal":9,
            "startedAt":"2026-01-02T03:04:10Z"},"waiting":{"message":"wm","reason":"CrashLoopBackOff"},
            "running":{"startedAt":"2026-01-02T03:04:11Z"}}}]}}""";

    /** Reads a SlimPodList with the reader under test, and a {@link Single} with its single-pod entry. */
    private static final ObjectMapper SLIM = new ObjectMapper().registerModule(new SimpleModule()
            .addDeserializer(SlimPodList.class, new JsonDeserializer<>() {
                @Override
                public SlimPodList deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
                    return SlimPodJson.readList(p, ctxt);
                }
            })
            .addDeserializer(Whole.class, new JsonDeserializer<>() {
                @Override
                public Whole deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
                    return new Whole(SlimPodJson.read(p, ctxt));
                }
            })
            .addDeserializer(Single.class, new JsonDeserializer<>() {
                @Override
                public Single deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
                    return new Single(SlimPodJson.readRest(p, ctxt, "v9", "Kind9", p.nextFieldName()));
                }
            }));

    /** One pod read by {@link SlimPodJson#readRest} from the start of its object (defaults v9 and Kind9). */
    record Single(Pod pod) {
    }

    /** One pod read by {@link SlimPodJson#read}, the parser on the object's start (defaults v1 and Pod). */
    record Whole(Pod pod) {
    }

    @Test
    void aWholePodObjectReadsAsTheSlimCopyOfTheClientsOwnDecoding() throws Exception {
        Random r = new Random(20261127);
        for (int i = 0; i < 200; i++) {
            ObjectNode pod = TREES.valueToTree(SlimPodsTest.apiPod(r));
            if (i % 3 == 0) {
                pod.remove(List.of("apiVersion", "kind"));
            }
            String json = TREES.writeValueAsString(r.nextBoolean() ? pod : kindFirst(pod));
            Pod ours = SLIM.readValue(json, Whole.class).pod();
            // a write's answer always names them; without, the model's defaults (the client's own reads the same)
            assertThat(ours).as(json).isEqualTo(SlimPods.slim(CLIENTS_OWN.unmarshal(json, Pod.class)));
            assertThat(SlimPods.slim(ours)).isSameAs(ours);
        }
        Pod empty = SLIM.readValue("{}", Whole.class).pod();
        assertThat(empty.getApiVersion()).isEqualTo("v1");
        assertThat(empty.getKind()).isEqualTo("Pod");
        assertThat(empty.getMetadata()).isNull();
        assertThatThrownBy(() -> SLIM.readValue("[]", Whole.class)).isInstanceOf(IOException.class)
                .hasMessageContaining("expected a JSON object");
    }

    @Test
    void aPodReadsAsTheSlimCopyOfTheClientsOwnDecoding() throws Exception {
        Random r = new Random(20261126);
        for (int i = 0; i < 300; i++) {
            Pod full = SlimPodsTest.apiPod(r);
            ObjectNode pod = TREES.valueToTree(full);
            String json = TREES.writeValueAsString(r.nextBoolean() ? pod : kindFirst(pod));
            Pod ours = SLIM.readValue(json, Single.class).pod();
            assertThat(ours).as(json).isEqualTo(SlimPods.slim(CLIENTS_OWN.unmarshal(json, Pod.class)));
            assertThat(CLIENTS_OWN.asJson(ours)).isEqualTo(CLIENTS_OWN.asJson(SlimPods.slim(full)));
            assertThat(ours.getMetadata().getManagedFields()).isEmpty();
            assertThat(ours.getSpec().getContainers().get(0).getEnv()).isEmpty();
            // the slim copy is final: slimming it again gives the very same object
            assertThat(SlimPods.slim(ours)).isSameAs(ours);
        }
    }

    @Test
    void fieldsMissingNullReorderedOrWrittenAsTextReadAsTheClientsOwn() throws Exception {
        Random r = new Random(7);
        for (int i = 0; i < 600; i++) {
            ObjectNode pod = TREES.valueToTree(SlimPodsTest.apiPod(r));
            mutate(pod, r, 0);
            String json = TREES.writeValueAsString(pod);
            Pod own = CLIENTS_OWN.unmarshal(json, Pod.class);
            Pod ours = SLIM.readValue(json, Single.class).pod();
            // what the object leaves out, the reader's defaults give (the client's own has none)
            if (!pod.has("apiVersion")) {
                own.setApiVersion("v9");
            }
            if (!pod.has("kind")) {
                own.setKind("Kind9");
            }
            assertThat(ours).as("pod %d: %s", i, json).isEqualTo(SlimPods.slim(own));
        }
    }

    @Test
    void everyFieldTheSlimCopyKeepsIsRead() throws Exception {
        // one of each, including those the generated pods leave out (a terminated or waiting state's details,
        // a condition's message, a port's hostIP)
        String json = EVERY_SLIM_FIELD;
        Pod own = CLIENTS_OWN.unmarshal(json, Pod.class);
        Pod ours = SLIM.readValue(json, Single.class).pod();
        assertThat(ours).isEqualTo(SlimPods.slim(own));
        // nothing of it was dropped on the way: every value above is in the slim copy's JSON
        String written = CLIENTS_OWN.asJson(ours);
        for (String value : List.of("\"tm\"", "\"wm\"", "\"m\"", "\"why\"", "2026-01-02T03:04:07Z", "192.0.2.1",
                "\"containerID\":\"x\"", "\"signal\":9", "2026-01-02T03:04:10Z", "2026-01-02T03:04:11Z",
                "\"observedGeneration\":2", "\"exitCode\":1")) {
            assertThat(written).contains(value);
        }
        SlimPodList list = SLIM.readValue("{\"apiVersion\":\"v2\",\"kind\":\"PodList2\"}", SlimPodList.class);
        assertThat(list.getApiVersion()).isEqualTo("v2");
        assertThat(list.getKind()).isEqualTo("PodList2");
    }

    @Test
    void anEmptyObjectIsAnEmptyPodOfTheDefaults() throws Exception {
        Pod ours = SLIM.readValue("{}", Single.class).pod();
        assertThat(ours.getApiVersion()).isEqualTo("v9");
        assertThat(ours.getKind()).isEqualTo("Kind9");
        assertThat(ours.getMetadata()).isNull();
        assertThat(ours).isEqualTo(SlimPods.slim(ours));
    }

    @Test
    void aPageOfAListReadsAsSlimPods() throws Exception {
        Random r = new Random(11);
        for (int i = 0; i < 40; i++) {
            String json = page(r, i);
            PodList own = CLIENTS_OWN.unmarshal(json, PodList.class);
            SlimPodList ours = SLIM.readValue(json, SlimPodList.class);
            assertThat(ours.getMetadata()).isEqualTo(own.getMetadata());
            assertThat(ours.getKind()).isEqualTo(own.getKind());
            assertThat(ours.getApiVersion()).isEqualTo(own.getApiVersion());
            assertThat(ours.getItems()).as(json).isEqualTo(slim(own.getItems()));
        }
        SlimPodList nulls = SLIM.readValue("{\"metadata\":null,\"items\":null,\"kind\":null}", SlimPodList.class);
        assertThat(nulls.getMetadata()).isNull();
        assertThat(nulls.getItems()).isNull();
        assertThat(nulls.getKind()).isNull();
    }

    @Test
    void numbersTheModelCannotHoldReadAsTheClientsOwn() throws Exception {
        // a port beyond int and a generation beyond long go through Jackson's own coercion: refused like the client
        String bigPort = "{\"spec\":{\"containers\":[{\"ports\":[{\"hostPort\":4294967296}]}]}}";
        String bigGeneration = "{\"metadata\":{\"generation\":18446744073709551616}}";
        for (String json : List.of(bigPort, bigGeneration)) {
            assertThatThrownBy(() -> CLIENTS_OWN.unmarshal(json, Pod.class)).as(json).isInstanceOf(Exception.class);
            assertThatThrownBy(() -> SLIM.readValue(json, Single.class)).as(json).isInstanceOf(IOException.class);
        }
        // numbers that fit are read at once, as the model holds them
        Pod pod = SLIM.readValue("{\"metadata\":{\"generation\":9007199254740993,\"deletionGracePeriodSeconds\":30},"
                + "\"spec\":{\"containers\":[{\"ports\":[{\"hostPort\":51820,\"containerPort\":\"51820\"}]}]},"
                + "\"status\":{\"containerStatuses\":[{\"restartCount\":3,\"ready\":\"true\",\"started\":false}]}}",
                Single.class).pod();
        assertThat(pod.getMetadata().getGeneration()).isEqualTo(9007199254740993L);
        assertThat(pod.getMetadata().getDeletionGracePeriodSeconds()).isEqualTo(30L);
        assertThat(pod.getSpec().getContainers().get(0).getPorts().get(0).getHostPort()).isEqualTo(51820);
        assertThat(pod.getSpec().getContainers().get(0).getPorts().get(0).getContainerPort()).isEqualTo(51820);
        assertThat(pod.getStatus().getContainerStatuses().get(0).getRestartCount()).isEqualTo(3);
        assertThat(pod.getStatus().getContainerStatuses().get(0).getReady()).isTrue();
        assertThat(pod.getStatus().getContainerStatuses().get(0).getStarted()).isFalse();
    }

    @Test
    void valuesOfAnOddShapeReadAsTheClientsOwnOrAreRefusedLikeIt() throws Exception {
        List<String> odd = List.of(
                "{\"metadata\":\"x\"}",
                "{\"metadata\":[]}",
                "{\"metadata\":{\"labels\":[\"a\"]}}",
                "{\"metadata\":{\"labels\":\"\"}}",
                "{\"metadata\":{\"name\":{\"a\":1}}}",
                "{\"metadata\":{\"ownerReferences\":{}}}",
                "{\"spec\":{\"containers\":{\"name\":\"c\"}}}",
                "{\"spec\":{\"containers\":[\"c\"]}}",
                "{\"spec\":{\"containers\":[{\"ports\":[7]}]}}",
                "{\"status\":{\"conditions\":7}}",
                "{\"status\":{\"conditions\":[[]]}}",
                "{\"status\":{\"containerStatuses\":[{\"state\":\"Running\"}]}}",
                // the model takes a lone string as a running state's startedAt
                "{\"status\":{\"containerStatuses\":[{\"state\":{\"running\":\"2026-01-02T03:04:05Z\"}}]}}",
                "{\"status\":{\"containerStatuses\":[{\"state\":{\"waiting\":\"x\",\"terminated\":1}}]}}");
        int accepted = 0;
        for (String json : odd) {
            Pod own;
            try {
                own = CLIENTS_OWN.unmarshal(json, Pod.class);
            } catch (RuntimeException refused) {
                assertThatThrownBy(() -> SLIM.readValue(json, Single.class)).as(json).isInstanceOf(IOException.class);
                continue;
            }
            own.setApiVersion("v9");
            own.setKind("Kind9");
            assertThat(SLIM.readValue(json, Single.class).pod()).as(json).isEqualTo(SlimPods.slim(own));
            accepted++;
        }
        // both ways were taken
        assertThat(accepted).isPositive().isLessThan(odd.size());
        assertThatThrownBy(() -> SLIM.readValue("[]", SlimPodList.class)).isInstanceOf(IOException.class)
                .hasMessageContaining("expected a JSON object");
        for (String items : List.of("{}", "7", "[\"p\"]", "[[]]", "[1]")) {
            String json = "{\"items\":" + items + "}";
            PodList own;
            try {
                own = CLIENTS_OWN.unmarshal(json, PodList.class);
            } catch (RuntimeException refused) {
                assertThatThrownBy(() -> SLIM.readValue(json, SlimPodList.class)).as(json)
                        .isInstanceOf(IOException.class);
                continue;
            }
            assertThat(SLIM.readValue(json, SlimPodList.class).getItems()).as(json).isEqualTo(slim(own.getItems()));
        }
    }

    /**
     * A page of a pod LIST (number {@code i}) of 12 generated API-server-like pods: half of them without kind and
     * apiVersion, as the API server lists them, some fields dropped, nulled, reordered or written as text, one in
     * twenty null; the page's own fields in either order, with a field nobody reads.
     */
    public static String page(Random r, int i) throws IOException {
        ObjectNode page = JsonNodeFactory.instance.objectNode().put("kind", "PodList").put("apiVersion", "v1");
        page.putObject("metadata").put("resourceVersion", String.valueOf(1000 + i)).put("continue", "c" + i);
        ArrayNode items = page.putArray("items");
        for (int j = 0; j < 12; j++) {
            ObjectNode pod = TREES.valueToTree(SlimPodsTest.apiPod(r));
            if (r.nextBoolean()) {
                pod.remove("kind");
                pod.remove("apiVersion");
            }
            mutate(pod, r, 1);
            items.add(r.nextInt(20) == 0 ? JsonNodeFactory.instance.nullNode() : pod);
        }
        page.put("extra", "ignored");
        return TREES.writeValueAsString(i % 2 == 0 ? page : kindFirst(page));
    }

    /** {@code SlimPods.slim} of each pod (null stays null). */
    public static List<Pod> slim(List<Pod> pods) {
        List<Pod> slimmed = new ArrayList<>(pods);
        slimmed.replaceAll(SlimPods::slim);
        return slimmed;
    }

    /** Drops, nulls, reorders or writes as text some fields of every object, deeper down less often. */
    public static void mutate(JsonNode node, Random r, int depth) {
        if (node.isArray()) {
            node.forEach(e -> mutate(e, r, depth + 1));
            return;
        }
        if (!node.isObject()) {
            return;
        }
        ObjectNode o = (ObjectNode) node;
        List<String> names = new ArrayList<>();
        o.fieldNames().forEachRemaining(names::add);
        for (String name : names) {
            JsonNode v = o.get(name);
            int roll = r.nextInt(40);
            if (roll == 0) {
                o.remove(name);
            } else if (roll == 1) {
                o.putNull(name);
            } else if (roll == 2 && (v.isNumber() || v.isBoolean())) {
                o.put(name, v.asText());
            } else {
                mutate(v, r, depth + 1);
            }
        }
        if (r.nextInt(8) == 0) {
            List<Map.Entry<String, JsonNode>> fields = new ArrayList<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext();) {
                fields.add(it.next());
            }
            Collections.shuffle(fields, r);
            o.removeAll();
            fields.forEach(e -> o.set(e.getKey(), e.getValue()));
        }
    }

    /** The same object with kind and apiVersion first, in that order, as the API server writes them. */
    public static ObjectNode kindFirst(ObjectNode object) {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        out.set("kind", object.get("kind"));
        out.set("apiVersion", object.get("apiVersion"));
        out.setAll(object);
        return out;
    }
}
