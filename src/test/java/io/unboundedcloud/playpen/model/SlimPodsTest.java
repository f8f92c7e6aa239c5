package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.ManagedFieldsEntryBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodConditionBuilder;
import io.fabric8.kubernetes.api.model.TolerationBuilder;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.ClaimLedger;

/**
 * The watch cache keeps pods slim ({@link SlimPods}): every answer, view and decision the operator derives from a
 * pod must come out byte for byte the same from the slim copy as from the pod the API server sent, over pods as
 * the API server has them (managedFields, defaulted spec, full status) in every state the operator tells apart.
 */
public class SlimPodsTest {
    static final String WG = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    static final String KUBECONFIG = AllocResponsesGoldenTest.resource("/kubeconfig/k3s-two-clusters.yaml");
    static final Instant NOW = Instant.parse("2026-01-02T04:00:00Z");
    static final OperatorConfig CONFIG = OperatorConfig.parse("--runner-amd64-count=2", "--runner-arm64-count=1",
            "--control-plane-count=1");
    static final PoolPlanner PLANNER = new PoolPlanner(CONFIG, new PodTemplates(CONFIG, Map.of()));
    static final Candidates CANDIDATES = new Candidates(CONFIG.runnerLabelSelector());
    static final TtlPolicy LEASES = new TtlPolicy(Duration.ofHours(1), Duration.ofHours(8));
    static final AllocResponses RESPONSES = new AllocResponses(CONFIG.network(), CONFIG.redfishBaseUrl(), 1, LEASES);
    static final Function<String, Optional<String>> NODES = n -> "node-a".equals(n) ? Optional.of("203.0.113.10")
            : "node-c".equals(n) ? Optional.of("") : Optional.empty();
    static final String KEY = "ab".repeat(32);
    /** The nodes as the pool's health checks see them: node-a Ready, node-b NotReady for an hour, node-c gone. */
    static final Function<String, Optional<Node>> POOL_NODES = n -> switch (n) {
        case "node-a" -> Optional.of(node(n, "True"));
        case "node-b" -> Optional.of(node(n, "False"));
        default -> Optional.empty();
    };

    @Test
    void everyAnswerViewAndDecisionIsTheSameFromTheSlimCopy() {
        Random r = new Random(20261125);
        Set<String> seen = new java.util.TreeSet<>();
        for (int i = 0; i < 600; i++) {
            Pod full = apiPod(r);
            String before = Json.write(full);
            Pod slim = SlimPods.slim(full);
            Map<String, String> facts = facts(full);
            assertThat(facts(slim)).as("pod %d: %s", i, before).isEqualTo(facts);
            assertThat(Json.write(full)).as("the pod itself is left as it was").isEqualTo(before);
            facts.forEach((k, v) -> {
                if (k.startsWith("classify ")) {
                    seen.add(v);
                }
            });
            seen.add(facts.get("answer").startsWith("{") ? "answered" : "not answered");
            seen.add(facts.get("view").equals("none") ? "no view" : "view");
            seen.add("expired=" + facts.get("expired"));
            seen.add("idle=" + facts.get("idle"));
            seen.add(facts.get("ledgerExact").contains("standing=WON") ? "won" : "other");
            seen.add(facts.get("health").replaceAll(" ready=.*", ""));
        }
        // the pods covered every outcome the comparison is about
        assertThat(seen).contains("USABLE", "CLAIMED_BY_THIS_KEY", "SKIP", "answered", "not answered", "view", "no view",
                "expired=true", "expired=false", "idle=true", "idle=false", "won", "Optional.empty",
                "Optional[EVICTED]", "Optional[FAILED]", "Optional[SUCCEEDED]", "Optional[NODE_GONE]",
                "Optional[NODE_NOT_READY]", "Optional[NOT_READY_IN_TIME]");
    }

