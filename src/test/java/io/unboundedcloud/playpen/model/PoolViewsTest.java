package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * The pools as kubectl reads them: the query's options and their errors, which pools a read selects, each
 * condition's status, reason and message, the object, the list and the Table, and when a condition's transition
 * time moves.
 */
class PoolViewsTest {
    private static final Instant NOW = Instant.parse("2026-01-02T04:00:00.750Z");
    private static final String TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    private static final PoolTarget AMD = PoolTarget.runner("amd64");
    private static final PoolTarget CP = PoolTarget.controlPlane("1.33.0");

    /** A full, healthy, current pool of 2 with 1 allocated pod, its oldest pod 90 minutes old. */
    private static PoolStatus pool(PoolTarget target) {
        return new PoolStatus(target, true, 2, 4, 2, 2, 2, 1, 0, 0, 0, Map.of(), Map.of(), "h1", "runner:1",
                PoolBackoff.View.NONE, false, NOW.minus(Duration.ofMinutes(90)), 0.256, Duration.ofMillis(12_345), 0, 0);
    }

    private static PoolStatus with(PoolStatus p, int ready, int stale, int starting, boolean configured) {
        return new PoolStatus(p.target(), configured, p.minimum(), p.maximum(), p.desired(), ready, p.idle(),
                p.allocated(), stale, p.unhealthy(), starting, p.unhealthyByReason(), p.unhealthyAllocatedByReason(),
                p.templateHash(), p.image(), p.backoff(), p.portsExhausted(), p.oldest(), p.allocationRate(),
                p.timeToReady(), p.noExternalIp(), p.onNodesInDoubt());
    }

    private static PoolStatus degraded(PoolStatus p, int unhealthy, Map<String, Integer> idle,
            Map<String, Integer> allocated, PoolBackoff.View backoff, boolean portsExhausted) {
        return new PoolStatus(p.target(), p.configured(), p.minimum(), p.maximum(), p.desired(), p.ready(), p.idle(),
                p.allocated(), p.stale(), unhealthy, p.starting(), idle, allocated, p.templateHash(), p.image(),
                backoff, portsExhausted, p.oldest(), p.allocationRate(), p.timeToReady(), p.noExternalIp(),
                p.onNodesInDoubt());
    }

    private static List<String> shown(List<PoolViews.Condition> cs) {
        return cs.stream().map(c -> c.type() + " " + c.status() + " " + c.reason() + ": " + c.message()).toList();
    }

    @Test
    void readyAndProgressingFollowTheCounts() {
        PoolViews v = new PoolViews("25%");
        PoolStatus full = pool(AMD);
        assertThat(shown(v.conditions(full, NOW))).containsExactly(
                "Ready True Full: 2 of 2 idle pods ready",
                "Progressing False Current: every idle pod runs template h1",
                "Degraded False Healthy: no unhealthy pods, no back-off");
        // more ready than desired is still full; one short is not
        assertThat(v.conditions(with(full, 3, 0, 0, true), NOW).get(0).reason()).isEqualTo("Full");
        assertThat(shown(v.conditions(with(full, 1, 0, 0, true), NOW)).get(0))
                .isEqualTo("Ready False Short: 1 of 2 idle pods ready");
        assertThat(shown(v.conditions(with(full, 1, 0, 1, true), NOW))).containsSubsequence(
                "Ready False Short: 1 of 2 idle pods ready, 1 starting",
                "Progressing True Starting: 1 pod(s) of template h1 starting");
        assertThat(shown(v.conditions(with(full, 2, 1, 1, true), NOW)).get(1)).isEqualTo("Progressing True "
                + "RollingOut: 1 idle pod(s) run an older template; each is deleted once a current pod is ready "
                + "(surge 25%)");
        // a pool no flag asks for drains, whatever else it has; healthy pods the Go operator made (no template hash)
        // are never deleted as surplus, so the message does not promise that every idle pod goes
        assertThat(shown(v.conditions(with(full, 2, 1, 1, false), NOW)).get(1)).isEqualTo("Progressing True "
                + "Draining: no flag asks for this pool any more: idle pods this operator made are deleted; healthy "
                + "idle pods without a template hash (made by the Go operator) are never deleted: they stay until "
                + "the Go operator hands them out or you delete them (kubectl delete pod); allocated ones stay until "
                + "released");
        for (String off : List.of("0", "0%", " 00 ", "000%")) {
            assertThat(new PoolViews(off).conditions(with(full, 2, 2, 0, true), NOW).get(1).reason()).as(off)
                    .isEqualTo("StaleInUse");
        }
        assertThat(shown(new PoolViews("0").conditions(with(full, 2, 2, 0, true), NOW)).get(1)).isEqualTo(
                "Progressing True StaleInUse: 2 idle pod(s) run an older template; rolling replacement is off "
                        + "(--pool-max-surge=0), they are handed out only when no current pod is usable");
        for (String on : List.of("1", "10%", "0.5", "%", "01")) {
            assertThat(new PoolViews(on).conditions(with(full, 2, 2, 0, true), NOW).get(1).reason()).as(on)
                    .isEqualTo("RollingOut");
        }
    }

