package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PodTemplates;

/**
 * A --runner-label-selector that the runner pods this operator creates do not match is taken, as the Go operator
 * takes it, but said at start: those pods fill the pool and show as ready and idle, yet none is ever handed out.
 */
class RunnerSelectorWarningTest {
    private static String warning(String... flags) {
        OperatorConfig config = OperatorConfig.parse(flags);
        return OperatorApp.runnerSelectorWarning(config, new PodTemplates(config, Map.of()));
    }

    @Test
    void aSelectorThePoolsRunnersDoNotMatchIsWarnedOfNamingTheFlag() {
        assertThat(warning("--runner-label-selector=app=playpen-runner"))
                .isEqualTo("--runner-label-selector=app=playpen-runner does not match the amd64 and arm64 runner pods"
                        + " this operator creates (labels app.kubernetes.io/name=playpen-runner,"
                        + " app.kubernetes.io/component=runner, ...): they fill the pools and count as ready and idle,"
                        + " but none is handed out, so every alloc of such a runner is answered 503; give a selector"
                        + " they match, such as the default app.kubernetes.io/name=playpen-runner");
    }

    @Test
    void onlyThePoolsThatKeepRunnersAreNamed() {
        assertThat(warning("--runner-label-selector=playpen.unbounded-cloud.io/architecture=amd64",
                "--runner-arm64-count=0")).as("amd64 only, and no arm64 pool").isNull();
        assertThat(warning("--runner-label-selector=playpen.unbounded-cloud.io/architecture=amd64"))
                .startsWith("--runner-label-selector=playpen.unbounded-cloud.io/architecture=amd64 does not match"
                        + " the arm64 runner pods");
    }

    @Test
    void theDefaultAndSelectorsTheRunnersMatchAreNotWarnedOf() {
        assertThat(warning()).isNull();
        assertThat(warning("--runner-label-selector=app.kubernetes.io/name=playpen-runner,app.kubernetes.io/component")).isNull();
        assertThat(warning("--runner-label-selector=app=playpen-runner", "--runner-amd64-count=0",
                "--runner-arm64-count=0")).as("no runner pool").isNull();
    }
}