    @Test
    void theSlimCopyDropsWhatTheOperatorNeverReads() {
        Pod full = apiPod(new Random(1));
        Pod slim = SlimPods.slim(full);
        assertThat(full.getMetadata().getManagedFields()).isNotEmpty();
        assertThat(slim.getMetadata().getManagedFields()).isEmpty();
        assertThat(slim.getSpec().getVolumes()).isEmpty();
        assertThat(slim.getSpec().getTolerations()).isEmpty();
        assertThat(slim.getSpec().getContainers().get(0).getEnv()).isEmpty();
        assertThat(slim.getStatus().getPodIP()).isNull();
        assertThat(Json.write(slim).length()).as("under half the pod").isLessThan(Json.write(full).length() / 2);
        // what it keeps it keeps in order, and nobody can change it through the cache
        assertThat(slim.getMetadata().getLabels().keySet()).containsExactlyElementsOf(full.getMetadata().getLabels().keySet());
        assertThat(slim.getMetadata().getAnnotations()).containsExactlyEntriesOf(full.getMetadata().getAnnotations());
        assertThatThrownBy(() -> slim.getMetadata().getLabels().put("x", "y"))
                .isInstanceOf(UnsupportedOperationException.class);
        assertThat(SlimPods.slim(null)).isNull();
    }

    @Test
    void aPodOfOnlyTheFieldsTheSlimCopyKeepsIsCopiedWhole() throws Exception {
        com.fasterxml.jackson.databind.ObjectMapper trees = new com.fasterxml.jackson.databind.ObjectMapper();
        io.fabric8.kubernetes.client.utils.KubernetesSerialization own =
                new io.fabric8.kubernetes.client.utils.KubernetesSerialization();
        Pod pod = own.unmarshal(SlimPodJsonTest.EVERY_SLIM_FIELD, Pod.class);
        Pod slim = SlimPods.slim(pod);
        assertThat(trees.readTree(own.asJson(slim))).isEqualTo(trees.readTree(SlimPodJsonTest.EVERY_SLIM_FIELD));
        assertThat(slim.getMetadata().getOwnerReferences()).isEqualTo(pod.getMetadata().getOwnerReferences())
                .isNotSameAs(pod.getMetadata().getOwnerReferences());
        assertThatThrownBy(() -> slim.getMetadata().getFinalizers().add("g"))
                .isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> slim.getSpec().getContainers().add(null))
                .isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void emptyCollectionsAreTheSharedEmptyOnesAndNullStaysNull() {
        Pod full = apiPod(new Random(5));
        full.getMetadata().setOwnerReferences(new ArrayList<>());
        full.getMetadata().setFinalizers(null);
        full.getMetadata().setAnnotations(new LinkedHashMap<>());
        Pod slim = SlimPods.slim(full);
        assertThat(slim.getMetadata().getManagedFields()).isSameAs(List.of());
        assertThat(slim.getMetadata().getOwnerReferences()).isSameAs(List.of());
        assertThat(slim.getMetadata().getFinalizers()).isNull();
        assertThat(slim.getMetadata().getAnnotations()).isSameAs(Map.of());
        assertThat(slim.getMetadata().getAdditionalProperties()).isSameAs(Map.of());
        assertThat(slim.getSpec().getVolumes()).isSameAs(List.of());
        assertThat(slim.getSpec().getContainers().get(0).getEnv()).isSameAs(List.of());
        assertThat(slim.getStatus().getPodIPs()).isSameAs(List.of());
        assertThat(slim.getStatus().getContainerStatuses().get(0).getVolumeMounts()).isSameAs(List.of());
        full.getMetadata().setLabels(null);
        full.getMetadata().setAnnotations(null);
        full.getMetadata().setOwnerReferences(null);
        full.getMetadata().setFinalizers(List.of("f"));
        Pod other = SlimPods.slim(full);
        assertThat(other.getMetadata().getLabels()).isNull();
        assertThat(other.getMetadata().getAnnotations()).isNull();
        assertThat(other.getMetadata().getOwnerReferences()).isNull();
        assertThat(other.getMetadata().getFinalizers()).containsExactly("f");
        full.getMetadata().setLabels(new LinkedHashMap<>());
        assertThat(SlimPods.slim(full).getMetadata().getLabels()).isSameAs(Map.of());
        // absent strings and lists stay absent
        full.getMetadata().setNamespace(null);
        full.getMetadata().setGenerateName(null);
        full.getSpec().setNodeName(null);
        full.getSpec().setContainers(null);
        full.getStatus().setConditions(null);
        full.getStatus().setContainerStatuses(null);
        Pod bare = SlimPods.slim(full);
        assertThat(bare.getMetadata().getNamespace()).isNull();
        assertThat(bare.getMetadata().getGenerateName()).isNull();
        assertThat(bare.getSpec().getNodeName()).isNull();
        assertThat(bare.getSpec().getContainers()).isNull();
        assertThat(bare.getStatus().getConditions()).isNull();
        assertThat(bare.getStatus().getContainerStatuses()).isNull();
    }

