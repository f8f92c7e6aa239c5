package io.unboundedcloud.playpen.dev;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
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
        OperatorApp operator = config.devOperators() == 0 ? null
                : new OperatorApp(config, cluster.client(), Clock.systemUTC(), env);
        DevMode dev = new DevMode(cluster, operator);
        try {
            Map<String, String> extra = new LinkedHashMap<>();
            if (operator != null) {
                operator.start();
                // announce only what kubectl can use: the operator ready AND registered (its caBundle published once
                // it leads) AND seen ready by the aggregator stand-in; before that kubectl gets 503
                long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (!usable(operator, cluster) && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                if (!usable(operator, cluster)) {
                    LOG.warn("dev playground not fully up after 30 s (operator ready={}, caBundle published={}, "
                            + "replicas ready at the stand-in={}); kubectl may answer 503 until it is", operator.ready(),
                            cluster.registered(), cluster.readyReplicas());
                }
                if (operator.managementAddress() != null) {
                    extra.put("MANAGEMENT_URL", "http://127.0.0.1:" + operator.managementAddress().getPort());
                }
            }
            cluster.writeEndpointsEnv(extra);
        } catch (Exception | Error e) {
            dev.close();
            throw e;
        }
        if (operator == null) {
            LOG.info("dev playground ready in {} ms with no operator in this process: start replicas with "
                    + "--kubeconfig {} and --listen-addr set to one of {}", (System.nanoTime() - t0) / 1_000_000,
                    cluster.operatorKubeconfigPath(),
                    cluster.replicas().stream().map(java.net.URI::getAuthority).toList());
        } else {
            LOG.info("dev playground ready in {} ms: kubeconfig {}", (System.nanoTime() - t0) / 1_000_000,
                    cluster.kubeconfigPath());
        }
        cluster.printTryIt(System.out);
        return dev;
    }

    /** The operator running in this process (null with --dev-operators=0). */
    public OperatorApp operator() {
        return operator;
    }

    private static boolean usable(OperatorApp operator, DevCluster cluster) {
        return operator.ready() && cluster.registered() && !cluster.readyReplicas().isEmpty();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        if (operator != null) {
            operator.close();
        }
        cluster.close();
    }
}
