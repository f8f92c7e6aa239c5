package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.unboundedcloud.playpen.tls.Pki;

/** A backstop GET must never undo what the watch delivered after the GET started (kept current). */
class TrustBundleSourceTest {
    private static final Pki.Issued OLD_CA = ca("old-front-proxy-ca");
    private static final Pki.Issued NEW_CA = ca("new-front-proxy-ca");

    private static Pki.Issued ca(String cn) {
        return Pki.selfSigned(Pki.Subject.cn(cn), Pki.Usage.CA, Instant.now().minusSeconds(60), Duration.ofDays(1));
    }

    private static ConfigMap trust(Pki.Issued ca) {
        return new ConfigMapBuilder().withNewMetadata().withName("extension-apiserver-authentication")
                .withNamespace("kube-system").endMetadata()
                .addToData("requestheader-client-ca-file", ca.certificatePem())
                .addToData("requestheader-allowed-names", "[\"front-proxy-client\"]").build();
    }

    private static String caOf(TrustBundleSource source) {
        return source.get().cas().get(0).getSubjectX500Principal().getName();
    }

    @Test
    void aGetAnsweredAfterAWatchEventDoesNotBringBackTheOldBundle() {
        TrustBundleSource source = new TrustBundleSource(null, new ApiCallCounter());
        source.applyFromWatch(trust(OLD_CA));
        long atGetStart = source.watchEventsSoFar();
        source.applyFromWatch(trust(NEW_CA)); // rotated while the GET was in flight
        source.applyFromGet(trust(OLD_CA), atGetStart);
        assertThat(source.get().valid()).isTrue();
        assertThat(caOf(source)).isEqualTo("CN=new-front-proxy-ca");
    }

    @Test
    void aStaleNotFoundDoesNotDropABundleTheWatchHasJustAdded() {
        TrustBundleSource source = new TrustBundleSource(null, new ApiCallCounter());
        long atGetStart = source.watchEventsSoFar();
        source.applyFromWatch(trust(NEW_CA));
        source.applyFromGet(null, atGetStart);
        assertThat(source.get().valid()).isTrue();
        assertThat(caOf(source)).isEqualTo("CN=new-front-proxy-ca");
    }

    @Test
    void aStaleGetDoesNotRestoreABundleTheWatchSawDeleted() {
        TrustBundleSource source = new TrustBundleSource(null, new ApiCallCounter());
        source.applyFromWatch(trust(OLD_CA));
        long atGetStart = source.watchEventsSoFar();
        source.applyFromWatch(null); // deleted
        source.applyFromGet(trust(OLD_CA), atGetStart);
        assertThat(source.get().valid()).isFalse();
    }

    @Test
    void withoutWatchEventsInBetweenTheGetIsApplied() {
        TrustBundleSource source = new TrustBundleSource(null, new ApiCallCounter());
        source.applyFromWatch(trust(OLD_CA));
        source.applyFromGet(trust(NEW_CA), source.watchEventsSoFar());
        assertThat(caOf(source)).isEqualTo("CN=new-front-proxy-ca");
    }
}
