package io.unboundedcloud.playpen;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.unboundedcloud.playpen.camel.ManagementAccess;
import io.unboundedcloud.playpen.camel.ManagementServer;

/**
 * The management listener in a child JVM started as the operator's Main starts (its {@link JvmDefaults} applied
 * first): the JDK server behind it reads its limits from JVM-wide settings once, when its classes load, so a test of
 * those limits needs a JVM of its own. The child prints its port and the connection cap it runs with, and serves
 * until the test ends (its end of stdin closes) or {@link #close} stops it.
 */
final class ManagementChildJvm implements AutoCloseable {
    private static final Pattern STARTED = Pattern.compile("MANAGEMENT_PORT=(\\d+) MAX_CONNECTIONS=(\\S+)");

    /**
     * The child: the operator's JVM defaults, then the management listener on a free loopback port with one
     * counter, named {@code args[0]}.
     */
    public static final class Serve {
        public static void main(String[] args) throws Exception {
            JvmDefaults.apply(System.getProperties());
            // as many MBeans as the system property says, so that the tree is as large as the operator's
            int fillers = Integer.getInteger("playpen.test.filler-mbeans", 0);
            for (int i = 0; i < fillers; i++) {
                java.lang.management.ManagementFactory.getPlatformMBeanServer().registerMBean(new Filler(),
                        new javax.management.ObjectName("playpen.test:type=filler,name=f" + i));
            }
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            registry.counter(args[0]).increment();
            ManagementServer server = new ManagementServer("127.0.0.1", 0, registry::scrape, () -> true, ManagementAccess.NONE);
            server.start();
            System.out.println("MANAGEMENT_PORT=" + server.address().getPort() + " MAX_CONNECTIONS="
                    + System.getProperty("jdk.httpserver.maxConnections"));
            System.out.flush();
            while (System.in.read() >= 0) {
                // until the test ends (its end of stdin closes) or kills us
            }
            server.close();
        }
    }

    /** An MBean with a few attributes and operations, like one of Camel's. */
    public interface FillerMBean {
        long getExchangesTotal();

        long getExchangesFailed();

        String getState();

        String getDescription();

        boolean isTracing();

        String dumpStatsAsXml(boolean fullStats, boolean includeProcessors);

        String dumpRouteAsXml(boolean resolvePlaceholders, boolean generatedIds);

        void reset(boolean includeProcessors);
    }

    public static final class Filler implements FillerMBean {
        @Override
        public long getExchangesTotal() {
            return 0;
        }

        @Override
        public long getExchangesFailed() {
            return 0;
        }

        @Override
        public String getState() {
            return "Started";
        }

        @Override
        public String getDescription() {
            return "a filler";
        }

        @Override
        public boolean isTracing() {
            return false;
        }

        @Override
        public String dumpStatsAsXml(boolean fullStats, boolean includeProcessors) {
            return "<stats/>";
        }

        @Override
        public String dumpRouteAsXml(boolean resolvePlaceholders, boolean generatedIds) {
            return "<route/>";
        }

        @Override
        public void reset(boolean includeProcessors) {
            // nothing to reset
        }
    }

    private final Process child;
    private final Path log;
    /** The listener's port, once started. */
    final int port;
    /** The value of {@code jdk.httpserver.maxConnections} in the child ("null" when unset). */
    final String maxConnections;

    private ManagementChildJvm(Process child, Path log) throws Exception {
        this.child = child;
        this.log = log;
        Matcher m = awaitStarted();
        this.port = Integer.parseInt(m.group(1));
        this.maxConnections = m.group(2);
    }

    /**
     * Starts the child with these JVM options (nothing else set on its command line) and a counter named
     * {@code probe}, its output in {@code dir}; returns once it listens.
     */
    static ManagementChildJvm start(Path dir, List<String> jvmArgs, String probe) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Serve.class.getName(), probe));
        Path log = dir.resolve("child.log");
        Process child = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            return new ManagementChildJvm(child, log);
        } catch (Exception | Error e) {
            stop(child);
            throw e;
        }
    }

    private Matcher awaitStarted() throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            String out = Files.exists(log) ? Files.readString(log) : "";
            Matcher m = STARTED.matcher(out);
            if (m.find()) {
                return m;
            }
            if (!child.isAlive()) {
                throw new AssertionError("the child JVM exited: " + out);
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the child JVM printed no port: " + Files.readString(log));
    }

    /** Whether the child still runs; its output when it does not. */
    String exited() throws java.io.IOException {
        return child.isAlive() ? null : Files.readString(log);
    }

    @Override
    public void close() throws InterruptedException {
        stop(child);
    }

    private static void stop(Process child) throws InterruptedException {
        child.destroy();
        if (!child.waitFor(30, TimeUnit.SECONDS)) {
            child.destroyForcibly();
        }
    }
}
