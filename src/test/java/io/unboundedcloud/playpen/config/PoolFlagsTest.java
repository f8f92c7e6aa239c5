package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import org.junit.jupiter.api.Test;

/** The --pool-* flags: defaults, the surge's two forms, and a one-line error naming the flag for bad values. */
class PoolFlagsTest {
    @Test
    void defaults() {
        PoolPolicy p = OperatorConfig.parse().pools();
        assertThat(p).isEqualTo(PoolPolicy.DEFAULTS);
        assertThat(p.readyTimeout()).isEqualTo(Duration.ofMinutes(10));
        assertThat(p.nodeNotReadyGrace()).isEqualTo(Duration.ofMinutes(2));
        assertThat(p.demandBuffer()).isFalse();
        assertThat(OperatorConfig.parse().devImageFaults()).isEmpty();
    }

    @Test
    void surgeIsANumberOrAPercentageRoundedUp() {
        PoolPolicy pct = OperatorConfig.parse("--pool-max-surge=25%").pools();
        assertThat(pct.surge(0)).isZero();
        assertThat(pct.surge(1)).isEqualTo(1);
        assertThat(pct.surge(4)).isEqualTo(1);
        assertThat(pct.surge(5)).isEqualTo(2);
        assertThat(OperatorConfig.parse("--pool-max-surge=3").pools().surge(100)).isEqualTo(3);
        assertThat(OperatorConfig.parse("--pool-max-surge=0").pools().surge(10)).isZero();
        assertThat(OperatorConfig.parse("--pool-max-surge=100%").pools().surge(7)).isEqualTo(7);
    }

    @Test
    void badValuesNameTheFlag() {
        assertThatThrownBy(() -> OperatorConfig.parse("--pool-max-surge=lots")).isInstanceOf(ConfigException.class)
                .hasMessage("invalid value \"lots\" for flag --pool-max-surge: must be a number of pods (e.g. 1) or a "
                        + "percentage of the desired count up to 1000% (e.g. 25%)");
        assertThatThrownBy(() -> OperatorConfig.parse("--pool-max-surge=5000%")).hasMessageContaining("--pool-max-surge");
        assertThatThrownBy(() -> OperatorConfig.parse("--pool-max-surge=-1")).hasMessageContaining("--pool-max-surge");
        assertThatThrownBy(() -> OperatorConfig.parse("--pool-ready-timeout=-5s"))
                .hasMessageContaining("--pool-ready-timeout").hasMessageContaining("must not be negative");
        assertThatThrownBy(() -> OperatorConfig.parse("--pool-backoff-base=0")).hasMessageContaining("--pool-backoff-base");
        assertThatThrownBy(() -> OperatorConfig.parse("--pool-backoff-base=1m", "--pool-backoff-max=30s"))
                .hasMessage("invalid value \"30s\" for flag --pool-backoff-max: must not be shorter than --pool-backoff-base");
        assertThatThrownBy(() -> OperatorConfig.parse("--runner-amd64-count=5", "--pool-max-idle=3"))
                .hasMessageContaining("--pool-max-idle").hasMessageContaining("at least the largest count flag (5)");
        assertThat(OperatorConfig.parse("--runner-amd64-count=5", "--pool-max-idle=5").pools().demandBuffer()).isTrue();
    }

    @Test
    void theLimitsThemselvesAreAccepted() {
        PoolPolicy same = OperatorConfig.parse("--pool-backoff-base=1m", "--pool-backoff-max=1m").pools();
        assertThat(same.backoffBase()).isEqualTo(Duration.ofMinutes(1)).isEqualTo(same.backoffMax());
        assertThat(OperatorConfig.parse("--pool-max-surge=1000%").pools().surge(3)).isEqualTo(30);
        assertThatThrownBy(() -> OperatorConfig.parse("--pool-max-surge=1001%")).hasMessageContaining("up to 1000%");
    }
}