    /**
     * A configured pool that wants no idle pods (a count of 0) rolls nothing out: stale pods the pool made go as
     * surplus, and those it did not make (the Go operator's) stay until allocated. Its condition says so instead of
     * promising a rollout that never comes (its max-surge metric is 0 and the rollout alert skips it too).
     */
    @Test
    void aPoolThatWantsNoPodsDoesNotSayItRollsOut() {
        PoolStatus none = new PoolStatus(AMD, true, 0, 0, 0, 1, 1, 0, 1, 0, 0, Map.of(), Map.of(), "h1", "runner:1",
                PoolBackoff.View.NONE, false, NOW.minus(Duration.ofMinutes(90)), 0, null, 0, 0);
        assertThat(shown(new PoolViews("25%").conditions(none, NOW)).get(1)).isEqualTo(
                "Progressing True StaleInUse: 1 idle pod(s) run an older template; the pool wants no idle pods, so "
                        + "none is replaced: those the pool made go as surplus, others are handed out until none is "
                        + "left");
    }

    @Test
    void degradedSaysWhyInOrderOfWhatMattersMost() {
        PoolViews v = new PoolViews("1");
        PoolStatus p = pool(AMD);
        PoolBackoff.View paused = new PoolBackoff.View(3, Duration.ofSeconds(40), NOW.plusSeconds(12));
        PoolBackoff.View over = new PoolBackoff.View(2, Duration.ofSeconds(20), NOW.minusSeconds(1));
        assertThat(shown(v.conditions(degraded(p, 2, Map.of("crash-loop", 1), Map.of(), paused, true), NOW)).get(2))
                .isEqualTo("Degraded True BackOff: 3 replacement(s) in a row never became ready; the pool creates "
                        + "again in 12 s until one is ready");
        assertThat(shown(v.conditions(degraded(p, 0, Map.of(), Map.of(), over, false), NOW)).get(2))
                .isEqualTo("Degraded True BackOff: 2 replacement(s) in a row never became ready; the pool creates "
                        + "one pod at a time until one is ready");
        // idle and allocated counts per reason merged, by reason
        assertThat(shown(v.conditions(degraded(p, 5, Map.of("not-ready", 1, "crash-loop", 2),
                Map.of("crash-loop", 1, "evicted", 1), PoolBackoff.View.NONE, true), NOW)).get(2))
                .startsWith("Degraded True UnhealthyPods: 5 unhealthy pod(s): crash-loop=3, evicted=1, not-ready=1 "
                        + "(idle ones are replaced, allocated ones left to their allocation); the hostPort range has "
                        + "no free port");
        assertThat(shown(v.conditions(degraded(p, 0, Map.of(), Map.of(), PoolBackoff.View.NONE, true), NOW)).get(2))
                .isEqualTo("Degraded True HostPortsExhausted: the pool wants more pods than its hostPort range has "
                        + "free ports; widen the range (--runner-wireguard-host-port-start, "
                        + "--runner-wireguard-host-port-end) or free the ports other pods hold");
    }

    /**
     * Host ports running out is a thing to act on: the condition names the flags of the kind's range, and unhealthy
     * pods shown instead of it do not claim they are replaced when no port is free for their replacements.
     */
    @Test
    void aFullHostPortRangeSaysWhatToDoAndIsNotHiddenByUnhealthyPods() {
        PoolViews v = new PoolViews("1");
        PoolStatus cp = degraded(pool(CP), 0, Map.of(), Map.of(), PoolBackoff.View.NONE, true);
        assertThat(v.conditions(cp, NOW).get(2).message()).endsWith("; widen the range "
                + "(--control-plane-apiserver-host-port-start, --control-plane-apiserver-host-port-end) or free the "
                + "ports other pods hold");
        PoolStatus both = degraded(pool(AMD), 1, Map.of("Evicted", 1), Map.of(), PoolBackoff.View.NONE, true);
        assertThat(shown(v.conditions(both, NOW)).get(2)).isEqualTo("Degraded True UnhealthyPods: 1 unhealthy pod(s): "
                + "Evicted=1 (idle ones are replaced, allocated ones left to their allocation); the hostPort range has "
                + "no free port for the pods the pool wants: widen the range (--runner-wireguard-host-port-start, "
                + "--runner-wireguard-host-port-end) or free the ports other pods hold");
    }

