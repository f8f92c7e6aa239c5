package io.unboundedcloud.playpen;

import java.time.Clock;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.camel.OperatorApp;
import io.unboundedcloud.playpen.config.ConfigException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.dev.DevMode;
import io.unboundedcloud.playpen.fakerunner.FakeRunner;
import io.unboundedcloud.playpen.kube.KubeClients;

/** Entry point: parses flags and runs the operator (or the --dev playground, or the fake-runner stand-in) until SIGTERM. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        JvmDefaults.apply(System.getProperties());
        if (args.length > 0 && args[0].equals(FakeRunner.COMMAND)) {
            fakeRunner(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        // --help/-h and --version/-v print to stdout and exit 0, as the reference's cobra command does
        try {
            OperatorConfig.Request request = OperatorConfig.request(args);
            if (request != OperatorConfig.Request.RUN) {
                System.out.print(request == OperatorConfig.Request.HELP ? OperatorConfig.usage() : version() + "\n");
                System.out.flush();
                System.exit(0);
                return;
            }
        } catch (ConfigException e) {
            System.err.println("playpen-operator: " + e.getMessage());
            System.exit(2);
            return;
        }
        OperatorConfig config;
        String[] effective = effectiveArgs(args);
        try {
            config = OperatorConfig.parse(System.getenv(), effective);
        } catch (ConfigException e) {
            System.err.println("playpen-operator: " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            Logging.configure(config.logFormat(), config.auditLogPath());
        } catch (RuntimeException e) {
            System.err.println("playpen-operator: " + e.getMessage());
            System.exit(2);
            return;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        CountDownLatch startEnded = new CountDownLatch(1);
        AtomicBoolean stopping = new AtomicBoolean();
        // what to close at the stop: set before the start begins, so a SIGTERM during the start closes what it took
        AtomicReference<AutoCloseable> running = new AtomicReference<>();
        Thread starting = Thread.currentThread();
        // SIGTERM/SIGINT are a normal stop, also during the start: clean up in the shutdown hook and exit 0
        exitOnSignals();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            if (startEnded.getCount() > 0) {
                // a start under way ends at its next wait (an API call, a listener's bind), bounded
                starting.interrupt();
                try {
                    startEnded.await(START_END_WAIT.toSeconds(), TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            AutoCloseable r = running.getAndSet(null);
            try {
                if (r != null) {
                    r.close();
                }
            } catch (Exception e) {
                System.err.println("playpen-operator: error during shutdown: " + e);
            }
            stopped.countDown();
        }, "shutdown"));
        try {
            if (config.dev()) {
                running.set(DevMode.start(config, System.getenv(), Arrays.asList(effective)));
            } else {
                KubernetesClient client = KubeClients.create(config.kubeconfig());
                OperatorApp app = new OperatorApp(config, client, Clock.systemUTC(), System.getenv());
                AutoCloseable close = once(() -> {
                    app.close();
                    client.close();
                });
                running.set(close);
                startOrClose(close, app::start);
            }
        } catch (Exception e) {
            startEnded.countDown();
            if (stopping.get()) {
                return; // stopped during the start: the shutdown hook closes what it took, and the exit code is 0
            }
            System.err.println("playpen-operator: startup failed: " + rootMessage(e));
            org.slf4j.LoggerFactory.getLogger(Main.class).debug("startup failure", e);
            System.exit(1);
            return;
        }
        startEnded.countDown();
        try {
            stopped.await();
        } catch (InterruptedException e) {
            // interrupted by a stop that came as the start ended: the shutdown hook goes on
        }
    }

    /** How long a stop during the start waits for it to end before closing what it took so far. */
    static final java.time.Duration START_END_WAIT = java.time.Duration.ofSeconds(5);

    /** {@code c} closed at most once, whoever asks first (a failed start, then the shutdown hook). */
    static AutoCloseable once(AutoCloseable c) {
        AtomicBoolean closed = new AtomicBoolean();
        return () -> {
            if (closed.compareAndSet(false, true)) {
                c.close();
            }
        };
    }

    /** A start that may fail after it has taken something (a port, the Lease). */
    interface Start {
        void run() throws Exception;
    }

    /**
     * Runs {@code start} and returns {@code running}, which stops what it started. When the start fails, part way
     * (a listener that cannot bind after the Lease elector has started), {@code running} is closed before the
     * failure goes on: a Lease already taken is released, so the other replicas need not wait out its duration.
     */
    static AutoCloseable startOrClose(AutoCloseable running, Start start) throws Exception {
        try {
            start.run();
            return running;
        } catch (Exception | Error e) {
            try {
                running.close();
            } catch (Exception closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    /**
     * The flags the process runs with: with --dev, the playground's defaults (loopback addresses) before the user's.
     * Whether it is --dev is decided exactly as the flags are parsed, so no spelling ({@code -dev}, {@code --dev=1})
     * starts the playground without its loopback defaults, and {@code --dev=false} gets none of them.
     */
    static String[] effectiveArgs(String[] args) throws java.io.IOException {
        return OperatorConfig.devRequested(args) ? DevMode.devArgs(args) : args;
    }

    /** The stand-in runner (deploy/components/fake-runner): not the operator, and none of its flags. */
    private static void fakeRunner(String[] args) throws InterruptedException {
        exitOnSignals();
        System.exit(FakeRunner.run(args, System.getenv(), System.out, System.err));
    }

    /** SIGTERM/SIGINT are a normal stop: exit 0 (the JVM default is 143/130), running the shutdown hooks. */
    private static void exitOnSignals() {
        for (String sig : new String[] {"TERM", "INT"}) {
            try {
                sun.misc.Signal.handle(new sun.misc.Signal(sig), s -> new Thread(() -> System.exit(0), "exit").start());
            } catch (IllegalArgumentException e) {
                // signal not available on this platform
            }
        }
    }

    /** "version (commit: sha)" from the jar's manifest; "dev (commit: unknown)" outside a packaged jar, as in Go. */
    static String version() {
        String version = "dev";
        String commit = "unknown";
        try {
            java.nio.file.Path jar = java.nio.file.Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (java.nio.file.Files.isRegularFile(jar)) {
                try (java.util.jar.JarFile file = new java.util.jar.JarFile(jar.toFile())) {
                    java.util.jar.Manifest m = file.getManifest();
                    var attrs = m == null ? null : m.getMainAttributes();
                    if (attrs != null && attrs.getValue("Implementation-Version") != null) {
                        version = attrs.getValue("Implementation-Version");
                    }
                    if (attrs != null && attrs.getValue("Git-Commit") != null && !attrs.getValue("Git-Commit").isBlank()) {
                        commit = attrs.getValue("Git-Commit").trim();
                    }
                }
            }
        } catch (Exception e) {
            // no readable jar (classes directory, odd class loader): keep the defaults
        }
        return version + " (commit: " + commit + ")";
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
