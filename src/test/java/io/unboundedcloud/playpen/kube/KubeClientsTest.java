package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.impl.BaseClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.unboundedcloud.playpen.dev.Kubeconfigs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shared client's token handling (a configuration without a token is looked at again once a minute), and the
 * pod watch's client of its own.
 */
class KubeClientsTest {

    @Test
    void aConfigurationWithoutATokenIsReadAgainOnceAMinuteWhateverItFinds() {
        AtomicLong now = new AtomicLong(5_000_000_000L);
        AtomicInteger rereads = new AtomicInteger();
        AtomicReference<String> onDisk = new AtomicReference<>();
        KubeClients.MinuteRefresh refresh = new KubeClients.MinuteRefresh(() -> {
            rereads.incrementAndGet();
            return onDisk.get();
        }, now::get);

        for (int i = 0; i < 1000; i++) {
            assertThat(refresh.getToken()).isNull();
            now.addAndGet(50_000_000L); // 1,000 requests over 50 s
        }
        assertThat(rereads).as("none within the first minute").hasValue(0);
        now.addAndGet(10_000_000_000L);
        for (int i = 0; i < 1000; i++) {
            assertThat(refresh.getToken()).isNull();
        }
        assertThat(rereads).as("one re-read that found nothing, not one per request").hasValue(1);

        onDisk.set("new-token");
        now.addAndGet(59_000_000_000L);
        assertThat(refresh.getToken()).as("still within the minute").isNull();
        now.addAndGet(1_000_000_000L);
        assertThat(refresh.getToken()).as("a token that appeared is found at the next minute").isEqualTo("new-token");
        assertThat(refresh.getToken()).isEqualTo("new-token");
        assertThat(rereads).hasValue(2);

        KubeClients.MinuteRefresh failing = new KubeClients.MinuteRefresh(() -> {
            throw new IllegalStateException("kubeconfig gone");
        }, now::get);
        now.addAndGet(KubeClients.MinuteRefresh.PERIOD_NANOS);
        assertThat(failing.getToken()).as("a failed re-read fails no request").isNull();
    }

    @Test
    void onlyConfigurationsWithNothingToRenewGetIt() {
        assertThat(KubeClients.hasNoToken(new ConfigBuilder(Config.empty()).withMasterUrl("https://k:6443").build()))
                .isTrue();
        assertThat(KubeClients.hasNoToken(new ConfigBuilder(Config.empty()).withMasterUrl("https://k:6443")
                .withOauthToken("t").build())).isFalse();
        Config serviceAccount = new ConfigBuilder(Config.empty()).withMasterUrl("https://k:6443").build();
        serviceAccount.setAutoOAuthToken("projected-sa-token");
        assertThat(KubeClients.hasNoToken(serviceAccount)).as("the in-cluster token keeps fabric8's refresh").isFalse();
        assertThat(KubeClients.hasNoToken(new ConfigBuilder(Config.empty()).withMasterUrl("https://k:6443")
                .withUsername("u").withPassword("p").build())).isFalse();
    }

    /** The kubeconfig --dev writes (no credentials): the client asks the provider, and sends what it gives. */
    @Test
    void theClientOfATokenlessKubeconfigAsksTheProviderAndSendsItsToken(@TempDir Path dir) throws Exception {
        KubernetesMockServer server = new KubernetesMockServer(new Context(Serialization.jsonMapper()),
                new MockWebServer(), new HashMap<>(), new KubernetesCrudDispatcher(), false);
        server.init(InetAddress.getLoopbackAddress(), 0);
        try {
            Path kubeconfig = dir.resolve("kubeconfig");
            Files.writeString(kubeconfig, Kubeconfigs.anonymous("mock", server.url("/"), "playpen"));
            try (KubernetesClient client = KubeClients.create(kubeconfig.toString())) {
                var provider = client.getConfiguration().getOauthTokenProvider();
                assertThat(provider).isInstanceOf(KubeClients.MinuteRefresh.class);
                // room for concurrent claims to one API server (fabric8's default allows 5 per host), and a failed
                // call retried once, not for up to ten growing back-offs while its request waits
                Config tuned = client.getConfiguration();
                assertThat(tuned.getMaxConcurrentRequestsPerHost()).isGreaterThanOrEqualTo(128);
                assertThat(tuned.getMaxConcurrentRequests()).isGreaterThanOrEqualTo(tuned.getMaxConcurrentRequestsPerHost());
                assertThat(tuned.getRequestRetryBackoffLimit()).isEqualTo(1);
                client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName("a").endMetadata()
                        .build()).create();
                RecordedRequest first = server.takeRequest();
                assertThat(first.getHeader("Authorization")).as("no token yet").isNull();
            }
            try (KubernetesClient client = KubeClients.create(Config.fromKubeconfig(null,
                    Files.readString(kubeconfig), kubeconfig.toString()))) {
                client.getConfiguration().setOauthTokenProvider(() -> "from-the-provider");
                client.namespaces().withName("a").get();
                assertThat(server.takeRequest().getHeader("Authorization"))
                        .as("fabric8 sends the provider's token, so it is the provider it asks")
                        .isEqualTo("Bearer from-the-provider");
            }
        } finally {
            server.destroy();
        }
    }

    /**
     * The pod watch's client: the shared client's configuration (API server, credentials, proxies), its own
     * connections, and a task executor that runs in place, so a watch event is handled on the I/O thread that read it.
     */
    @Test
    void aWatchClientHasTheSharedConfigurationAndRunsItsTasksInPlace() {
        try (KubernetesClient shared = KubeClients.create(new ConfigBuilder().withMasterUrl("https://127.0.0.1:1/")
                .build()); KubernetesClient watch = KubeClients.forWatch(shared)) {
            assertThat(watch).isNotSameAs(shared);
            assertThat(watch.getConfiguration()).isSameAs(shared.getConfiguration());
            AtomicReference<Thread> ranOn = new AtomicReference<>();
            ((BaseClient) watch).getExecutor().execute(() -> ranOn.set(Thread.currentThread()));
            assertThat(ranOn.get()).isSameAs(Thread.currentThread());
            AtomicReference<Thread> sharedRanOn = new AtomicReference<>();
            CountDownLatch ran = new CountDownLatch(1);
            ((BaseClient) shared).getExecutor().execute(() -> {
                sharedRanOn.set(Thread.currentThread());
                ran.countDown();
            });
            assertThat(awaitQuietly(ran)).isTrue();
            assertThat(sharedRanOn.get()).as("the shared client keeps its pool").isNotSameAs(Thread.currentThread());
        }
    }

    private static boolean awaitQuietly(CountDownLatch latch) {
        try {
            return latch.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
