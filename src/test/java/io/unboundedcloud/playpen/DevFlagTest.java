package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.unboundedcloud.playpen.config.OperatorConfig;

/**
 * The playground's loopback defaults apply whenever the flags start the playground: however --dev is spelled (the
 * flag parser takes Go's boolean words and a single dash), and never when the flags do not start it.
 */
class DevFlagTest {
    @ParameterizedTest
    @ValueSource(strings = {"--dev", "--dev=true", "-dev", "--dev=1", "--dev=True", "--dev=t", "-dev=TRUE"})
    void everySpellingOfDevListensOnLoopbackOnly(String flag) throws Exception {
        OperatorConfig config = OperatorConfig.parse(Map.of(), Main.effectiveArgs(new String[] {flag}));

        assertThat(config.dev()).isTrue();
        assertThat(config.listenHost()).as("the operator's HTTPS port").isEqualTo("127.0.0.1");
        assertThat(config.managementHost()).as("the management port").isEqualTo("127.0.0.1");
        assertThat(config.auditLogPath()).as("the audit log goes to the dev dir").endsWith("audit.log");
    }

    @ParameterizedTest
    @ValueSource(strings = {"--dev=false", "--dev=0"})
    void aDevFlagThatSaysNoChangesNothing(String last) throws Exception {
        String[] args = {"--dev", last};

        assertThat(Main.effectiveArgs(args)).containsExactly(args);
        assertThat(OperatorConfig.parse(Map.of(), Main.effectiveArgs(args)).dev()).isFalse();
    }
}
