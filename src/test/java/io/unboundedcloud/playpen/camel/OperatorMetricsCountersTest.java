package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolHealth;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTarget;

/**
 * Each event the pools, the TTL, renewals and the waiting line report moves its own Prometheus series, by exactly
 * one, with the labels an alert would select on; the series are read the way Prometheus reads them (the scrape).
 */
class OperatorMetricsCountersTest {
    final OperatorMetrics metrics = new OperatorMetrics();

    /** Every sample of the scrape whose name starts with {@code prefix}: the sample line's name and labels, its value. */
    Map<String, Double> samples(String prefix) {
        Map<String, Double> out = new TreeMap<>();
        for (String line : metrics.scrape().split("\n")) {
            if (line.startsWith(prefix)) {
                int space = line.lastIndexOf(' ');
                out.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
            }
        }
        return out;
    }

    /**
     * playpen_pods counts each configured pool's idle and claimed pods, those of a version whose pods carry another
     * label than the flag's spelling too (v1.33.0+k3s1: the label holds v1.33.0-k3s1, '+' is no label character).
     */
    @Test
    void podGaugesCountThePodsOfEveryConfiguredVersion() {
        OperatorConfig config = OperatorConfig.parse("--control-plane-count=1",
                "--control-plane-versions=v1.33.0+k3s1,v1.34.1");
        PoolPlanner planner = new PoolPlanner(config, new PodTemplates(config, Map.of()));
        PoolTarget k3s = PoolTarget.controlPlane("v1.33.0+k3s1");
        Pod claimed = new PodBuilder(planner.podFor(k3s, 16444)).editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32)).endMetadata().build();
        List<Pod> pods = List.of(planner.podFor(k3s, 16443), claimed,
                planner.podFor(PoolTarget.controlPlane("v1.34.1"), 16445), planner.podFor(PoolTarget.runner("amd64"), 51820));
        metrics.bindPods(planner, () -> pods);

        assertThat(samples("playpen_pods{")).containsExactly(
                Map.entry("playpen_pods{resource_type=\"controlPlane\",state=\"claimed\",variant=\"v1.33.0+k3s1\"}", 1.0),
                Map.entry("playpen_pods{resource_type=\"controlPlane\",state=\"claimed\",variant=\"v1.34.1\"}", 0.0),
                Map.entry("playpen_pods{resource_type=\"controlPlane\",state=\"idle\",variant=\"v1.33.0+k3s1\"}", 1.0),
                Map.entry("playpen_pods{resource_type=\"controlPlane\",state=\"idle\",variant=\"v1.34.1\"}", 1.0),
                Map.entry("playpen_pods{resource_type=\"runner\",state=\"claimed\",variant=\"amd64\"}", 0.0),
                Map.entry("playpen_pods{resource_type=\"runner\",state=\"claimed\",variant=\"arm64\"}", 0.0),
                Map.entry("playpen_pods{resource_type=\"runner\",state=\"idle\",variant=\"amd64\"}", 1.0),
                Map.entry("playpen_pods{resource_type=\"runner\",state=\"idle\",variant=\"arm64\"}", 0.0));
    }

    /**
     * A pool no flag asks for any more (a removed control-plane version) drains: while it has pods it has the gauges
     * of a configured pool, so its drain can be watched, and none once its last pod is gone.
     */
    @Test
    void aDrainingPoolHasThePoolGaugesWhileItHasPods() {
        OperatorConfig before = OperatorConfig.parse("--control-plane-count=1",
                "--control-plane-versions=v1.33.0,v1.34.1");
        OperatorConfig config = OperatorConfig.parse("--control-plane-count=1", "--control-plane-versions=v1.34.1");
        PoolPlanner old = new PoolPlanner(before, new PodTemplates(before, Map.of()));
        PoolPlanner planner = new PoolPlanner(config, new PodTemplates(config, Map.of()));
        PoolTarget removed = PoolTarget.controlPlane("v1.33.0");
        Pod idle = old.podFor(removed, 16443);
        Pod claimed = new PodBuilder(old.podFor(removed, 16444)).editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32)).endMetadata().build();
        java.util.concurrent.atomic.AtomicReference<List<Pod>> pods = new java.util.concurrent.atomic.AtomicReference<>(
                List.of(idle, claimed, planner.podFor(PoolTarget.controlPlane("v1.34.1"), 16445)));
        metrics.bindPods(planner, pods::get);
        metrics.bindPools(planner, () -> planner.plan(pods.get(), java.util.Set.of()).statuses());

        Map<String, Double> seen = samples("playpen_");
        assertThat(seen).containsEntry(
                "playpen_pods{resource_type=\"controlPlane\",state=\"idle\",variant=\"v1.33.0\"}", 1.0)
                .containsEntry("playpen_pods{resource_type=\"controlPlane\",state=\"claimed\",variant=\"v1.33.0\"}",
                        1.0)
                .containsEntry("playpen_pool_desired_pods{resource_type=\"controlPlane\",variant=\"v1.33.0\"}", 0.0)
                .containsEntry("playpen_pool_starting_pods{resource_type=\"controlPlane\",variant=\"v1.33.0\"}", 1.0);
        assertThat(gauges(seen, "v1.33.0")).as("the draining pool's gauges").isNotEmpty()
                .isEqualTo(gauges(seen, "v1.34.1"));

        pods.set(List.of(planner.podFor(PoolTarget.controlPlane("v1.34.1"), 16445)));
        assertThat(gauges(samples("playpen_"), "v1.33.0")).as("once the pool's last pod is gone").isEmpty();
    }

    /** The gauges (not the counters) of a pool's variant, with the variant left out. */
    static java.util.Set<String> gauges(Map<String, Double> samples, String variant) {
        java.util.Set<String> out = new java.util.TreeSet<>();
        for (String name : samples.keySet()) {
            if (name.contains("variant=\"" + variant + "\"") && !name.contains("_total{")) {
                out.add(name.replace("variant=\"" + variant + "\"", "variant"));
            }
        }
        return out;
    }

    @Test
    void refusedCreatesCountOneEachByPool() {
        PoolTarget amd64 = PoolTarget.runner("amd64");
        metrics.createRefused(new PoolReconciler.CreateRefusal(amd64, 403, "exceeded quota", Duration.ofSeconds(1)));
        metrics.createRefused(new PoolReconciler.CreateRefusal(amd64, 422, "invalid", Duration.ofSeconds(2)));
        assertThat(samples("playpen_pool_create_refused_total{")).containsExactly(Map.entry(
                "playpen_pool_create_refused_total{resource_type=\"runner\",variant=\"amd64\"}", 2.0));
    }

    @Test
    void poolEventsCountOneEachUnderTheirOwnLabels() {
        PoolTarget amd64 = PoolTarget.runner("amd64");
        Pod pod = new Pod();
        metrics.created(pod);
        metrics.created(pod);
        metrics.deleted(new PoolPlan.Deletion(amd64, pod, PoolPlan.Why.STALE, null));
        metrics.deleted(new PoolPlan.Deletion(amd64, pod, PoolPlan.Why.UNHEALTHY, PoolHealth.Problem.NODE_GONE));
        metrics.deleted(new PoolPlan.Deletion(amd64, pod, PoolPlan.Why.UNHEALTHY, PoolHealth.Problem.NODE_GONE));
        metrics.exhausted(new PoolPlan.Exhaustion(amd64, new OperatorConfig.PortRange(51820, 51821), 3));
        metrics.expired(pod, Duration.ofSeconds(2));

        assertThat(samples("playpen_pool_created_pods_total")).containsExactly(Map.entry("playpen_pool_created_pods_total", 2.0));
        assertThat(samples("playpen_pool_deleted_pods_total")).containsExactly(
                Map.entry("playpen_pool_deleted_pods_total{reason=\"NodeGone\",resource_type=\"runner\",variant=\"amd64\"}", 2.0),
                Map.entry("playpen_pool_deleted_pods_total{reason=\"Stale\",resource_type=\"runner\",variant=\"amd64\"}", 1.0));
        assertThat(samples("playpen_host_port_range_exhausted_total"))
                .containsExactly(Map.entry("playpen_host_port_range_exhausted_total", 1.0));
        assertThat(samples("playpen_ttl_expirations_total")).containsExactly(Map.entry("playpen_ttl_expirations_total", 1.0));
    }

    @Test
    void passesCountTheirFailuresAndRenewalsAndWaitsTheirOutcome() {
        PoolReconciler.Result result = new PoolReconciler.Result(0, 0, List.of(), false);
        metrics.pass(result, 2_000_000, false);
        metrics.pass(result, 1_000_000, false);
        metrics.pass(result, 3_000_000, true);
        metrics.renewal("renewed", null);
        metrics.renewal("renewed", null);
        metrics.renewal("not-found", null);
        metrics.waited(null, Duration.ofMillis(1500), "served");
        metrics.waited(null, Duration.ofSeconds(30), "timeout");

        assertThat(samples("playpen_reconcile_runs_total")).containsExactly(Map.entry("playpen_reconcile_runs_total", 3.0));
        assertThat(samples("playpen_reconcile_errors_total")).containsExactly(Map.entry("playpen_reconcile_errors_total", 1.0));
        assertThat(samples("playpen_reconcile_duration_seconds_sum"))
                .containsExactly(Map.entry("playpen_reconcile_duration_seconds_sum", 0.006));
        assertThat(samples("playpen_renewals_total")).containsExactly(
                Map.entry("playpen_renewals_total{result=\"not-found\"}", 1.0),
                Map.entry("playpen_renewals_total{result=\"renewed\"}", 2.0));
        assertThat(samples("playpen_wait_duration_seconds_sum")).containsExactly(
                Map.entry("playpen_wait_duration_seconds_sum{outcome=\"served\"}", 1.5),
                Map.entry("playpen_wait_duration_seconds_sum{outcome=\"timeout\"}", 30.0));
    }
}