    @Test
    void theObjectShowsSpecStatusAndConditions() {
        PoolViews v = new PoolViews("25%");
        Map<String, Object> o = v.object(pool(AMD), NOW);
        assertThat(o).containsEntry("apiVersion", "playpen.unbounded-cloud.io/v1alpha1").containsEntry("kind", "Pool");
        assertThat(o.get("metadata")).isEqualTo(Map.of("name", "runner-amd64", "resourceVersion", "",
                "creationTimestamp", "2026-01-02T02:30:00.750Z",
                "labels", Map.of("playpen.unbounded-cloud.io/resource-type", "runner",
                        "playpen.unbounded-cloud.io/architecture", "amd64")));
        assertThat(o.get("spec")).isEqualTo(Map.of("resourceType", "runner", "architecture", "amd64", "minIdle", 2,
                "maxIdle", 4, "maxSurge", "25%", "templateHash", "h1", "image", "runner:1"));
        @SuppressWarnings("unchecked")
        Map<String, Object> status = (Map<String, Object>) o.get("status");
        assertThat(status).containsEntry("desired", 2).containsEntry("ready", 2).containsEntry("idle", 2)
                .containsEntry("allocated", 1).containsEntry("stale", 0).containsEntry("starting", 0)
                .containsEntry("unhealthy", 0).containsEntry("allocationsPerSecond", 0.26)
                .containsEntry("timeToReadySeconds", 12.35)
                .doesNotContainKeys("unhealthyIdle", "unhealthyAllocated", "backoff");
        assertThat(status.get("conditions")).asList().hasSize(3).first().isEqualTo(Map.of("type", "Ready",
                "status", "True", "lastTransitionTime", "2026-01-02T04:00:00Z", "reason", "Full",
                "message", "2 of 2 idle pods ready"));

        PoolStatus bad = degraded(with(pool(CP), 0, 0, 0, true), 3, Map.of("b", 1, "a", 1), Map.of("c", 1),
                new PoolBackoff.View(2, Duration.ofSeconds(40), NOW.plusSeconds(30)), false);
        bad = new PoolStatus(bad.target(), true, 2, 2, 2, 0, 0, 0, 0, 3, 0, bad.unhealthyByReason(),
                bad.unhealthyAllocatedByReason(), "h2", "k3s:1", bad.backoff(), false, null, 0, null, 0, 0);
        Map<String, Object> c = v.object(bad, NOW);
        assertThat(c.get("metadata")).isEqualTo(Map.of("name", "control-plane-v1.33.0", "resourceVersion", "",
                "labels", Map.of("playpen.unbounded-cloud.io/resource-type", "controlPlane",
                        "playpen.unbounded-cloud.io/kubernetes-version", "v1.33.0")));
        assertThat(c.get("spec")).isEqualTo(Map.of("resourceType", "controlPlane", "kubernetesVersion", "v1.33.0",
                "minIdle", 2, "maxIdle", 2, "maxSurge", "25%", "templateHash", "h2", "image", "k3s:1"));
        @SuppressWarnings("unchecked")
        Map<String, Object> s = (Map<String, Object>) c.get("status");
        assertThat(s).containsEntry("unhealthyIdle", Map.of("a", 1, "b", 1))
                .containsEntry("unhealthyAllocated", Map.of("c", 1))
                .containsEntry("backoff", Map.of("failures", 2, "delaySeconds", 40L,
                        "nextCreateAt", "2026-01-02T04:00:30.750Z"))
                .containsEntry("allocationsPerSecond", 0.0).doesNotContainKey("timeToReadySeconds");
        assertThat(List.copyOf(s.keySet())).containsSubsequence("desired", "unhealthy", "unhealthyIdle",
                "unhealthyAllocated", "backoff", "allocationsPerSecond", "conditions");

        Map<String, Object> list = v.list(List.of(pool(AMD), bad), NOW);
        assertThat(list).containsEntry("kind", "PoolList").containsEntry("metadata", Map.of("resourceVersion", ""));
        assertThat(list.get("items")).asList().hasSize(2).first().isEqualTo(v.object(pool(AMD), NOW));
    }

