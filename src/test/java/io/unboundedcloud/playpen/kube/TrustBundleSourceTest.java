package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The front-proxy trust bundle as the API server has it: the watch applies each change at once, the backstop GET
 * reads it again, and a GET must never undo what the watch delivered after the GET started; a watch refused at
 * start keeps trying. A bundle that turns invalid, or whose CAs all stop being valid, is told to the listener with
 * its reason.
 */
class TrustBundleSourceTest {
    private static final String NAME = "extension-apiserver-authentication";
    private static final String ALLOWED = "[\"front-proxy-client\"]";
    private static final Duration SOON = Duration.ofSeconds(10);
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

    @Test
    void theWatchKeepsTheBundleCurrentAndARefreshReadsItAgain() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            // the simulated cluster starts with its own front-proxy bundle: this test starts without one
            cluster.client.configMaps().inNamespace(TrustBundleSource.NAMESPACE).withName(NAME).delete();
            ApiCallCounter calls = new ApiCallCounter();
            TrustBundleSource source = new TrustBundleSource(cluster.client, calls);
            List<String> told = new CopyOnWriteArrayList<>();
            source.onInvalid(told::add);
            assertThat(source.get().invalidReason()).isEqualTo("trust bundle not loaded yet");
            try {
                source.start();
                // nothing there yet: the start's GET says so, and the listener is told
                assertThat(calls.get(KubeApiCall.CONFIGMAPS_GET)).isEqualTo(1);
                String notFound = "ConfigMap kube-system/" + NAME + " not found";
                assertThat(source.get().valid()).isFalse();
                assertThat(source.get().invalidReason()).isEqualTo(notFound);
                assertThat(told).containsExactly(notFound);
                source.start();
                assertThat(calls.get(KubeApiCall.CONFIGMAPS_GET)).as("a second start reads nothing").isEqualTo(1);

                // created: the watch applies it without a GET
                cluster.setTrust(OLD_CA.certificatePem(), ALLOWED);
                OperatorHarness.awaitTrue(() -> source.get().valid(), SOON, "the created bundle applied");
                assertThat(caOf(source)).isEqualTo("CN=old-front-proxy-ca");
                assertThat(source.get().allowedNames()).containsExactly("front-proxy-client");
                assertThat(calls.get(KubeApiCall.CONFIGMAPS_GET)).isEqualTo(1);
                long loaded = source.get().generation();

                // the backstop reads it again: the same data keeps the same bundle
                assertThat(source.refresh()).isTrue();
                assertThat(calls.get(KubeApiCall.CONFIGMAPS_GET)).isEqualTo(2);
                assertThat(source.get().generation()).isEqualTo(loaded);

                // rotated: the new CA replaces the old one
                cluster.setTrust(NEW_CA.certificatePem(), ALLOWED);
                OperatorHarness.awaitTrue(() -> source.get().valid() && caOf(source).equals("CN=new-front-proxy-ca"),
                        SOON, "the rotated bundle applied");
                assertThat(source.get().generation()).isGreaterThan(loaded);

                // broken: invalid, with the reason told
                cluster.setTrust("not a certificate", ALLOWED);
                OperatorHarness.awaitTrue(() -> !source.get().valid(), SOON, "the broken bundle applied");
                assertThat(source.get().invalidReason())
                        .isEqualTo("requestheader-client-ca-file holds no certificate");
                assertThat(source.refresh()).isFalse();
                // a broken bundle read again is judged (and told) again: it is never taken for the valid one
                assertThat(told).containsExactly(notFound, "requestheader-client-ca-file holds no certificate",
                        "requestheader-client-ca-file holds no certificate");

                // deleted: invalid again
                cluster.setTrust(NEW_CA.certificatePem(), ALLOWED);
                OperatorHarness.awaitTrue(() -> source.get().valid(), SOON, "the mended bundle applied");
                cluster.client.configMaps().inNamespace(TrustBundleSource.NAMESPACE).withName(NAME).delete();
                OperatorHarness.awaitTrue(() -> notFound.equals(source.get().invalidReason()), SOON,
                        "the delete applied");
            } finally {
                source.close();
                source.close();
            }
        }
    }

    /** RBAC not applied yet, or the API server overloaded at start: the watch keeps trying (fabric8's would stop). */
    @Test
    void aWatchWhoseFirstListIsRefusedKeepsTryingAndThenFollowsChanges() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.setTrust(OLD_CA.certificatePem(), ALLOWED);
            String list = "GET /api/v1/namespaces/kube-system/configmaps";
            cluster.forbidden = key -> key.equals(list) || key.equals("GET WATCH /api/v1/namespaces/kube-system/configmaps");
            TrustBundleSource source = new TrustBundleSource(cluster.client, new ApiCallCounter());
            try {
                source.start();
                assertThat(caOf(source)).as("the start's own GET is not refused").isEqualTo("CN=old-front-proxy-ca");
                OperatorHarness.awaitTrue(() -> cluster.requestCount(list::equals) >= 1, SOON, "the watch's LIST refused");
                cluster.forbidden = key -> false;

                // a rotation reaches the source through the watch alone (no refresh is called here)
                cluster.setTrust(NEW_CA.certificatePem(), ALLOWED);
                OperatorHarness.awaitTrue(() -> caOf(source).equals("CN=new-front-proxy-ca"), Duration.ofSeconds(30),
                        "the rotated bundle applied by the watch");
            } finally {
                source.close();
            }
        }
    }

    @Test
    void aGetThatFailsKeepsTheBundleAndSaysWhetherItIsValid() {
        TestCluster cluster = TestCluster.start();
        TrustBundleSource source = new TrustBundleSource(cluster.client, new ApiCallCounter());
        source.applyFromWatch(trust(OLD_CA));
        cluster.close(); // the API server is gone: the GET fails
        assertThat(source.refresh()).isTrue();
        assertThat(caOf(source)).isEqualTo("CN=old-front-proxy-ca");
        source.applyFromWatch(null);
        assertThat(source.refresh()).isFalse();
    }

    /**
     * A bundle whose CAs all expire while it is loaded refuses every request from then on: the listener (the
     * TrustBundleInvalid Event) is told once, at the first refresh after, not at every refresh; a bundle loaded with
     * no CA valid now is told at once; a new bundle valid now is told again when it expires in turn.
     */
    @Test
    void aBundleWhoseCasAllExpireIsToldOnceWhenItStopsBeingValidNow() {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.now());
            cluster.setTrust(OLD_CA.certificatePem(), ALLOWED);
            TrustBundleSource source = new TrustBundleSource(cluster.client, new ApiCallCounter(), clock);
            List<String> told = new CopyOnWriteArrayList<>();
            source.onInvalid(told::add);
            String noneValidNow = "none of its CAs is valid now (all expired or not yet valid)";

            assertThat(source.refresh()).isTrue();
            assertThat(told).isEmpty();

            Instant afterOld = OLD_CA.certificate().getNotAfter().toInstant().plusSeconds(1);
            clock.now = afterOld;
            source.refresh();
            assertThat(source.get().validAt(clock.instant())).isFalse();
            assertThat(told).as("told when its last CA expired").containsExactly(noneValidNow);
            source.refresh();
            source.refresh();
            assertThat(told).as("told once, not at every refresh").containsExactly(noneValidNow);

            // a CA valid at the moved clock is rotated in: valid, nothing told; once it expires too, told again
            Pki.Issued later = Pki.selfSigned(Pki.Subject.cn("later-front-proxy-ca"), Pki.Usage.CA,
                    afterOld.minusSeconds(60), Duration.ofDays(1));
            cluster.setTrust(later.certificatePem(), ALLOWED);
            source.refresh();
            assertThat(source.get().validAt(clock.instant())).isTrue();
            assertThat(told).containsExactly(noneValidNow);
            clock.now = later.certificate().getNotAfter().toInstant().plusSeconds(1);
            source.refresh();
            source.refresh();
            assertThat(told).containsExactly(noneValidNow, noneValidNow);

            // a bundle loaded with no CA valid now is told when it is loaded
            TrustBundleSource fresh = new TrustBundleSource(null, new ApiCallCounter(), clock);
            List<String> freshTold = new CopyOnWriteArrayList<>();
            fresh.onInvalid(freshTold::add);
            fresh.applyFromWatch(trust(OLD_CA));
            assertThat(freshTold).containsExactly(noneValidNow);
            fresh.applyFromWatch(trust(OLD_CA));
            assertThat(freshTold).containsExactly(noneValidNow);
        }
    }

    /**
     * A refresh says whether the bundle can vouch for anyone now, as readiness and the trust-bundle metric judge it:
     * a bundle whose CAs have all expired is not valid, though it parsed.
     */
    @Test
    void aRefreshOfABundleWhoseCasAllExpiredReportsItNotValid() {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.now());
            cluster.setTrust(OLD_CA.certificatePem(), ALLOWED);
            TrustBundleSource source = new TrustBundleSource(cluster.client, new ApiCallCounter(), clock);
            assertThat(source.refresh()).isTrue();
            clock.now = OLD_CA.certificate().getNotAfter().toInstant().plusSeconds(1);
            assertThat(source.refresh()).as("every CA of the bundle has expired").isFalse();
        }
    }

    /** The check that rides along (the refused certificates' log count) runs after every refresh, failed GET too. */
    @Test
    void theCheckAfterARefreshRunsEvenWhenTheGetFails() {
        TestCluster cluster = TestCluster.start();
        TrustBundleSource source = new TrustBundleSource(cluster.client, new ApiCallCounter());
        java.util.concurrent.atomic.AtomicInteger checks = new java.util.concurrent.atomic.AtomicInteger();
        source.afterRefresh(checks::incrementAndGet);
        source.refresh();
        assertThat(checks).hasValue(1);
        cluster.close();
        source.refresh();
        assertThat(checks).hasValue(2);
    }

    @Test
    void theSameValidDataIsParsedOnce() {
        TrustBundleSource source = new TrustBundleSource(null, new ApiCallCounter());
        source.applyFromWatch(trust(OLD_CA));
        long first = source.get().generation();
        source.applyFromWatch(trust(OLD_CA));
        source.applyFromGet(trust(OLD_CA), source.watchEventsSoFar());
        assertThat(source.get().generation()).isEqualTo(first);
        source.applyFromWatch(trust(NEW_CA));
        assertThat(source.get().generation()).isEqualTo(first + 1);
    }
}
