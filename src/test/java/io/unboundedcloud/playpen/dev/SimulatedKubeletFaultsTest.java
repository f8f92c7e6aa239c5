package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;

/** --dev-image-faults: the simulated kubelet makes pods of a chosen image never ready, crash or be evicted. */
class SimulatedKubeletFaultsTest {
    @TempDir
    static Path tmp;
    static DevCluster cluster;

    @BeforeAll
    static void up() throws Exception {
        OperatorConfig config = OperatorConfig.parse("--dev-image-faults=example.com/never:1=never-ready,"
                + "example.com/crash:1=crash", "--dev-image-faults=example.com/evict:1=evict");
        cluster = DevCluster.start(DevCluster.Options.fromConfig(config).devDir(tmp.resolve("dev"))
                .noOperatorInProcess().moreReplicas(java.util.List.of()).podReadyDelay(Duration.ofMillis(20)));
    }

    @AfterAll
    static void down() {
        if (cluster != null) {
            cluster.close();
        }
    }

    static Pod create(String name, String image) {
        return cluster.client().pods().inNamespace("playpen").resource(new PodBuilder().withNewMetadata().withName(name)
                .addToLabels(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME)
                .addToLabels(PlaypenKeys.RESOURCE_TYPE, "runner").endMetadata()
                .withNewSpec().addNewContainer().withName("runner").withImage(image).endContainer().endSpec().build())
                .create();
    }

    static Pod await(String name, Predicate<Pod> condition, String what) throws Exception {
        Pod[] last = new Pod[1];
        OperatorHarness.awaitTrue(() -> {
            last[0] = cluster.client().pods().inNamespace("playpen").withName(name).get();
            return last[0] != null && condition.test(last[0]);
        }, Duration.ofSeconds(20), name + " " + what);
        return last[0];
    }

    static boolean readyCondition(Pod p, String status) {
        return p.getStatus() != null && p.getStatus().getConditions() != null && p.getStatus().getConditions().stream()
                .anyMatch(c -> "Ready".equals(c.getType()) && status.equals(c.getStatus()));
    }

    @Test
    void neverReadyRunsButIsNeverReadyAndPublishesNothing() throws Exception {
        create("playpen-runner-amd64-51820", "example.com/never:1");
        Pod p = await("playpen-runner-amd64-51820", x -> x.getStatus() != null
                && "Running".equals(x.getStatus().getPhase()), "running");
        assertThat(readyCondition(p, "False")).isTrue();
        assertThat(p.getStatus().getContainerStatuses().get(0).getReady()).isFalse();
        assertThat(p.getStatus().getContainerStatuses().get(0).getState().getRunning()).isNotNull();
        Map<String, String> ann = p.getMetadata().getAnnotations();
        assertThat(ann == null ? Map.<String, String>of() : ann).doesNotContainKey(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY);
    }

    @Test
    void crashLoopsWithARisingRestartCount() throws Exception {
        create("playpen-runner-amd64-51821", "example.com/crash:1");
        Pod p = await("playpen-runner-amd64-51821", x -> x.getStatus() != null
                && x.getStatus().getContainerStatuses() != null && !x.getStatus().getContainerStatuses().isEmpty(), "started");
        assertThat(p.getStatus().getContainerStatuses().get(0).getState().getWaiting().getReason())
                .isEqualTo("CrashLoopBackOff");
        assertThat(readyCondition(p, "False")).isTrue();
        await("playpen-runner-amd64-51821", x -> x.getStatus().getContainerStatuses().get(0).getRestartCount() >= 2,
                "restarted again");
    }

    @Test
    void evictedAfterRunningReady() throws Exception {
        String name = "playpen-runner-amd64-51822";
        // every state of the pod as a watch delivers it: the ready state lasts only EVICT_AFTER (3 s), which polling
        // could miss on a loaded machine
        List<Pod> states = new CopyOnWriteArrayList<>();
        try (Watch watch = cluster.client().pods().inNamespace("playpen").watch(new Watcher<Pod>() {
            @Override
            public void eventReceived(Action action, Pod pod) {
                if (name.equals(pod.getMetadata().getName())) {
                    states.add(pod);
                }
            }

            @Override
            public void onClose(WatcherException cause) {
            }
        })) {
            create(name, "example.com/evict:1");
            OperatorHarness.awaitTrue(() -> states.stream().anyMatch(SimulatedKubeletFaultsTest::failed),
                    Duration.ofSeconds(60), name + " evicted");
        }
        int readyAt = indexOf(states, x -> readyCondition(x, "True"));
        int evictedAt = indexOf(states, SimulatedKubeletFaultsTest::failed);
        assertThat(readyAt).as("ready before it was evicted").isBetween(0, evictedAt - 1);
        assertThat(states.get(readyAt).getMetadata().getAnnotations()).containsKey(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY);
        Pod evicted = states.get(evictedAt);
        assertThat(evicted.getStatus().getReason()).isEqualTo("Evicted");
        assertThat(evicted.getStatus().getContainerStatuses().get(0).getState().getTerminated()).isNotNull();
    }

    static boolean failed(Pod p) {
        return p.getStatus() != null && "Failed".equals(p.getStatus().getPhase());
    }

    static int indexOf(List<Pod> states, Predicate<Pod> which) {
        for (int i = 0; i < states.size(); i++) {
            if (which.test(states.get(i))) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void otherImagesStartAsBefore() throws Exception {
        create("playpen-runner-amd64-51823", "ghcr.io/azure/playpen:latest");
        Pod p = await("playpen-runner-amd64-51823", x -> readyCondition(x, "True"), "ready");
        assertThat(p.getStatus().getPhase()).isEqualTo("Running");
        Thread.sleep(SimulatedKubelet.EVICT_AFTER.toMillis() + 500);
        assertThat(cluster.client().pods().inNamespace("playpen").withName("playpen-runner-amd64-51823").get()
                .getStatus().getPhase()).isEqualTo("Running");
    }

    @Test
    void badFaultFlagsStopStartupWithTheFlagNamed() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> OperatorConfig.parse("--dev-image-faults=img=explode"))
                .hasMessageContaining("--dev-image-faults").hasMessageContaining("never-ready, crash or evict");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> OperatorConfig.parse("--dev-image-faults=noequals"))
                .hasMessageContaining("--dev-image-faults");
    }
}
