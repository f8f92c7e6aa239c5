package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.support.OperatorHarness;

/**
 * The playground says it is ready once every pool it asked for has a pod waiting (DevMode waits for
 * {@link DevCluster#poolsWarm}): also for a control-plane version written with a '+', whose pods carry the version
 * label with a '-' (labels cannot hold a '+').
 */
class DevClusterPoolsWarmTest {
    @TempDir
    Path tmp;

    @Test
    void aControlPlaneVersionWrittenWithAPlusIsWarmOnceItsPodRuns() throws Exception {
        OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=0", "--runner-arm64-count=0",
                "--control-plane-count=1", "--control-plane-versions=v1.33.0+k3s1");
        try (DevCluster cluster = DevCluster.start(DevCluster.Options.fromConfig(config).devDir(tmp.resolve("dev"))
                .noOperatorInProcess().moreReplicas(List.of()).podReadyDelay(Duration.ofMillis(20)))) {
            List<String> versions = config.controlPlaneVersions();
            assertThat(cluster.poolsWarm(0, 0, 1, versions)).as("no pod yet").isFalse();
            Pod pod = new PoolPlanner(config, new PodTemplates(config, Map.of()))
                    .podFor(PoolTarget.controlPlane("v1.33.0+k3s1"), 16443);
            String name = pod.getMetadata().getName();
            cluster.client().pods().inNamespace("playpen").resource(pod).create();
            OperatorHarness.awaitTrue(() -> {
                Pod p = cluster.client().pods().inNamespace("playpen").withName(name).get();
                return p != null && p.getStatus() != null && "Running".equals(p.getStatus().getPhase());
            }, Duration.ofSeconds(60), name + " running");
            assertThat(cluster.poolsWarm(0, 0, 1, versions)).as("its one control plane waits in the pool").isTrue();
        }
    }
}
