package io.unboundedcloud.playpen.kube;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.OAuthTokenProvider;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.kubernetes.client.utils.Utils;

/** Builds the one shared KubernetesClient: from --kubeconfig, else the standard discovery (env, home, in-cluster). */
public final class KubeClients {
    private KubeClients() {
    }

    public static KubernetesClient create(String kubeconfigPath) {
        Config config;
        if (kubeconfigPath == null || kubeconfigPath.isBlank()) {
            config = Config.autoConfigure(null);
        } else {
            try {
                config = Config.fromKubeconfig(null, Files.readString(Path.of(kubeconfigPath)), kubeconfigPath);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read kubeconfig " + kubeconfigPath + ": " + e.getMessage(), e);
            }
        }
        return create(config);
    }

    /**
     * Tuned for the hot path: enough parallel requests for concurrent claims, few retries of failed calls, and a
     * configuration without a token re-read once a minute ({@link MinuteRefresh}) rather than before every request;
     * pods in watch events decoded straight into the cache's slim form ({@link PodWatchEvents}).
     */
    public static KubernetesClient create(Config config) {
        config.setMaxConcurrentRequests(256);
        config.setMaxConcurrentRequestsPerHost(128);
        config.setRequestRetryBackoffLimit(1);
        if (hasNoToken(config)) {
            config.setOauthTokenProvider(new MinuteRefresh(() -> tokenOf(config.refresh()), System::nanoTime));
        }
        return builder(config).build();
    }

    /**
     * A client of its own for one watch, whose events are handled on the I/O thread that read them. fabric8 hands
     * every event a watch delivers from that thread to the client's task executor, one thread wake-up per event;
     * with a task executor that runs in place the watcher runs where the event was read, still one event after
     * the other in the order they came. Its own client, so its own I/O threads: the requests of {@code shared}
     * (the claims' PATCHes among them) never wait behind a watch event. Only for a watcher that never blocks (a
     * blocked watcher holds up this watch's next events either way). The configuration of {@code shared} (its
     * API server, credentials and proxies) and the operator's JSON ({@link #serialization()}); whoever asks for it
     * closes it.
     */
    public static KubernetesClient forWatch(KubernetesClient shared) {
        return builder(shared.getConfiguration()).withTaskExecutor(Runnable::run).build();
    }

    private static KubernetesClientBuilder builder(Config config) {
        return new KubernetesClientBuilder().withConfig(config).withKubernetesSerialization(serialization());
    }

    /** The client's JSON: fabric8's own, with pods in watch events decoded straight into their slim form. */
    public static KubernetesSerialization serialization() {
        ObjectMapper mapper = new ObjectMapper();
        mapper.registerModule(PodWatchEvents.module());
        return new KubernetesSerialization(mapper, true);
    }

    /**
     * Nothing that fabric8's token refresh can renew: no token (set, or found by auto-configuration: service
     * account, exec plugin), no token provider, no auth-provider (OIDC), no basic auth. Client certificates or no
     * credentials at all, as with a kind or k3s kubeconfig, and the simulated cluster of {@code --dev}.
     */
    static boolean hasNoToken(Config config) {
        return config.getOauthTokenProvider() == null && Utils.isNullOrEmpty(config.getOauthToken())
                && Utils.isNullOrEmpty(config.getAutoOAuthToken()) && config.getAuthProvider() == null
                && Utils.isNullOrEmpty(config.getUsername()) && Utils.isNullOrEmpty(config.getPassword());
    }

    private static String tokenOf(Config fresh) {
        return Utils.isNullOrEmpty(fresh.getOauthToken()) ? fresh.getAutoOAuthToken() : fresh.getOauthToken();
    }

    /**
     * The token of a configuration that had none, looked for again at most once a minute. fabric8's
     * {@code TokenRefreshInterceptor} means to re-read the configuration once a minute, but restarts its minute
     * only when the re-read finds a token: without one it re-reads before every request once the first minute has
     * passed (the whole kubeconfig file, parsed again, or auto-configuration's environment, system properties and
     * files), on the allocation path's PATCH too. With this provider it asks here instead: the same re-read, once a
     * minute, whatever it finds; a token that appears is used from then on, a re-read that fails keeps the last one.
     */
    static final class MinuteRefresh implements OAuthTokenProvider {
        static final long PERIOD_NANOS = TimeUnit.MINUTES.toNanos(1);
        private final Supplier<String> reread;
        private final LongSupplier nanos;
        private volatile String token;
        private volatile long next;

        MinuteRefresh(Supplier<String> reread, LongSupplier nanos) {
            this.reread = reread;
            this.nanos = nanos;
            this.next = nanos.getAsLong() + PERIOD_NANOS;
        }

        @Override
        public String getToken() {
            if (nanos.getAsLong() - next >= 0) {
                synchronized (this) {
                    long now = nanos.getAsLong();
                    if (now - next >= 0) {
                        next = now + PERIOD_NANOS;
                        try {
                            token = reread.get();
                        } catch (RuntimeException e) {
                            // an unreadable kubeconfig: keep what we had and look again in a minute
                        }
                    }
                }
            }
            return token;
        }
    }
}
