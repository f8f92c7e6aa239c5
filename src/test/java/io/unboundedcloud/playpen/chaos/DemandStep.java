package io.unboundedcloud.playpen.chaos;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.dev.DevMode;
import io.unboundedcloud.playpen.model.PoolStatus;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.support.OperatorHarness;

/**
 * The demand-aware buffer's figure (docs/pools.md): the playground in this process, allocations at 1 per second for
 * {@code -Ddemand.before} seconds, then at 20 per second for {@code -Ddemand.after} seconds, each released 2 s after
 * it was answered; per second the answers (200, 503) and the pool's desired and ready idle pods. Run once with the
 * buffer ({@code --pool-max-idle=40}) and once without ({@code -Ddemand.off=true}). Not part of mvn verify.
 */
public final class DemandStep {
    private DemandStep() {
    }

    public static void main(String[] args) throws Exception {
        boolean off = Boolean.getBoolean("demand.off");
        int before = Integer.getInteger("demand.before", 20);
        int after = Integer.getInteger("demand.after", 30);
        Path dir = Files.createTempDirectory(Path.of("target"), "demand-");
        List<String> flags = new ArrayList<>(List.of("--dev", "--dev-dir=" + dir, "--runner-amd64-count=1",
                "--runner-arm64-count=0", "--control-plane-count=0", "--runner-wireguard-host-port-end=52819",
                "--playpen-ttl=1h", "--log-format=text"));
        if (!off) {
            flags.add("--pool-max-idle=40");
        }
        OperatorConfig config = OperatorConfig.parse(DevMode.devArgs(flags.toArray(new String[0])));
        StringBuilder out = new StringBuilder();
        try (DevMode dev = DevMode.start(config, Map.of())) {
            URI shim = URI.create(Files.readAllLines(dir.resolve("endpoints.env")).stream()
                    .filter(l -> l.startsWith("SHIM_URL=")).findFirst().orElseThrow().substring("SHIM_URL=".length()));
            HttpClient http = OperatorHarness.client(LoadRun.userCredentials(dir));
            var operator = dev.operator();
            Thread.sleep(3000);
            ScheduledExecutorService sender = Executors.newScheduledThreadPool(32);
            Map<Integer, int[]> perSecond = new ConcurrentHashMap<>();
            long t0 = System.nanoTime();
            AtomicInteger n = new AtomicInteger();
            Random random = new Random(1);
            out.append(off ? "buffer off (--runner-amd64-count=1)\n" : "buffer on (--runner-amd64-count=1 --pool-max-idle=40)\n");
            out.append("| s | rate/s | sent | 200 | 503 | desired | ready idle |\n|---:|---:|---:|---:|---:|---:|---:|\n");
            for (int s = 0; s < before + after; s++) {
                int rate = s < before ? 1 : 20;
                for (int i = 0; i < rate; i++) {
                    long at = TimeUnit.SECONDS.toMillis(s) + i * 1000L / rate;
                    sender.schedule(() -> {
                        int second = (int) ((System.nanoTime() - t0) / 1_000_000_000L);
                        int[] c = perSecond.computeIfAbsent(second, x -> new int[3]);
                        String key = "step-" + n.incrementAndGet();
                        byte[] wg = new byte[32];
                        synchronized (random) {
                            random.nextBytes(wg);
                        }
                        String body = "{\"idempotencyKey\":\"" + key + "\",\"architecture\":\"amd64\","
                                + "\"wireGuardPublicKey\":\"" + Base64.getEncoder().encodeToString(wg) + "\"}";
                        try {
                            HttpResponse<String> r = http.send(HttpRequest.newBuilder(shim.resolve(LoadRun.ALLOCS))
                                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                                    HttpResponse.BodyHandlers.ofString());
                            synchronized (c) {
                                c[0]++;
                                c[r.statusCode() == 200 ? 1 : 2]++;
                            }
                            if (r.statusCode() == 200) {
                                sender.schedule(() -> http.send(HttpRequest.newBuilder(shim.resolve(LoadRun.DEALLOCS))
                                        .POST(HttpRequest.BodyPublishers.ofString("{\"idempotencyKey\":\"" + key + "\"}"))
                                        .build(), HttpResponse.BodyHandlers.discarding()), 2, TimeUnit.SECONDS);
                            }
                        } catch (Exception e) {
                            synchronized (c) {
                                c[0]++;
                                c[2]++;
                            }
                        }
                    }, at, TimeUnit.MILLISECONDS);
                }
            }
            for (int s = 0; s < before + after; s++) {
                long wake = t0 + TimeUnit.SECONDS.toNanos(s + 1);
                Thread.sleep(Math.max(0, (wake - System.nanoTime()) / 1_000_000));
                PoolStatus p = operator.poolStatuses().fresh().get(PoolTarget.runner("amd64"));
                int[] c = perSecond.getOrDefault(s, new int[3]);
                out.append("| ").append(s).append(" | ").append(s < before ? 1 : 20).append(" | ").append(c[0])
                        .append(" | ").append(c[1]).append(" | ").append(c[2]).append(" | ").append(p.desired())
                        .append(" | ").append(p.ready()).append(" |\n");
            }
            Thread.sleep(3000);
            sender.shutdownNow();
            PoolStatus p = operator.poolStatuses().fresh().get(PoolTarget.runner("amd64"));
            out.append("time-to-ready ").append(p.timeToReady()).append(", rate ")
                    .append(Math.round(p.allocationRate() * 10) / 10.0).append("/s\n");
        }
        System.out.println(out);
        Files.writeString(Path.of("target", off ? "demand-step-off.txt" : "demand-step-on.txt"), out);
        System.exit(0);
    }
}
