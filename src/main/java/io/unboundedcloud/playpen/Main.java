package io.unboundedcloud.playpen;

import java.time.Clock;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.camel.OperatorApp;
import io.unboundedcloud.playpen.config.ConfigException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.dev.DevMode;
import io.unboundedcloud.playpen.kube.KubeClients;

/** Entry point: parses flags and runs the operator (or the --dev playground) until SIGTERM. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        JvmDefaults.apply(System.getProperties());
        boolean dev = Arrays.stream(args).anyMatch(a -> a.equals("--dev") || a.equals("--dev=true"));
        OperatorConfig config;
        try {
            config = OperatorConfig.parse(dev ? DevMode.devArgs(args) : args);
        } catch (ConfigException e) {
            System.err.println("playpen-operator: " + e.getMessage());
            System.exit(2);
            return;
        }
        Logging.configure(config.logFormat());
        CountDownLatch stopped = new CountDownLatch(1);
        AutoCloseable running;
        try {
            if (config.dev()) {
                running = DevMode.start(config, System.getenv());
            } else {
                KubernetesClient client = KubeClients.create(config.kubeconfig());
                OperatorApp app = new OperatorApp(config, client, Clock.systemUTC(), System.getenv());
                running = () -> {
                    app.close();
                    client.close();
                };
                app.start();
            }
        } catch (Exception e) {
            System.err.println("playpen-operator: startup failed: " + rootMessage(e));
            org.slf4j.LoggerFactory.getLogger(Main.class).debug("startup failure", e);
            System.exit(1);
            return;
        }
        // SIGTERM/SIGINT are a normal stop: clean up in the shutdown hook and exit 0 (the JVM default is 143/130)
        for (String sig : new String[] {"TERM", "INT"}) {
            try {
                sun.misc.Signal.handle(new sun.misc.Signal(sig), s -> new Thread(() -> System.exit(0), "exit").start());
            } catch (IllegalArgumentException e) {
                // signal not available on this platform
            }
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                running.close();
            } catch (Exception e) {
                System.err.println("playpen-operator: error during shutdown: " + e);
            }
            stopped.countDown();
        }, "shutdown"));
        stopped.await();
    }

    private static String rootMessage(Throwable t) {
        Throwable r = t;
        StringBuilder sb = new StringBuilder(String.valueOf(t.getMessage()));
        while (r.getCause() != null && r.getCause() != r) {
            r = r.getCause();
            if (r.getMessage() != null && !sb.toString().contains(r.getMessage())) {
                sb.append(": ").append(r.getMessage());
            }
        }
        return sb.toString();
    }
}