    @Test
    void aConditionsTransitionTimeMovesOnlyWhenItsStatusDoes() {
        PoolViews v = new PoolViews("1");
        PoolStatus full = pool(AMD);
        PoolStatus shortOf = with(full, 1, 0, 0, true);
        assertThat(readyTransition(v, full, NOW)).isEqualTo("2026-01-02T04:00:00Z");
        assertThat(readyTransition(v, full, NOW.plusSeconds(60))).isEqualTo("2026-01-02T04:00:00Z");
        // another pool's condition has its own time
        assertThat(readyTransition(v, pool(PoolTarget.runner("arm64")), NOW.plusSeconds(30)))
                .isEqualTo("2026-01-02T04:00:30Z");
        assertThat(readyTransition(v, shortOf, NOW.plusSeconds(120))).isEqualTo("2026-01-02T04:02:00Z");
        assertThat(readyTransition(v, shortOf, NOW.plusSeconds(180))).isEqualTo("2026-01-02T04:02:00Z");
        // back to True: a new transition, not the first one remembered
        assertThat(readyTransition(v, full, NOW.plusSeconds(240))).isEqualTo("2026-01-02T04:04:00Z");
        assertThat(readyTransition(v, shortOf, NOW.plusSeconds(300))).isEqualTo("2026-01-02T04:05:00Z");
    }

    @SuppressWarnings("unchecked")
    private static String readyTransition(PoolViews v, PoolStatus p, Instant at) {
        Map<String, Object> status = (Map<String, Object>) v.object(p, at).get("status");
        return (String) ((List<Map<String, Object>>) status.get("conditions")).get(0).get("lastTransitionTime");
    }

