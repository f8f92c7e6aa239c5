package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.camel.OperatorApp;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.support.OperatorHarness;

/**
 * The playground's stand-in aggregator learns that kubectl left a watch only when it next writes to it: a watch
 * streamed through is bounded, so one kubectl abandoned frees the operator's watch and the user's slot within the
 * bound, not at the watch's next event or after 30 to 60 minutes.
 */
class AggregatorShimWatchBoundTest {
    DevMode dev;

    @AfterEach
    void stop() {
        if (dev != null) {
            dev.close();
        }
    }

    static int openWatches(OperatorApp app) throws Exception {
        var m = OperatorApp.class.getDeclaredMethod("openWatches");
        m.setAccessible(true);
        return (int) m.invoke(app);
    }

    @Test
    void aWatchAbandonedThroughTheShimFreesItsOperatorSlot() throws Exception {
        assumeTrue(new File(AllocsKubectlRouteTest.KUBECTL).canExecute(), "kubectl not found");
        Path dir = Files.createTempDirectory(Path.of("target"), "shim-watch-");
        OperatorConfig config = OperatorConfig.parse(DevMode.devArgs(new String[] {"--dev", "--dev-dir=" + dir,
                "--control-plane-count=0", "--runner-amd64-count=1", "--runner-arm64-count=0"}));
        dev = DevMode.start(config, Map.of());
        dev.cluster().shim().watchBound(Duration.ofSeconds(2));
        OperatorApp app = dev.operator();

        Process watch = new ProcessBuilder(AllocsKubectlRouteTest.KUBECTL, "--kubeconfig",
                dir.resolve("kubeconfig").toString(), "get", "allocs", "-w")
                .redirectOutput(dir.resolve("watch.txt").toFile()).redirectError(dir.resolve("watch-err.txt").toFile())
                .start();
        try {
            OperatorHarness.awaitTrue(() -> {
                try {
                    return openWatches(app) == 1;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, Duration.ofSeconds(30), "kubectl get allocs -w watching on the operator");
        } finally {
            // kubectl goes (as at Ctrl-C); nothing about its allocations changes after that
            watch.destroy();
        }
        OperatorHarness.awaitTrue(() -> {
            try {
                return openWatches(app) == 0;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, Duration.ofSeconds(30), "the abandoned watch ended on the operator");
        assertThat(openWatches(app)).isZero();
    }

    @Test
    void aWatchsTimeoutIsCutToTheBoundAndNothingElseIsTouched() {
        assertThat(AggregatorShim.boundedWatch("watch=1", 300)).isEqualTo("watch=1&timeoutSeconds=300");
        assertThat(AggregatorShim.boundedWatch("watch=true&timeoutSeconds=540&allowWatchBookmarks=true", 300))
                .isEqualTo("watch=true&timeoutSeconds=300&allowWatchBookmarks=true");
        assertThat(AggregatorShim.boundedWatch("watch=1&timeoutSeconds=0", 300)).isEqualTo("watch=1&timeoutSeconds=300");
        assertThat(AggregatorShim.boundedWatch("watch=1&timeoutSeconds=60", 300)).isEqualTo("watch=1&timeoutSeconds=60");
        assertThat(AggregatorShim.boundedWatch("watch=1&timeoutSeconds=x", 300)).as("the operator's 400")
                .isEqualTo("watch=1&timeoutSeconds=x");
        assertThat(AggregatorShim.boundedWatch("watch=false&limit=500", 300)).isEqualTo("watch=false&limit=500");
        assertThat(AggregatorShim.boundedWatch("limit=500", 300)).isEqualTo("limit=500");
        assertThat(AggregatorShim.boundedWatch(null, 300)).isNull();
    }
}
