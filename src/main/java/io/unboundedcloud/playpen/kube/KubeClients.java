package io.unboundedcloud.playpen.kube;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;

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

    /** Tuned for the hot path: enough parallel requests for concurrent claims, few retries of failed calls. */
    public static KubernetesClient create(Config config) {
        config.setMaxConcurrentRequests(256);
        config.setMaxConcurrentRequestsPerHost(128);
        config.setRequestRetryBackoffLimit(1);
        return new KubernetesClientBuilder().withConfig(config).build();
    }
}