    @Test
    void theQuerysOptionsAndTheirErrors() {
        PoolViews.Query q = PoolViews.parseQuery(null, "", null);
        assertThat(q.table()).isFalse();
        assertThat(q.tableVersion()).isNull();
        assertThat(q.includeObject()).isEqualTo("Metadata");
        assertThat(q.fieldTerms()).isEmpty();

        PoolViews.Query t = PoolViews.parseQuery(null, "fieldSelector=metadata.name!%3Dx,%20metadata.name"
                + "%3D%3Dy,metadata.name%3Dz&includeObject=Object&labelSelector=a%3Db", TABLE);
        assertThat(PoolViews.parseQuery("runner-amd64", "", TABLE).name()).isEqualTo("runner-amd64");
        assertThat(t.table()).isTrue();
        assertThat(t.tableVersion()).isEqualTo("v1");
        assertThat(t.includeObject()).isEqualTo("Object");
        assertThat(t.fieldTerms()).extracting(a -> String.join(" ", a)).containsExactly("metadata.name != x",
                "metadata.name == y", "metadata.name = z");

        for (String watch : List.of("watch=true", "watch=1")) {
            assertThatThrownBy(() -> PoolViews.parseQuery(null, watch, null))
                    .isInstanceOf(UnsupportedOperationException.class).hasMessage(PoolViews.WATCH_UNSUPPORTED);
        }
        assertThat(PoolViews.parseQuery(null, "watch=false", null).name()).isNull();
        assertThatThrownBy(() -> PoolViews.parseQuery(null, "fieldSelector=metadata.name", null))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("invalid fieldSelector: \"metadata.name\": "
                        + "each term must be key=value, key==value or key!=value");
        assertThatThrownBy(() -> PoolViews.parseQuery(null, "fieldSelector=status.ready%3D1", null))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("field label not supported: "
                        + "\"status.ready\" (pools support metadata.name only)");
        assertThatThrownBy(() -> PoolViews.parseQuery(null, "labelSelector=a%20in", null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("invalid labelSelector: ");
        assertThatThrownBy(() -> PoolViews.parseQuery(null, "includeObject=All", null))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("invalid value for includeObject: \"All\": "
                        + "must be None, Metadata or Object");
        assertThat(PoolViews.parseQuery(null, "includeObject=None", null).includeObject()).isEqualTo("None");
    }

    @Test
    void aReadSelectsByNameLabelsAndFields() {
        List<PoolStatus> pools = List.of(pool(AMD), pool(PoolTarget.runner("arm64")), pool(CP));
        assertThat(names(pools, PoolViews.parseQuery(null, "", null))).containsExactly("runner-amd64",
                "runner-arm64", "control-plane-v1.33.0");
        assertThat(names(pools, PoolViews.parseQuery("runner-arm64", "", null))).containsExactly("runner-arm64");
        assertThat(names(pools, PoolViews.parseQuery(null,
                "labelSelector=playpen.unbounded-cloud.io/resource-type%3Drunner", null)))
                .containsExactly("runner-amd64", "runner-arm64");
        assertThat(names(pools, PoolViews.parseQuery(null,
                "labelSelector=playpen.unbounded-cloud.io/kubernetes-version%3Dv1.33.0", null)))
                .containsExactly("control-plane-v1.33.0");
        assertThat(names(pools, PoolViews.parseQuery(null,
                "labelSelector=playpen.unbounded-cloud.io/architecture%3Damd64", null))).containsExactly("runner-amd64");
        assertThat(names(pools, PoolViews.parseQuery(null, "fieldSelector=metadata.name%3Drunner-amd64", null)))
                .containsExactly("runner-amd64");
        assertThat(names(pools, PoolViews.parseQuery(null, "fieldSelector=metadata.name!%3Drunner-amd64", null)))
                .containsExactly("runner-arm64", "control-plane-v1.33.0");
        assertThat(names(pools, PoolViews.parseQuery(null, "fieldSelector=metadata.name!%3Drunner-amd64,"
                + "metadata.name!%3Drunner-arm64", null))).containsExactly("control-plane-v1.33.0");
    }

    private static List<String> names(List<PoolStatus> pools, PoolViews.Query q) {
        return PoolViews.select(pools, q).stream().map(PoolStatus::name).toList();
    }

    @Test
    void theTableHasACellPerColumnAndTheObjectAsAsked() {
        PoolViews v = new PoolViews("1");
        PoolStatus young = new PoolStatus(CP, true, 1, 1, 1, 0, 1, 0, 0, 0, 1, Map.of(), Map.of(), "h2", "k3s:1",
                PoolBackoff.View.NONE, false, null, 0, null, 0, 0);
        Map<String, Object> t = v.table(List.of(pool(AMD), young), PoolViews.parseQuery(null, "", TABLE), NOW);
        assertThat(t).containsEntry("kind", "Table").containsEntry("apiVersion", "meta.k8s.io/v1")
                .containsEntry("metadata", Map.of("resourceVersion", ""));
        assertThat(t.get("columnDefinitions")).asList().hasSize(12);
        assertThat(PoolViews.COLUMNS).extracting(c -> c.get("name") + "/" + c.get("priority")).containsExactly(
                "Name/0", "Type/0", "Arch/Version/0", "Desired/0", "Ready/0", "Idle/0", "Allocated/0", "Stale/0",
                "Unhealthy/0", "Age/0", "Template/1", "Image/1");
        assertThat(PoolViews.COLUMNS.get(0)).containsEntry("type", "string").containsEntry("format", "name")
                .containsKey("description");
        assertThat(PoolViews.COLUMNS.get(3)).containsEntry("type", "integer").containsEntry("format", "");
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> rows = (List<Map<String, Object>>) t.get("rows");
        assertThat(rows.get(0).get("cells")).isEqualTo(List.of("runner-amd64", "runner", "amd64", 2, 2, 2, 1, 0, 0,
                "90m", "h1", "runner:1"));
        assertThat(rows.get(1).get("cells")).isEqualTo(List.of("control-plane-v1.33.0", "controlPlane", "v1.33.0",
                1, 0, 1, 0, 0, 0, "<none>", "h2", "k3s:1"));
        // Metadata (the default): the object's metadata as a PartialObjectMetadata
        assertThat(rows.get(0).get("object")).isEqualTo(Map.of("kind", "PartialObjectMetadata", "apiVersion",
                "meta.k8s.io/v1", "metadata", v.object(pool(AMD), NOW).get("metadata")));
        Map<String, Object> whole = v.table(List.of(pool(AMD)), PoolViews.parseQuery(null, "includeObject=Object",
                TABLE), NOW);
        assertThat(((List<?>) whole.get("rows")).get(0)).isEqualTo(Map.of("cells",
                rows.get(0).get("cells"), "object", v.object(pool(AMD), NOW)));
        Map<String, Object> none = v.table(List.of(pool(AMD)), PoolViews.parseQuery(null, "includeObject=None",
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io"), NOW);
        assertThat(none).containsEntry("apiVersion", "meta.k8s.io/v1beta1");
        assertThat(((List<?>) none.get("rows")).get(0)).isEqualTo(Map.of("cells", rows.get(0).get("cells")));
    }
}
