package io.unboundedcloud.playpen;

import java.time.Clock;
import java.util.concurrent.CountDownLatch;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.camel.OperatorApp;
import io.unboundedcloud.playpen.config.ConfigException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.KubeClients;

/** Entry point: parses flags and runs the operator until SIGTERM. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        OperatorConfig config;
        try {
            config = OperatorConfig.parse(args);
        } catch (ConfigException e) {
            System.err.println("playpen-operator: " + e.getMessage());
            System.exit(2);
            return;
        }
        KubernetesClient client = KubeClients.create(config.kubeconfig());
        OperatorApp app = new OperatorApp(config, client, Clock.systemUTC(), System.getenv());
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            app.close();
            client.close();
            stopped.countDown();
        }, "shutdown"));
        app.start();
        stopped.await();
    }
}
