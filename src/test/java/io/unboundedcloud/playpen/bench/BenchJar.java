package io.unboundedcloud.playpen.bench;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Entry point of the self-contained {@code target/playpen-bench.jar} ({@code mvn -B -Pbench package}): runs the
 * benchmark of {@link Bench} on any machine with a JRE 17, no Maven and no network. The jar carries the bench and
 * its libraries ({@code lib/}), the operator's routes ({@code routes/}) and the packaged operator jar
 * ({@code operator/playpen-operator.jar}, for the separate-process measurements); they are unpacked into a
 * scratch directory and the bench runs in a child JVM with the same settings as {@code mvn -Pbench verify}.
 *
 * <p>Flags mirror the {@code bench.*} properties: {@code --pods=200}, {@code --concurrency=1,8,32,64},
 * {@code --large=10000}, ... ({@code --name=value} sets {@code bench.name}); {@code --out=DIR} is where results go
 * (default {@code ./playpen-bench-results}); {@code --jvm-args="-Xms512m -Xmx2g"} the child JVM's flags;
 * {@code --help} lists them.
 */
public final class BenchJar {
    /** The bench.* properties and their defaults (those of the bench profile in pom.xml). */
    static final Map<String, String> DEFAULTS = new LinkedHashMap<>();

    static {
        DEFAULTS.put("pods", "200");
        DEFAULTS.put("requests", "200");
        DEFAULTS.put("warmup", "50");
        DEFAULTS.put("concurrency", "1,8,32,64");
        DEFAULTS.put("scale", "1000");
        DEFAULTS.put("large", "10000");
        DEFAULTS.put("largeClaimed", "5000");
        DEFAULTS.put("refillSamples", "10");
        DEFAULTS.put("ttlSamples", "6");
        DEFAULTS.put("phases", "compare,refill,ttl,large");
        DEFAULTS.put("cds", "true");
        DEFAULTS.put("cpuAllocs", "400");
        DEFAULTS.put("cpuConcurrency", "1,32,64");
        DEFAULTS.put("cpuWarmAllocs", "2000");
        DEFAULTS.put("jitWarmup", "1500");
        DEFAULTS.put("jitSettleRounds", "20");
        DEFAULTS.put("rounds", "4");
        DEFAULTS.put("cpuReplicas", "1,2");
        DEFAULTS.put("client", "vertx");
        DEFAULTS.put("jarJvmArgs", "-XX:MaxRAM=768m -XX:MaxRAMPercentage=35 -XX:InitialRAMPercentage=10 -XX:+UseSerialGC "
                + "-XX:MaxHeapFreeRatio=30 -XX:MinHeapFreeRatio=10 -Xss512k -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m "
                + "-XX:MaxDirectMemorySize=128m -XX:+ExitOnOutOfMemoryError -Dfile.encoding=UTF-8");
    }

    private BenchJar() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> props = new LinkedHashMap<>(DEFAULTS);
        String out = "playpen-bench-results";
        String jvmArgs = "-Xms512m -Xmx2g";
        for (String a : args) {
            if (a.equals("--help") || a.equals("-h")) {
                usage();
                return;
            }
            int eq = a.indexOf('=');
            if (!a.startsWith("--") || eq < 0) {
                System.err.println("bad argument " + a + " (want --name=value; --help lists them)");
                System.exit(2);
            }
            String name = a.substring(2, eq);
            String value = a.substring(eq + 1);
            if (name.equals("out")) {
                out = value;
            } else if (name.equals("jvm-args")) {
                jvmArgs = value;
            } else if (props.containsKey(name)) {
                props.put(name, value);
            } else {
                System.err.println("unknown flag --" + name + " (--help lists them)");
                System.exit(2);
            }
        }
        Path outDir = Path.of(out).toAbsolutePath();
        Files.createDirectories(outDir);
        Path home = unpack(outDir.resolve(".playpen-bench"));
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String j : jvmArgs.trim().split("\\s+")) {
            if (!j.isEmpty()) {
                cmd.add(j);
            }
        }
        cmd.add("-Djdk.internal.httpclient.disableHostnameVerification=true");
        cmd.add("-Djdk.httpclient.keepalive.timeout=30");
        cmd.add("-Dlogback.configurationFile=logback-bench.xml");
        cmd.add("-Dbench.out=" + outDir);
        cmd.add("-Dbench.routes=" + home.resolve("routes"));
        cmd.add("-Dplaypen.test.routesDir=" + home.resolve("routes"));
        cmd.add("-Dbench.jar=" + home.resolve("operator").resolve("playpen-operator.jar"));
        props.forEach((k, v) -> cmd.add("-Dbench." + k + "=" + v));
        cmd.add("-cp");
        cmd.add(home.resolve("lib") + java.io.File.separator + "*");
        cmd.add("io.unboundedcloud.playpen.bench.Bench"); // by name: this launcher JVM has none of its libraries
        System.out.println("playpen-bench: results in " + outDir);
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        System.exit(p.waitFor());
    }

    private static void usage() {
        System.out.println("java -jar playpen-bench.jar [--name=value ...]\n\n"
                + "  --out=DIR            where results.json, latency.html and logs go (default ./playpen-bench-results)\n"
                + "  --jvm-args=\"...\"     flags of the bench JVM (default -Xms512m -Xmx2g)");
        DEFAULTS.forEach((k, v) -> System.out.printf("  --%-19s default %s%n", k + "=...", v));
        System.out.println("\nThe bench.* properties of Bench's Javadoc; a full run takes several minutes and wants 2+ cores.");
    }

    /** Unpacks lib/, routes/ and operator/ from this jar into {@code dir} (replacing an earlier copy). */
    static Path unpack(Path dir) throws IOException, URISyntaxException {
        Path self = Path.of(BenchJar.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        if (Files.isDirectory(dir)) {
            try (var walk = Files.walk(dir)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
        try (JarFile jar = new JarFile(self.toFile())) {
            Enumeration<JarEntry> entries = jar.entries();
            while (entries.hasMoreElements()) {
                JarEntry e = entries.nextElement();
                String n = e.getName();
                if (e.isDirectory() || !(n.startsWith("lib/") || n.startsWith("routes/") || n.startsWith("operator/"))
                        || n.contains("..")) {
                    continue;
                }
                Path target = dir.resolve(n);
                Files.createDirectories(target.getParent());
                try (InputStream in = jar.getInputStream(e)) {
                    Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        return dir;
    }
}
