package io.unboundedcloud.playpen.dev;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.unboundedcloud.playpen.config.Flag;

/**
 * {@code --dev-replicas=N}: the playground starts N operator replicas as separate processes of the same jar, each
 * on its own address, against the simulated cluster (their {@code --kubeconfig} is {@code operator-kubeconfig}), with
 * the operator flags the playground was given. They elect a leader through the Lease as in a cluster; kill one with
 * {@code kill -9} and the others go on. Each writes its log to {@code replica-<i>.log} in the dev dir; when one ends,
 * the playground says so and prints the command that starts it again. Ctrl-C or SIGTERM on the playground stops them
 * all, also before it is ready.
 */
final class DevReplicas implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DevReplicas.class);

    /** One replica: its listen address, management port, log file, and the process while it runs. */
    record Replica(int index, String address, int managementPort, Path log, List<String> command, Process process) {
        String url() {
            return "https://" + address;
        }

        String managementUrl() {
            return "http://127.0.0.1:" + managementPort;
        }
    }

    private final List<Replica> replicas;
    private volatile boolean closing;
    private final Thread stopOnExit = new Thread(this::close, "dev-replicas-stop");

    /**
     * {@code replicas} is filled as they start. The JVM leaves child processes running when it exits, and the
     * playground's own hook is registered only once it is ready: this hook, registered before the first replica
     * starts, stops them when the playground is ended earlier (SIGTERM while it waits for them).
     */
    DevReplicas(List<Replica> replicas) {
        this.replicas = replicas;
        Runtime.getRuntime().addShutdownHook(stopOnExit);
    }

    /** The shutdown hook that stops the replicas when the playground's JVM exits. */
    Thread stopOnExit() {
        return stopOnExit;
    }

    /**
     * Starts one replica per address. {@code operatorFlags} are the playground's own flags minus the dev-only ones
     * ({@link #operatorFlags}). Fails before starting anything when an address is taken.
     */
    static DevReplicas start(List<String> addresses, Path devDir, Path operatorKubeconfig, Path auditLog,
            List<String> operatorFlags) throws IOException {
        for (String a : addresses) {
            requireFree(a);
        }
        // read by the shutdown hook while it is filled
        List<Replica> started = new java.util.concurrent.CopyOnWriteArrayList<>();
        DevReplicas all = new DevReplicas(started);
        List<String> flags = passwordInAFile(operatorFlags, devDir);
        try {
            for (int i = 0; i < addresses.size(); i++) {
                int management = FreePorts.pick();
                List<String> command = command(operatorKubeconfig, addresses.get(i), management, auditLog, flags);
                Path log = devDir.resolve("replica-" + i + ".log");
                Files.deleteIfExists(log);
                ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
                pb.environment().remove("KUBECONFIG");
                pb.environment().put("POD_NAME", "replica-" + i);
                Process p = pb.start();
                Replica r = new Replica(i, addresses.get(i), management, log, List.copyOf(command), p);
                started.add(r);
                p.onExit().thenAccept(gone -> all.exited(r, gone));
                LOG.info("dev replica-{}: pid {} on {}, management {}, log {}", i, p.pid(), r.url(), r.managementUrl(),
                        log);
            }
            return all;
        } catch (IOException | RuntimeException e) {
            all.close();
            throw e;
        }
    }

    /** The command line of a replica on {@code address}, its management listener on {@code managementPort}. */
    static List<String> command(Path operatorKubeconfig, String address, int managementPort, Path auditLog,
            List<String> operatorFlags) {
        List<String> command = new ArrayList<>(launcher());
        command.add("--kubeconfig=" + operatorKubeconfig);
        command.add("--listen-addr=" + address);
        command.add("--management-addr=127.0.0.1:" + managementPort);
        command.add("--audit-log-path=" + auditLog);
        command.addAll(operatorFlags);
        return command;
    }

    private void exited(Replica r, Process p) {
        if (closing) {
            return;
        }
        // one line: the log formats turn line breaks into '?' (a log line cannot be forged by what it carries)
        LOG.warn("dev replica-{} (pid {}) exited with code {} (its log: {}); start it again with: {} (a replica you"
                + " start is yours to stop with Ctrl-C: the playground stops only those it started)", r.index(),
                p.pid(), p.exitValue(), r.log(), printable(r.command()));
    }

    List<Replica> replicas() {
        return replicas;
    }

    /** The command line a person would type, with the jar path relative to the working directory when it is inside. */
    static String printable(List<String> command) {
        List<String> out = new ArrayList<>();
        Path cwd = Path.of("").toAbsolutePath();
        for (String part : command) {
            String p = part;
            if (p.endsWith(".jar") && Path.of(p).isAbsolute() && Path.of(p).startsWith(cwd)) {
                p = cwd.relativize(Path.of(p)).toString();
            }
            if (p.equals(javaBinary())) {
                p = "java";
            }
            out.add(p.matches("[A-Za-z0-9_./:=,@%+-]+") ? p : "'" + p.replace("'", "'\\''") + "'");
        }
        return String.join(" ", out);
    }

    /** The flags a replica takes from the playground's command line: all but the dev, address and kubeconfig ones. */
    static List<String> operatorFlags(List<String> args) {
        List<String> out = new ArrayList<>();
        for (Given g : given(args)) {
            boolean own = g.name().startsWith("dev") || g.flag() == Flag.LISTEN_ADDR || g.flag() == Flag.MANAGEMENT_ADDR
                    || g.flag() == Flag.KUBECONFIG || g.flag() == Flag.AUDIT_LOG_PATH;
            if (!own) {
                out.addAll(g.arguments());
            }
        }
        return out;
    }

    /** Where a Redfish password given as a flag goes for the replicas, in the dev dir. */
    static final String PASSWORD_FILE = "runner-redfish-password";

    /**
     * {@code flags} with a Redfish password given as --runner-redfish-password moved into the file
     * {@value #PASSWORD_FILE} of the dev dir, readable by its owner only, which the replicas read
     * (--runner-redfish-password-file): the flag's value would be on every replica's command line, which anyone on the
     * machine can list, and in the command the playground logs to start a replica again.
     */
    static List<String> passwordInAFile(List<String> flags, Path devDir) throws IOException {
        List<String> out = new ArrayList<>();
        String password = "";
        for (Given g : given(flags)) {
            if (g.flag() == Flag.RUNNER_REDFISH_PASSWORD) {
                // the last one given wins, as the operator reads its flags
                password = g.value();
            } else {
                out.addAll(g.arguments());
            }
        }
        if (!password.isEmpty()) {
            Path file = devDir.resolve(PASSWORD_FILE).toAbsolutePath();
            // the operator drops one trailing \r\n or \n from the file: with \r\n added, any password reads back as given
            DevCluster.writePrivate(file, password + "\r\n");
            out.add("--" + Flag.RUNNER_REDFISH_PASSWORD_FILE.flagName() + "=" + file);
        }
        return out;
    }

    /** One flag of a command line: its name, the flag it names (null: none), and the arguments it was given in. */
    private record Given(String name, Flag flag, List<String> arguments) {
        /** The value given: after the "=", else the argument after the flag's name ("" for a bare boolean). */
        String value() {
            String first = arguments.get(0);
            int eq = first.indexOf('=');
            return eq >= 0 ? first.substring(eq + 1) : arguments.size() > 1 ? arguments.get(1) : "";
        }
    }

    /**
     * The flags of {@code args} as the operator reads them: {@code --name=value}, {@code -name=value}, or a flag that
     * takes a value followed by it ({@code --name value}; never a boolean, which stands alone).
     */
    private static List<Given> given(List<String> args) {
        List<Given> out = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            String body = arg.replaceFirst("^--?", "");
            String name = body.contains("=") ? body.substring(0, body.indexOf('=')) : body;
            Flag flag = Flag.byName(name);
            boolean takesNext = !body.contains("=") && flag != null && !flag.isBoolean();
            if (takesNext && i + 1 < args.size()) {
                out.add(new Given(name, flag, List.of(arg, args.get(++i))));
            } else {
                out.add(new Given(name, flag, List.of(arg)));
            }
        }
        return out;
    }

    /** This JVM and how it was started: {@code java -jar <jar>}, or the class path and main class outside a jar. */
    private static List<String> launcher() {
        String cp = System.getProperty("java.class.path");
        List<String> cmd = new ArrayList<>(List.of(javaBinary()));
        if (cp != null && cp.endsWith(".jar") && !cp.contains(java.io.File.pathSeparator)) {
            cmd.addAll(List.of("-jar", Path.of(cp).toAbsolutePath().toString()));
        } else {
            cmd.addAll(List.of("-cp", cp, "io.unboundedcloud.playpen.Main"));
        }
        return cmd;
    }

    private static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static void requireFree(String address) throws IOException {
        int colon = address.lastIndexOf(':');
        String host = address.substring(0, colon);
        int port = Integer.parseInt(address.substring(colon + 1));
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByName(host), port));
        } catch (IOException e) {
            throw new IllegalStateException(address + " is in use, so no replica can listen there: stop what uses it,"
                    + " or give the replicas other addresses with --dev-operator-addrs=127.0.0.1:<port>-<port>");
        }
    }

    /** Stops every replica still running (SIGTERM, then SIGKILL after 10 s). */
    @Override
    public void close() {
        closing = true;
        try {
            Runtime.getRuntime().removeShutdownHook(stopOnExit);
        } catch (IllegalStateException exiting) {
            // the JVM is exiting (this may be the hook itself): the hook stays, and stops them
        }
        for (Replica r : replicas) {
            r.process().destroy();
        }
        for (Replica r : replicas) {
            try {
                if (!r.process().waitFor(10, TimeUnit.SECONDS)) {
                    r.process().destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                r.process().destroyForcibly();
            }
        }
    }
}