    @Test
    void recurringValuesAreSharedButAClaimsOwnAreNot() {
        io.fabric8.kubernetes.client.utils.KubernetesSerialization own =
                new io.fabric8.kubernetes.client.utils.KubernetesSerialization();
        Pod a = own.unmarshal(SlimPodJsonTest.EVERY_SLIM_FIELD, Pod.class);
        Pod b = own.unmarshal(SlimPodJsonTest.EVERY_SLIM_FIELD, Pod.class);
        // values no pod had before (the table of shared strings lives as long as the JVM)
        String fresh = java.util.UUID.randomUUID().toString();
        for (Pod p : List.of(a, b)) {
            p.getMetadata().setNamespace(new String("runners-" + fresh));
            p.getMetadata().setGenerateName(new String("playpen-runner-" + fresh));
            p.getSpec().setNodeName(new String("node-" + fresh));
            p.getSpec().getContainers().get(0).setImage(new String("runner:" + fresh));
            p.getStatus().getContainerStatuses().get(0).setName(new String("vm-" + fresh));
            p.getStatus().getContainerStatuses().get(0).setImage(new String("runner:" + fresh));
            Map<String, String> labels = new LinkedHashMap<>();
            labels.put(new String(PlaypenKeys.APP_NAME), new String("playpen"));
            labels.put(PlaypenKeys.KEY_HASH_LABEL, new String("abc"));
            labels.put(PlaypenKeys.ALLOCATED, new String("true-shared"));
            p.getMetadata().setLabels(labels);
            p.getMetadata().setAnnotations(new LinkedHashMap<>(Map.of(new String("note"), new String("n"))));
        }
        Pod sa = SlimPods.slim(a);
        Pod sb = SlimPods.slim(b);
        assertThat(sa.getMetadata().getNamespace()).isEqualTo("runners-" + fresh).isSameAs(sb.getMetadata().getNamespace());
        assertThat(sa.getMetadata().getGenerateName()).isSameAs(sb.getMetadata().getGenerateName());
        assertThat(sa.getSpec().getNodeName()).isSameAs(sb.getSpec().getNodeName());
        assertThat(sa.getSpec().getContainers().get(0).getImage()).isSameAs(sb.getSpec().getContainers().get(0).getImage());
        assertThat(sa.getStatus().getContainerStatuses().get(0).getName())
                .isSameAs(sb.getStatus().getContainerStatuses().get(0).getName());
        assertThat(sa.getStatus().getContainerStatuses().get(0).getImage())
                .isSameAs(sb.getSpec().getContainers().get(0).getImage());
        assertThat(sa.getMetadata().getLabels().get(PlaypenKeys.APP_NAME))
                .isSameAs(sb.getMetadata().getLabels().get(PlaypenKeys.APP_NAME));
        assertThat(List.copyOf(sa.getMetadata().getAnnotations().keySet()).get(0))
                .isSameAs(List.copyOf(sb.getMetadata().getAnnotations().keySet()).get(0));
        // a claim's own label values are kept as they came: sharing them would only fill the table
        assertThat(sa.getMetadata().getLabels().get(PlaypenKeys.KEY_HASH_LABEL))
                .isSameAs(a.getMetadata().getLabels().get(PlaypenKeys.KEY_HASH_LABEL));
        assertThat(sa.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED))
                .isSameAs(a.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED));
        // an annotation's value is its pod's own
        assertThat(sa.getMetadata().getAnnotations().get("note")).isSameAs(a.getMetadata().getAnnotations().get("note"));
    }

    @Test
    void theFixedMapIsAMapOfItsEntriesInOrder() {
        Random r = new Random(8);
        for (int n = 0; n < 14; n++) {
            Map<String, String> expected = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                expected.put("k" + r.nextInt(1000) + "-" + i, "v" + i);
            }
            String[] kv = new String[2 * n];
            int i = 0;
            for (Map.Entry<String, String> e : expected.entrySet()) {
                kv[i++] = e.getKey();
                kv[i++] = e.getValue();
            }
            Map<String, String> fixed = new SlimPods.FixedMap(kv);
            assertThat(fixed).hasSize(n).isEqualTo(expected).hasSameHashCodeAs(expected);
            assertThat(fixed.entrySet()).hasSize(n);
            assertThat(List.copyOf(fixed.keySet())).isEqualTo(List.copyOf(expected.keySet()));
            for (String k : expected.keySet()) {
                String copy = new String(k);
                assertThat(fixed.get(copy)).isEqualTo(expected.get(k));
                assertThat(fixed.containsKey(copy)).isTrue();
            }
            assertThat(fixed.get("absent")).isNull();
            assertThat(fixed.containsKey("absent")).isFalse();
            assertThat(fixed.get(null)).isNull();
            assertThat(fixed.containsKey(null)).isFalse();
            java.util.Iterator<Map.Entry<String, String>> it = fixed.entrySet().iterator();
            for (int j = 0; j < n; j++) {
                assertThat(it.hasNext()).isTrue();
                it.next();
            }
            assertThat(it.hasNext()).isFalse();
            assertThatThrownBy(it::next).isInstanceOf(java.util.NoSuchElementException.class);
        }
        // the first key found wins, and the value beside it is returned
        Map<String, String> two = new SlimPods.FixedMap(new String[] {"a", "1", "b", "2"});
        assertThat(two.get("a")).isEqualTo("1");
        assertThat(two.get("b")).isEqualTo("2");
    }

    @Test
    void aSlimPodIsItsOwnSlimCopy() {
        Pod full = apiPod(new Random(4));
        Pod slim = SlimPods.slim(full);
        assertThat(slim).isNotSameAs(full);
        assertThat(SlimPods.slim(slim)).isSameAs(slim);
        // a pod built from a slim one is a new pod, copied again
        Pod edited = new PodBuilder(slim).editMetadata().addToLabels("x", "y").endMetadata().build();
        assertThat(SlimPods.slim(edited)).isNotSameAs(edited).isEqualTo(edited);
        assertThat(Json.write(slim)).isEqualTo(Json.write(SlimPods.slim(full)));
    }

    @Test
    void aNullElementInAListStaysNull() {
        Pod full = apiPod(new Random(3));
        full.getSpec().setContainers(java.util.Arrays.asList(full.getSpec().getContainers().get(0), null));
        full.getStatus().setConditions(java.util.Arrays.asList(null, full.getStatus().getConditions().get(0)));
        Pod slim = SlimPods.slim(full);
        assertThat(slim.getSpec().getContainers()).hasSize(2).last().isNull();
        assertThat(slim.getSpec().getContainers().get(0).getName()).isEqualTo(full.getSpec().getContainers().get(0).getName());
        assertThat(slim.getStatus().getConditions()).hasSize(2).first().isNull();
    }

    @Test
    void recurringStringsAreShared() {
        Pod a = SlimPods.slim(apiPod(new Random(2)));
        Pod b = SlimPods.slim(apiPod(new Random(3)));
        String key = PlaypenKeys.APP_NAME;
        String ka = a.getMetadata().getLabels().keySet().stream().filter(key::equals).findFirst().orElseThrow();
        String kb = b.getMetadata().getLabels().keySet().stream().filter(key::equals).findFirst().orElseThrow();
        assertThat(ka).isSameAs(kb);
        assertThat(a.getMetadata().getLabels().get(key)).isSameAs(b.getMetadata().getLabels().get(key));
    }

    /** Everything the operator derives from one pod, each as text. */
    static Map<String, String> facts(Pod pod) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("managed", String.valueOf(ManagedPods.isManaged(pod)));
        f.put("resourceType", String.valueOf(ManagedPods.resourceType(pod)));
        f.put("architecture", ManagedPods.architecture(pod));
        f.put("kubernetesVersion", ManagedPods.kubernetesVersion(pod));
        f.put("claimed", String.valueOf(ManagedPods.isClaimed(pod)));
        f.put("terminating", String.valueOf(ManagedPods.isTerminating(pod)));
        f.put("containerHostPort", String.valueOf(ManagedPods.containerHostPort(pod)));
        f.put("labelHostPort", String.valueOf(ManagedPods.labelHostPort(pod)));
        f.put("hostPort", String.valueOf(ManagedPods.hostPort(pod)));
        f.put("idle", String.valueOf(ManagedPods.isIdle(pod)));
        f.put("name", ManagedPods.name(pod));
        f.put("labels", Json.write(ManagedPods.labels(pod)));
        f.put("annotations", Json.write(ManagedPods.annotations(pod)));
        f.put("keyHash", ManagedPods.keyHash(pod));
        f.put("ownerHash", ManagedPods.ownerHash(pod));
        f.put("eventReference", String.join("|", pod.getApiVersion(), pod.getKind(), pod.getMetadata().getNamespace(),
                pod.getMetadata().getName(), pod.getMetadata().getUid(), pod.getMetadata().getResourceVersion()));
        // the hot path and the 503's reasons
        f.put("kindKey", String.valueOf(CANDIDATES.kindKey(pod)));
        f.put("idleKindKey", String.valueOf(CANDIDATES.idleKindKey(pod)));
        for (AllocCommand cmd : commands()) {
            String k = cmd.resourceType().wire() + "/" + cmd.architecture() + cmd.kubernetesVersion() + "/"
                    + cmd.keyHash().substring(0, 4);
            Candidates.Verdict v = CANDIDATES.classify(cmd, pod, NODES);
            f.put("classify " + k, v.name());
            if (v == Candidates.Verdict.USABLE) {
                f.put("usable " + k, usable(CANDIDATES.usable(cmd, pod, NODES)));
            }
            Candidates.Selection s = CANDIDATES.select(cmd, List.of(pod), NODES);
            f.put("select " + k, s.ordered().stream().map(SlimPodsTest::usable).toList() + " skipped=" + s.skipped()
                    + " ofKind=" + s.ofKind());
            f.put("unavailable " + k, Candidates.unavailableMessage(cmd, s));
        }
        // the answer (a replay's, and the kubeconfig a control plane's owner reads)
        f.put("answer", attempt(() -> Json.encode(RESPONSES.build(pod, NODES.apply(
                pod.getSpec() == null ? null : pod.getSpec().getNodeName()).orElse("")))));
        // the views of kubectl get allocs
        f.put("view", attempt(() -> AllocViews.of(pod, NODES, new TtlPolicy(LEASES.ttl())).map(AllocViews::object)
                .map(Json::write).orElse("none")));
        AllocViews.Page page = AllocViews.selectMatching(List.of(pod), NODES, new TtlPolicy(LEASES.ttl()), null,
                AllocViews.parseQuery(null, "", "application/json"));
        f.put("list", Json.write(AllocViews.list(page)));
        f.put("table", Json.write(AllocViews.table(page, AllocViews.parseQuery(null, "includeObject=Object",
                "application/json;as=Table;v=v1;g=meta.k8s.io"), NOW)));
        // leases, renewals and expiry
        f.put("expiresAt", String.valueOf(LEASES.expiresAt(pod)));
        f.put("maxExpiresAt", String.valueOf(LEASES.maxExpiresAt(pod)));
        f.put("expired", String.valueOf(LEASES.isExpired(pod, NOW)));
        f.put("expiredList", String.valueOf(LEASES.expired(List.of(pod), NOW).size()));
        f.put("renewedExpiry", attempt(() -> String.valueOf(LEASES.renewedExpiry(pod, NOW, Duration.ofMinutes(30)))));
        f.put("claimedAt", String.valueOf(TtlPolicy.claimedAt(pod)));
        // the pool: what it counts, which ports it sees used, what it would create
        PoolPlan plan = new PoolPlanner(CONFIG, new PodTemplates(CONFIG, Map.of())).plan(List.of(pod), Set.of());
        f.put("plan", plan.toCreate().stream().map(p -> p.target() + ":" + p.hostPort()).toList() + " exhausted="
                + plan.exhausted() + " used=" + plan.usedPorts());
        // the pool's judgement of its health, with a time and nodes: what it deletes, reports and shows
        f.put("health", PoolHealth.problem(pod, POOL_NODES, NOW, PLANNER.limits()) + " ready=" + PoolHealth.ready(pod));
        PoolPlan judged = PLANNER.plan(List.of(pod), Set.of(), new PoolPlanner.Context(NOW, POOL_NODES, Map.of(),
                Map.of(), Map.of(), Map.of()));
        f.put("judged", judged.toDelete().stream().map(d -> d.reason() + ":" + d.force()).toList() + " reports="
                + judged.unhealthyAllocated().stream().map(PoolPlan.Unhealthy::problem).toList() + " statuses="
                + judged.statuses());
        f.put("usedRunnerPorts", String.valueOf(HostPortPlanner.usedPorts(List.of(pod), ResourceType.RUNNER)));
        f.put("usedControlPlanePorts", String.valueOf(HostPortPlanner.usedPorts(List.of(pod),
                ResourceType.CONTROL_PLANE)));
        // the claim ledger's judgement, in and out of commit order
        f.put("ledgerExact", String.valueOf(new ClaimLedger().put(pod, true)));
        f.put("ledgerListed", String.valueOf(new ClaimLedger().put(pod, false)));
        return f;
    }

    static Node node(String name, String ready) {
        return new NodeBuilder().withNewMetadata().withName(name).endMetadata().withNewStatus().addNewCondition()
                .withType("Ready").withStatus(ready).withLastTransitionTime("2026-01-02T03:00:00Z").endCondition()
                .endStatus().build();
    }

    static String usable(Candidates.Usable u) {
        return ManagedPods.name(u.pod()) + ":" + u.hostPort() + "@" + u.externalIp() + "#" + u.score();
    }

    static String attempt(Supplier<String> s) {
        try {
            return s.get();
        } catch (ApiException e) {
            return "ApiException " + e.code() + " " + e.getMessage();
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + " " + e.getMessage();
        }
    }

    static List<AllocCommand> commands() {
        List<AllocCommand> out = new ArrayList<>();
        for (String key : List.of(KEY, "ef".repeat(32))) {
            out.add(new AllocCommand(key, ResourceType.RUNNER, "", WG, "amd64"));
            out.add(new AllocCommand(key, ResourceType.RUNNER, "", WG, "arm64"));
            out.add(new AllocCommand(key, ResourceType.CONTROL_PLANE, "v1.33.0", "", "amd64"));
            out.add(new AllocCommand(key, ResourceType.CONTROL_PLANE, "v1.32.1", "", "amd64"));
        }
        return out;
    }

    static <T> T pick(Random r, List<T> xs) {
        return xs.get(r.nextInt(xs.size()));
    }

    /**
     * A pod as the API server would send it, in a random combination of the states the operator tells apart: its
     * kind (and labels that make it one), claim annotations, node, phase and container states, terminating or not,
     * published keys, host ports; plus what the API server adds that the operator never reads.
     */
    public static Pod apiPod(Random r) {
        int port = 20000 + r.nextInt(40);
        String kind = pick(r, List.of("runner-amd64", "runner-arm64", "cp-1.33", "cp-1.32", "unmanaged", "app-only",
                "type-label-only"));
        Pod template = kind.startsWith("cp") ? TestPods.controlPlane(kind.equals("cp-1.33") ? "v1.33.0" : "v1.32.1", port)
                : TestPods.runner(kind.equals("runner-arm64") ? "arm64" : "amd64", port);
        PodBuilder b = new PodBuilder(template);
        b.editMetadata().withUid("uid-" + r.nextInt(1000)).withResourceVersion(String.valueOf(1 + r.nextInt(100000)))
                .withCreationTimestamp("2026-01-02T03:00:00Z").withGenerateName(r.nextBoolean() ? "playpen-" : null)
                .addToManagedFields(new ManagedFieldsEntryBuilder().withManager("kubelet").withOperation("Update")
                        .withApiVersion("v1").withTime("2026-01-02T03:00:01Z").withFieldsType("FieldsV1")
                        .withNewFieldsV1().addToAdditionalProperties("f:status", Map.of("f:conditions", Map.of(
                                "k:{\"type\":\"Ready\"}", Map.of(".", Map.of(), "f:status", Map.of()))))
                        .endFieldsV1().build())
                .endMetadata();
        switch (kind) {
            case "unmanaged" -> b.editMetadata().withLabels(Map.of("app", "other")).endMetadata();
            case "app-only" -> b.editMetadata().removeFromLabels(PlaypenKeys.RESOURCE_TYPE).endMetadata();
            case "type-label-only" -> b.editMetadata().removeFromLabels(PlaypenKeys.APP_NAME)
                    .addToLabels(PlaypenKeys.RESOURCE_TYPE, "Runner").endMetadata();
            default -> {
            }
        }
        switch (r.nextInt(5)) {
            case 0 -> b.editMetadata().removeFromLabels(PlaypenKeys.ARCHITECTURE).endMetadata();
            case 1 -> b.editMetadata().addToLabels(PlaypenKeys.ARCHITECTURE, pick(r, List.of("AMD64", "", " arm64 ",
                    "s390x"))).endMetadata();
            default -> {
            }
        }
        if (r.nextInt(4) == 0) {
            b.editMetadata().addToLabels(PlaypenKeys.HOST_PORT, pick(r, List.of("x", "70000", String.valueOf(port + 1))))
                    .endMetadata();
        }
        if (r.nextInt(5) == 0) {
            b.editSpec().editFirstContainer().withPorts(List.of()).endContainer().endSpec();
        }
        if (r.nextInt(4) != 0) {
            b.editMetadata().addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, r.nextInt(6) == 0 ? "not-a-key" : WG)
                    .endMetadata();
        }
        if (r.nextBoolean()) {
            b.editMetadata().addToAnnotations(PlaypenKeys.REDFISH_CERT_PEM, AllocResponsesGoldenTest.PEM).endMetadata();
        }
        if (kind.startsWith("cp") && r.nextInt(4) != 0) {
            b.editMetadata().addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, KUBECONFIG)
                    .addToAnnotations(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, "https://192.168.200.1:6443").endMetadata();
        }
        int claim = r.nextInt(6);
        if (claim > 0) {
            b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, r.nextInt(3) == 0 ? "ef".repeat(32) : KEY)
                    .addToAnnotations(PlaypenKeys.REQUEST_HASH, "cd".repeat(32))
                    .addToAnnotations(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, WG)
                    .addToAnnotations(PlaypenKeys.CLAIMED_AT, pick(r, List.of("2026-01-02T03:04:05Z",
                            "2026-01-02T03:59:59Z", "2026-01-02 03:04:05", "garbage")))
                    .addToLabels(PlaypenKeys.ALLOCATED, "39bfc0942e903926")
                    .addToLabels(PlaypenKeys.KEY_HASH_LABEL, KEY).endMetadata();
        }
        if (claim > 1) {
            b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_HASH, "01".repeat(32))
                    .addToLabels(PlaypenKeys.OWNER_HASH_LABEL, "01".repeat(31) + "0")
                    .addToAnnotations(PlaypenKeys.OWNER_QUOTA, pick(r, List.of("2", " 3", "x"))).endMetadata();
        }
        if (claim > 2) {
            b.editMetadata().addToAnnotations(PlaypenKeys.EXPIRES_AT, pick(r, List.of("2026-01-02T05:00:00Z",
                    "2026-01-02T03:30:00Z", "soon"))).endMetadata();
        }
        if (claim > 3) {
            b.editMetadata().addToAnnotations(PlaypenKeys.CLAIM_SETTLED, "true").endMetadata();
        }
        if (r.nextInt(5) == 0) {
            b.editMetadata().withDeletionTimestamp("2026-01-02T03:50:00Z").withDeletionGracePeriodSeconds(30L)
                    .addToFinalizers("example.com/keep").endMetadata();
        }
        if (r.nextInt(6) == 0) {
            b.editMetadata().addNewOwnerReference().withApiVersion("apps/v1").withKind("ReplicaSet").withName("rs")
                    .withUid("rs-uid").withController(true).endOwnerReference().endMetadata();
        }
        String node = pick(r, List.of("node-a", "node-a", "node-a", "node-b", "node-c", ""));
        b.editSpec().withNodeName(node.isEmpty() ? null : node).withDnsPolicy("ClusterFirst").withSchedulerName(
                "default-scheduler").withTerminationGracePeriodSeconds(30L).withEnableServiceLinks(true)
                .addToTolerations(new TolerationBuilder().withKey("node.kubernetes.io/not-ready").withOperator("Exists")
                        .withEffect("NoExecute").withTolerationSeconds(300L).build())
                .addNewVolume().withName("kube-api-access").withNewProjected().withDefaultMode(420).endProjected()
                .endVolume().endSpec();
        if (r.nextInt(8) != 0) {
            String phase = pick(r, List.of("Running", "Running", "Running", "Pending", "Failed", "Succeeded"));
            b.withNewStatus().withPhase(phase).withReason(phase.equals("Failed") ? pick(r, List.of("Evicted", "Error"))
                    : null).withMessage(phase.equals("Failed") ? "The node was low on resource: memory." : null)
                    .withHostIP("10.0.0.5").withPodIP("10.244.1." + r.nextInt(250))
                    .addNewPodIP("10.244.1.9").withQosClass("BestEffort").withStartTime("2026-01-02T03:00:02Z")
                    .addToConditions(new PodConditionBuilder().withType("Ready").withStatus(r.nextBoolean() ? "True"
                            : "False").withLastTransitionTime("2026-01-02T03:00:05Z").build())
                    .addToConditions(new PodConditionBuilder().withType("PodScheduled").withStatus("True").build())
                    .endStatus();
            for (var c : template.getSpec().getContainers()) {
                if (r.nextInt(8) == 0) {
                    continue;
                }
                ContainerStatusBuilder cs = new ContainerStatusBuilder().withName(c.getName()).withImage(c.getImage())
                        .withImageID("sha256:" + "0".repeat(64)).withContainerID("containerd://" + r.nextInt(99999))
                        .withRestartCount(r.nextInt(3)).withStarted(true).withReady(r.nextInt(5) != 0)
                        .withNewLastState().withNewTerminated().withExitCode(1).withReason("Error").endTerminated()
                        .endLastState();
                switch (r.nextInt(6)) {
                    case 0 -> cs.withNewState().withNewWaiting().withReason("CrashLoopBackOff").endWaiting().endState();
                    case 1 -> cs.withNewState().withNewTerminated().withExitCode(0).withReason("Completed").endTerminated()
                            .endState();
                    default -> cs.withNewState().withNewRunning().withStartedAt("2026-01-02T03:00:04Z").endRunning()
                            .endState();
                }
                b.editStatus().addToContainerStatuses(cs.build()).endStatus();
            }
        }
        return b.build();
    }
}
