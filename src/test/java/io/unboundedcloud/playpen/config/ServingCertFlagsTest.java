package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.tls.CertificateRenewal;
import io.unboundedcloud.playpen.tls.Pki;

/** The --serving-cert-* flags: defaults, parsing, bad values, and where the renewal point falls. */
class ServingCertFlagsTest {

    @Test
    void defaultsAreOneYearRenewedAfterTwoThirdsCheckedEvery10s() {
        CertificateRenewal r = OperatorConfig.parse().servingCertRenewal();
        assertThat(r.validity()).isEqualTo(Duration.ofDays(365));
        assertThat(r.renewFraction()).isEqualTo(0.667);
        assertThat(r.checkInterval()).isEqualTo(Duration.ofSeconds(10));
        assertThat(r.publishGrace()).isEqualTo(Duration.ofSeconds(5));
    }

    @Test
    void flagsAreParsed() {
        CertificateRenewal r = OperatorConfig.parse("--serving-cert-validity=30s", "--serving-cert-renew-fraction=0.5",
                "--serving-cert-check-interval=200ms", "--serving-cert-publish-grace=0s").servingCertRenewal();
        assertThat(r).isEqualTo(new CertificateRenewal(Duration.ofSeconds(30), 0.5, Duration.ofMillis(200), Duration.ZERO));
    }

    @Test
    void theHelpShowsTheRenewFractionAsANumber() {
        // pflag's name for a float flag, and its default unquoted, as Go's --help shows one
        assertThat(OperatorConfig.usage()).containsPattern(
                "--serving-cert-renew-fraction float64 +share of its lifetime .*\\(default 0\\.667\\)\n");
    }

    @Test
    void badValuesNameTheFlag() {
        assertThatThrownBy(() -> OperatorConfig.parse("--serving-cert-renew-fraction=1")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("--serving-cert-renew-fraction");
        assertThatThrownBy(() -> OperatorConfig.parse("--serving-cert-renew-fraction=0")).hasMessageContaining("--serving-cert-renew-fraction");
        assertThatThrownBy(() -> OperatorConfig.parse("--serving-cert-renew-fraction=two-thirds")).hasMessageContaining("--serving-cert-renew-fraction");
        assertThatThrownBy(() -> OperatorConfig.parse("--serving-cert-renew-fraction=NaN")).hasMessageContaining("--serving-cert-renew-fraction");
        assertThatThrownBy(() -> OperatorConfig.parse("--serving-cert-validity=1s")).hasMessageContaining("--serving-cert-validity");
        assertThatThrownBy(() -> OperatorConfig.parse("--serving-cert-check-interval=0s")).hasMessageContaining("--serving-cert-check-interval");
        assertThatThrownBy(() -> OperatorConfig.parse("--serving-cert-publish-grace=-1s")).hasMessageContaining("--serving-cert-publish-grace");
    }

    @Test
    void renewalPointIsTheFractionOfTheLifetime() {
        Instant nb = Instant.parse("2026-01-01T00:00:00Z");
        var cert = Pki.selfSigned(Pki.Subject.cn("x"), Pki.Usage.SERVER, nb, Duration.ofDays(300)).certificate();
        assertThat(new CertificateRenewal(Duration.ofDays(300), 2.0 / 3, Duration.ofSeconds(10), Duration.ZERO).renewAt(cert))
                .isEqualTo(nb.plus(Duration.ofDays(200)));
    }
}
