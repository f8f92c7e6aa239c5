package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A pod that cannot be described is answered with 503 and the configured Retry-After, naming what is missing: no
 * node, no external IP, no hostPort; and an allocation whose expiry cannot be known shows none.
 */
class AllocResponsesUnavailableTest {
    private static final OperatorConfig CONFIG = OperatorConfig.parse();
    private static final AllocResponses RESPONSES = new AllocResponses(CONFIG.network(), CONFIG.redfishBaseUrl(), 7,
            new TtlPolicy(Duration.ofHours(1)));

    private static ApiException unavailable(Pod pod, String ip) {
        ApiException e = catchThrowableOfType(ApiException.class, () -> RESPONSES.build(pod, ip));
        assertThat(e).as("an ApiException").isNotNull();
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.headers()).containsEntry("Retry-After", "7");
        return e;
    }

    private static Pod runnerOn(String node) {
        return AllocResponsesGoldenTest.runner("amd64", 51820, node, true);
    }

    private static Pod controlPlaneOn(String node) {
        return new PodBuilder(AllocResponsesGoldenTest.controlPlanePod()).editSpec().withNodeName(node).endSpec().build();
    }

    private static Pod withHostPort(Pod pod, int hostPort) {
        Pod copy = new PodBuilder(pod).build();
        for (Container c : copy.getSpec().getContainers()) {
            if (c.getPorts() != null) {
                for (ContainerPort p : c.getPorts()) {
                    p.setHostPort(hostPort);
                }
            }
        }
        return copy;
    }

    @Test
    void aPodWithoutANodeIsUnavailable() {
        assertThat(unavailable(runnerOn(null), AllocResponsesGoldenTest.IP)).hasMessage("runner pod is not scheduled" + AllocResponses.STANDS_ADVICE);
        assertThat(unavailable(controlPlaneOn(""), AllocResponsesGoldenTest.IP)).hasMessage("runner pod is not scheduled" + AllocResponses.STANDS_ADVICE);
    }

    @Test
    void aPodOnANodeWithoutExternalIpIsUnavailable() {
        Pod runner = runnerOn("node-a");
        assertThat(unavailable(runner, "")).hasMessage("runner pod " + runner.getMetadata().getNamespace() + "/"
                + runner.getMetadata().getName() + " is on node node-a with no ExternalIP" + AllocResponses.STANDS_ADVICE);
        Pod cp = controlPlaneOn("node-b");
        assertThat(unavailable(cp, null)).hasMessageEndingWith(" is on node node-b with no ExternalIP" + AllocResponses.STANDS_ADVICE);
    }

    @Test
    void aPodWithoutAHostPortIsUnavailable() {
        Pod runner = withHostPort(runnerOn("node-a"), 0);
        assertThat(unavailable(runner, AllocResponsesGoldenTest.IP)).hasMessageEndingWith(" has no WireGuard hostPort" + AllocResponses.STANDS_ADVICE);
        Pod cp = withHostPort(controlPlaneOn("node-a"), 0);
        assertThat(unavailable(cp, AllocResponsesGoldenTest.IP)).hasMessageEndingWith(" has no API server hostPort"
                + AllocResponses.STANDS_ADVICE);
        // one is enough
        assertThat(RESPONSES.build(withHostPort(runnerOn("node-a"), 1), AllocResponsesGoldenTest.IP).endpoint().wireGuardUDPPort())
                .isEqualTo(1);
    }

    /**
     * The Go operator's reason comes first, word for word (clients may match on it), then what to do: the claim
     * stands for the key, so the same request sent again answers it once the pod can be described, and a dealloc
     * of the key gives it up.
     */
    @Test
    void anAnswerThatCannotBeBuiltSaysTheAllocationStandsAndWhatToDo() {
        Pod runner = runnerOn("node-a");
        String reason = "runner pod " + runner.getMetadata().getNamespace() + "/" + runner.getMetadata().getName()
                + " is on node node-a with no ExternalIP";
        assertThat(unavailable(runner, "")).hasMessage(reason + AllocResponses.STANDS_ADVICE);
        assertThat(AllocResponses.STANDS_ADVICE).startsWith("; the allocation stands")
                .contains("send the same request again with the same idempotency key")
                .endsWith(", or release it with kubectl create --raw "
                        + "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs -f <file> (its idempotencyKey)");
        assertThat(unavailable(withHostPort(controlPlaneOn("node-a"), 0), AllocResponsesGoldenTest.IP))
                .hasMessageEndingWith(" has no API server hostPort" + AllocResponses.STANDS_ADVICE);
    }

    @Test
    void aClaimWithoutAClaimedAtShowsNoExpiry() {
        // with expiry on, a pod whose claim time is unknown counts as expired: its answer tells no expiry time
        Pod claimed = TestPods.claimed(runnerOn("node-a"), null);
        assertThat(new TtlPolicy(Duration.ofHours(1)).expiresAt(claimed)).contains(TtlPolicy.ALREADY_EXPIRED);
        assertThat(RESPONSES.build(claimed, AllocResponsesGoldenTest.IP).expiresAt()).isNull();
    }
}
