package io.unboundedcloud.playpen.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.support.OperatorHarness;

/** Editable routes on the packaged jar: an edited interval is honoured, reload works, a broken file refuses startup. */
class RoutesIT {
    static final ObjectMapper M = new ObjectMapper();
    Process process;
    Path dir;

    @AfterEach
    void stop() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
        }
    }

    Path copyRoutes() throws Exception {
        dir = Files.createTempDirectory(Path.of("target"), "it-routes-");
        Path routes = dir.resolve("routes");
        Files.createDirectories(routes);
        try (Stream<Path> files = Files.list(Path.of(System.getProperty("playpen.routes", "routes")))) {
            for (Path f : files.toList()) {
                Files.copy(f, routes.resolve(f.getFileName()));
            }
        }
        return routes;
    }

    Process startJar(Path routes, String... extra) throws Exception {
        String jar = System.getProperty("playpen.jar", "target/playpen-operator.jar");
        assumeTrue(new File(jar).isFile(), "packaged jar not found");
        List<String> cmd = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", jar, "--dev", "--dev-dir=" + dir.resolve("dev"), "--routes-dir=" + routes));
        cmd.addAll(List.of(extra));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("operator.log").toFile()).start();
    }

    String managementUrl() throws Exception {
        Path env = dir.resolve("dev").resolve("endpoints.env");
        OperatorHarness.awaitTrue(() -> {
            try {
                return Files.exists(env) && Files.readString(env).contains("MANAGEMENT_URL=");
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(60), "dev mode up");
        return Files.readAllLines(env).stream().filter(l -> l.startsWith("MANAGEMENT_URL=")).findFirst().orElseThrow()
                .substring("MANAGEMENT_URL=".length()).trim();
    }

    long routeExchanges(String mgmt, String routeId) throws Exception {
        String mbean = "org.apache.camel:context=playpen-operator,type=routes,name=\"" + routeId + "\"";
        String url = mgmt + "/jolokia/read/" + URLEncoder.encode(mbean, StandardCharsets.UTF_8).replace("+", "%20")
                + "/ExchangesTotal";
        var r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url)).build(),
                HttpResponse.BodyHandlers.ofString());
        var json = M.readTree(r.body());
        assertThat(json.get("status").asInt()).as(r.body()).isEqualTo(200);
        return json.get("value").asLong();
    }

    static void setPeriod(Path routes, String period) throws Exception {
        Path f = routes.resolve("pool-reconcile.camel.yaml");
        String yaml = Files.readString(f);
        String edited = yaml.replaceFirst("period: \"[^\"]*\"", "period: \"" + period + "\"");
        assertThat(edited).isNotEqualTo(yaml);
        // write then rename, as editors and kubelet (ConfigMap volumes) do: the watcher sees one complete file
        Path tmp = f.resolveSibling(".pool-reconcile.tmp");
        Files.writeString(tmp, edited);
        Files.move(tmp, f, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    @Test
    void editedReconcileIntervalIsObserved() throws Exception {
        Path routes = copyRoutes();
        setPeriod(routes, "500");
        process = startJar(routes);
        String mgmt = managementUrl();
        long first = routeExchanges(mgmt, "pool-reconcile");
        // 500 ms period: three more passes come in a second and a half, or later on a loaded machine; the default
        // 30 s interval would give one at most in the 20 s allowed
        OperatorHarness.awaitTrue(() -> {
            try {
                return routeExchanges(mgmt, "pool-reconcile") - first >= 3;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, Duration.ofSeconds(20), "three more pool-reconcile passes");
    }

    @Test
    void routesReloadPicksUpAnEditWithoutTouchingOtherRoutes() throws Exception {
        Path routes = copyRoutes();
        process = startJar(routes, "--routes-reload");
        String mgmt = managementUrl();
        String operatorUrl = Files.readAllLines(dir.resolve("dev").resolve("endpoints.env")).stream()
                .filter(l -> l.startsWith("OPERATOR_URL=")).findFirst().orElseThrow().substring("OPERATOR_URL=".length());
        HttpClient anon = OperatorHarness.client(null);
        assertThat(anon.send(HttpRequest.newBuilder(URI.create(operatorUrl + "/healthz")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(204);
        long ingressBefore = routeExchanges(mgmt, "https-ingress");
        Thread.sleep(1000);
        long before = routeExchanges(mgmt, "pool-reconcile");
        setPeriod(routes, "300");
        OperatorHarness.awaitTrue(() -> {
            try {
                return routeExchanges(mgmt, "pool-reconcile") - before >= 5;
            } catch (Exception | AssertionError e) {
                // while the route is being replaced its MBean is briefly absent
                return false;
            }
        }, Duration.ofSeconds(20), "reloaded pool-reconcile running every 300 ms");
        // the HTTPS route was not reloaded: it still serves and kept its statistics
        assertThat(anon.send(HttpRequest.newBuilder(URI.create(operatorUrl + "/healthz")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(204);
        assertThat(routeExchanges(mgmt, "https-ingress")).isGreaterThan(ingressBefore);
    }

    @Test
    void brokenYamlRefusesStartupNamingFileAndLine() throws Exception {
        Path routes = copyRoutes();
        Path alloc = routes.resolve("alloc.camel.yaml");
        List<String> lines = new java.util.ArrayList<>(Files.readAllLines(alloc));
        int idx = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).trim().startsWith("from:")) {
                idx = i;
                break;
            }
        }
        lines.set(idx, "    from: [unclosed");
        Files.write(alloc, lines);
        process = startJar(routes);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String log = Files.readString(dir.resolve("operator.log"));
        assertThat(process.exitValue()).as(log).isNotZero();
        assertThat(log).contains("startup failed").contains("alloc.camel.yaml").contains("line " + (idx + 1));
    }
}
