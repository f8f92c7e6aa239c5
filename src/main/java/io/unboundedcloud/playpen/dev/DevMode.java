package io.unboundedcloud.playpen.dev;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.unboundedcloud.playpen.camel.OperatorApp;
import io.unboundedcloud.playpen.config.Flag;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.DaemonThreads;

/**
 * {@code --dev}: the simulated cluster plus the operator's normal code path against it, in one process, or (with
 * {@code --dev-replicas}) as separate replica processes the playground starts. Defaults differ from production only
 * where a laptop needs it: free loopback ports instead of :8443, one warm control plane, the audit log in the dev
 * dir; any flag given on the command line still wins.
 *
 * <p>"Ready" means what a user would try first works: the caBundle is published, the APIService is Available, every
 * operator the playground runs answers /readyz through the stand-in, and every pool has an idle pod, so the sample
 * alloc is served. Only then is {@code endpoints.env} written and "dev playground ready" printed. With
 * {@code --dev-operators=0} and no {@code --dev-replicas} the replicas are someone else's: the cluster is announced as
 * soon as it is up, and a line follows when the first replica serves kubectl.
 */
public final class DevMode implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DevMode.class);
    /** How long the playground waits for its operators before it says what is missing. */
    private static final Duration READY_WITHIN = Duration.ofSeconds(120);
    /** The line's start once kubectl is served: the sample alloc works. */
    public static final String PLAYGROUND_READY = "dev playground ready";
    /** The line's start once the cluster alone is up ({@code --dev-operators=0}): kubectl waits for a replica. */
    public static final String CLUSTER_ALONE_READY = "dev cluster ready";

    private final DevCluster cluster;
    private final OperatorApp operator;
    private final DevReplicas replicas;
    private final ScheduledExecutorService watcher;

    private DevMode(DevCluster cluster, OperatorApp operator, DevReplicas replicas, ScheduledExecutorService watcher) {
        this.cluster = cluster;
        this.operator = operator;
        this.replicas = replicas;
        this.watcher = watcher;
    }

    /** The flags dev mode runs with: its defaults first, then the user's (later flags win). */
    public static String[] devArgs(String[] userArgs) throws IOException {
        List<String> args = new ArrayList<>();
        if (!given(userArgs, Flag.LISTEN_ADDR)) {
            args.add("--listen-addr=127.0.0.1:" + FreePorts.pick());
        }
        if (!given(userArgs, Flag.MANAGEMENT_ADDR)) {
            args.add("--management-addr=127.0.0.1:" + FreePorts.pick());
        }
        if (!given(userArgs, Flag.AUDIT_LOG_PATH)) {
            args.add("--audit-log-path=" + Path.of(value(userArgs, Flag.DEV_DIR)).resolve("audit.log"));
        }
        args.add("--control-plane-count=1");
        args.addAll(Arrays.asList(userArgs));
        return args.toArray(new String[0]);
    }

    private static boolean given(String[] args, Flag flag) {
        return Arrays.stream(args).anyMatch(a -> a.replaceFirst("^--?", "").equals(flag.flagName())
                || a.replaceFirst("^--?", "").startsWith(flag.flagName() + "="));
    }

    /** The last value given for a flag ({@code --name=value} or {@code --name value}), else its default. */
    private static String value(String[] args, Flag flag) {
        String v = flag.defaultValue();
        for (int i = 0; i < args.length; i++) {
            String body = args[i].replaceFirst("^--?", "");
            if (body.startsWith(flag.flagName() + "=")) {
                v = body.substring(flag.flagName().length() + 1);
            } else if (body.equals(flag.flagName()) && i + 1 < args.length) {
                v = args[i + 1];
            }
        }
        return v;
    }

    public static DevMode start(OperatorConfig config, Map<String, String> env) throws Exception {
        return start(config, env, List.of());
    }

    /** {@code args} is the playground's command line (after {@link #devArgs}); replicas take its operator flags. */
    public static DevMode start(OperatorConfig config, Map<String, String> env, List<String> args) throws Exception {
        long t0 = System.nanoTime();
        DevCluster cluster = DevCluster.start(DevCluster.Options.fromConfig(config));
        boolean inProcess = config.devOperators() == 1 && config.devReplicas() == 0;
        OperatorApp operator = null;
        DevReplicas replicas = null;
        ScheduledExecutorService watcher = null;
        try {
            operator = inProcess ? new OperatorApp(config, cluster.client(), Clock.systemUTC(), env) : null;
            if (config.devReplicas() > 0) {
                List<String> addrs = cluster.replicas().stream().map(URI::getAuthority).toList();
                if (addrs.size() < config.devReplicas()) {
                    throw new IllegalStateException("--dev-replicas=" + config.devReplicas() + " needs as many addresses,"
                            + " --dev-operator-addrs lists " + addrs.size());
                }
                replicas = DevReplicas.start(addrs.subList(0, config.devReplicas()), cluster.devDir(),
                        cluster.operatorKubeconfigPath().toAbsolutePath(), Path.of(config.auditLogPath()).toAbsolutePath(),
                        DevReplicas.operatorFlags(args));
            }
            Map<String, String> extra = new LinkedHashMap<>();
            List<String> more = new ArrayList<>();
            if (operator != null) {
                operator.start();
                OperatorApp op = operator;
                awaitReady(config, cluster, () -> op.ready(), List.of(cluster.replicas().get(0)));
                if (operator.managementAddress() != null) {
                    extra.put("MANAGEMENT_URL", "http://127.0.0.1:" + operator.managementAddress().getPort());
                }
            } else if (replicas != null) {
                List<URI> expected = replicas.replicas().stream().map(r -> URI.create(r.url())).toList();
                awaitReady(config, cluster, () -> true, expected);
                extra.put("MANAGEMENT_URL", replicas.replicas().get(0).managementUrl());
                extra.put("MANAGEMENT_URLS", String.join(",",
                        replicas.replicas().stream().map(DevReplicas.Replica::managementUrl).toList()));
                extra.put("OPERATOR_PIDS", String.join(",",
                        replicas.replicas().stream().map(r -> String.valueOf(r.process().pid())).toList()));
                for (DevReplicas.Replica r : replicas.replicas()) {
                    more.add("Replica " + r.index() + ": pid " + r.process().pid() + ", " + r.url() + ", management "
                            + r.managementUrl() + ", log " + r.log());
                }
                more.add("Stop one with kill -9 <pid>; the playground prints how to start it again.");
            } else {
                watcher = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("dev-replica-watch"));
                boolean[] announced = {false};
                watcher.scheduleWithFixedDelay(() -> {
                    boolean serving = cluster.registered() && !cluster.readyReplicas().isEmpty();
                    if (serving && !announced[0]) {
                        LOG.info("dev playground: kubectl is served by operator replicas {}", cluster.readyReplicas());
                    } else if (!serving && announced[0]) {
                        LOG.info("dev playground: no operator replica answers /readyz; kubectl gets 503 until one does");
                    }
                    announced[0] = serving;
                }, 200, 200, TimeUnit.MILLISECONDS);
            }
            if (config.auditLogPath() != null && !config.auditLogPath().equals("-")) {
                more.add("Audit log: " + config.auditLogPath());
            }
            if (extra.containsKey("MANAGEMENT_URL")) {
                more.add("Metrics and Jolokia (Hawtio): " + extra.get("MANAGEMENT_URL") + "/metrics, "
                        + extra.get("MANAGEMENT_URL") + "/jolokia");
            }
            cluster.writeEndpointsEnv(extra);
            DevMode dev = new DevMode(cluster, operator, replicas, watcher);
            if (inProcess || replicas != null) {
                LOG.info(PLAYGROUND_READY + " in {} ms: kubeconfig {}", (System.nanoTime() - t0) / 1_000_000,
                        cluster.kubeconfigPath());
                cluster.printTryIt(System.out, more);
            } else {
                // one command per address, each with a management port of its own (two replicas on the default
                // one would clash)
                // (a Redfish password goes in a file, as for the replicas the playground starts: never in a log line)
                List<String> flags = DevReplicas.passwordInAFile(DevReplicas.operatorFlags(args), cluster.devDir());
                List<String> commands = new ArrayList<>();
                for (URI r : cluster.replicas()) {
                    commands.add(DevReplicas.printable(DevReplicas.command(cluster.operatorKubeconfigPath(),
                            r.getAuthority(), FreePorts.pick(), Path.of(config.auditLogPath()), flags)));
                }
                LOG.info(CLUSTER_ALONE_READY + " in {} ms with no operator: start replicas with one of these commands"
                        + " each: {}; kubectl is served once one answers /readyz", (System.nanoTime() - t0) / 1_000_000,
                        String.join(" | ", commands));
            }
            return dev;
        } catch (Exception | Error e) {
            new DevMode(cluster, operator, replicas, watcher).close();
            throw e;
        }
    }

    /**
     * Waits until the sample alloc would be served: the caBundle published, the APIService Available, every expected
     * operator ready at the stand-in, the pools warm. Past {@link #READY_WITHIN} it says what is missing and goes on.
     */
    private static void awaitReady(OperatorConfig config, DevCluster cluster, java.util.function.BooleanSupplier operator,
            List<URI> expected) throws InterruptedException {
        long deadline = System.nanoTime() + READY_WITHIN.toNanos();
        long nextNote = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (true) {
            boolean op = operator.getAsBoolean();
            boolean registered = cluster.registered();
            boolean available = registered && cluster.available();
            boolean replicasReady = cluster.readyReplicas().containsAll(expected);
            boolean warm = available && replicasReady && cluster.poolsWarm(config.runnerAmd64Count(),
                    config.runnerArm64Count(), config.controlPlaneCount(), config.controlPlaneVersions());
            if (op && available && replicasReady && warm) {
                return;
            }
            String missing = "operator ready=" + op + ", caBundle published=" + registered + ", APIService Available="
                    + available + ", replicas ready at the stand-in=" + cluster.readyReplicas() + " of " + expected
                    + ", pools warm=" + warm;
            if (System.nanoTime() > deadline) {
                LOG.warn("dev playground not fully up after {} s ({}); kubectl may answer 503 until it is",
                        READY_WITHIN.toSeconds(), missing);
                return;
            }
            if (System.nanoTime() > nextNote) {
                LOG.info("dev playground still starting: {}", missing);
                nextNote = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            }
            Thread.sleep(50);
        }
    }

    /** The simulated cluster and the aggregator stand-in in front of it. */
    DevCluster cluster() {
        return cluster;
    }

    /** The operator running in this process (null with --dev-operators=0 or --dev-replicas). */
    public OperatorApp operator() {
        return operator;
    }

    @Override
    public void close() {
        if (watcher != null) {
            watcher.shutdownNow();
        }
        if (replicas != null) {
            replicas.close();
        }
        if (operator != null) {
            operator.close();
        }
        cluster.close();
    }
}
