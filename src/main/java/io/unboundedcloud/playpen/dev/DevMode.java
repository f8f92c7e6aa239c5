package io.unboundedcloud.playpen.dev;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.unboundedcloud.playpen.camel.OperatorApp;
import io.unboundedcloud.playpen.config.Flag;
import io.unboundedcloud.playpen.config.OperatorConfig;

/**
 * {@code --dev}: the simulated cluster plus the operator's normal code path against it, in one process.
 * Defaults differ from production only where a laptop needs it: a free loopback port instead of :8443 and
 * one warm control plane; any flag given on the command line still wins.
 */
public final class DevMode implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DevMode.class);

    private final DevCluster cluster;
    private final OperatorApp operator;

    private DevMode(DevCluster cluster, OperatorApp operator) {
        this.cluster = cluster;
        this.operator = operator;
    }

    /** The flags dev mode runs with: its defaults first, then the user's (later flags win). */
    public static String[] devArgs(String[] userArgs) throws IOException {
        List<String> args = new ArrayList<>();
        boolean listenGiven = Arrays.stream(userArgs).anyMatch(a -> a.startsWith("--" + Flag.LISTEN_ADDR.flagName()));
        if (!listenGiven) {
            args.add("--listen-addr=127.0.0.1:" + freePort());
        }
        if (Arrays.stream(userArgs).noneMatch(a -> a.startsWith("--" + Flag.MANAGEMENT_ADDR.flagName()))) {
            args.add("--management-addr=127.0.0.1:" + freePort());
        }
        args.add("--control-plane-count=1");
        args.addAll(Arrays.asList(userArgs));
        return args.toArray(new String[0]);
    }

    public static DevMode start(OperatorConfig config, Map<String, String> env) throws Exception {
        long t0 = System.nanoTime();
        DevCluster cluster = DevCluster.start(DevCluster.Options.fromConfig(config));
        OperatorApp operator = new OperatorApp(config, cluster.client(), Clock.systemUTC(), env);
        DevMode dev = new DevMode(cluster, operator);
        try {
            operator.start();
            // announce only what kubectl can use: the operator ready AND registered (its caBundle published by the
            // ca-bundle route once it leads); before that the aggregator stand-in answers 503
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            boolean ready = operator.ready();
            boolean registered = ready && cluster.registered();
            while (!registered && System.nanoTime() < deadline) {
                Thread.sleep(20);
                ready = operator.ready();
                registered = ready && cluster.registered();
            }
            if (!registered) {
                LOG.warn("dev playground not fully up after 30 s (operator ready={}, caBundle published={}); "
                        + "kubectl may answer 503 until it is", ready, cluster.registered());
            }
            cluster.writeEndpointsEnv();
            if (operator.managementAddress() != null) {
                java.nio.file.Files.writeString(cluster.devDir().resolve("endpoints.env"),
                        "MANAGEMENT_URL=http://127.0.0.1:" + operator.managementAddress().getPort() + "\n",
                        java.nio.file.StandardOpenOption.APPEND);
            }
        } catch (Exception | Error e) {
            dev.close();
            throw e;
        }
        LOG.info("dev playground ready in {} ms: kubeconfig {}", (System.nanoTime() - t0) / 1_000_000,
                cluster.kubeconfigPath());
        cluster.printTryIt(System.out);
        return dev;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        operator.close();
        cluster.close();
    }
}
