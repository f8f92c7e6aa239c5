package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** JMX route statistics, Prometheus /metrics, read-only Jolokia and Kubernetes events. */
class OperabilityRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    TestCluster cluster;
    OperatorHarness op;
    int mgmtPort;

    @AfterEach
    void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    void start(boolean rejectEvents) throws Exception {
        cluster = TestCluster.start();
        if (rejectEvents) {
            cluster.server.expect().post().withPath("/api/v1/namespaces/playpen/events")
                    .andReturn(500, "{\"kind\":\"Status\",\"code\":500}").always();
        }
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        // alice's allowed review is cached for the whole test (the default is 10 s): the scripted sequence counts
        // one cache miss and three hits, however long a loaded machine takes for its four requests
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0", "--playpen-ttl=1h",
                "--reconcile-interval=10m", "--sar-allowed-ttl=10m");
        mgmtPort = op.app.managementAddress().getPort();
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
        op.awaitCache(c -> c.size() == 2);
    }

    String mgmt(String path) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + mgmtPort + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    ObjectName routeMBean(String routeId) throws Exception {
        String ctx = op.app.camelContext().getManagementName();
        return new ObjectName("org.apache.camel:context=" + ctx + ",type=routes,name=\"" + routeId + "\"");
    }

    static double metric(String scrape, String series) {
        for (String line : scrape.split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        return -1;
    }

    @Test
    void scriptedSequenceShowsExactCountsInJmxAndMetricsAndEvents() throws Exception {
        start(false);
        String wg1 = TestCluster.wgKey(1);
        assertThat(op.alloc("{\"idempotencyKey\":\"a1\",\"wireGuardPublicKey\":\"" + wg1 + "\"}").statusCode()).isEqualTo(200);
        assertThat(op.alloc("{\"idempotencyKey\":\"a2\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(2) + "\"}").statusCode())
                .isEqualTo(200);
        assertThat(op.alloc("{\"idempotencyKey\":\"a1\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(3) + "\"}").statusCode())
                .isEqualTo(409);
        assertThat(op.dealloc("{\"idempotencyKey\":\"a2\"}").statusCode()).isEqualTo(204);
        // one expiry: a claim whose claimed-at is long past
        cluster.create(TestCluster.readyRunner("amd64", 51822, "node-a").editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ef".repeat(32))
                .addToAnnotations(PlaypenKeys.CLAIMED_AT, "2000-01-01T00:00:00Z").endMetadata());
        OperatorHarness.awaitTrue(() -> cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51822")
                .get() == null, Duration.ofSeconds(60), "expiry");
        // the expirer counts the expiry and drops the pod from its cache once its DELETE has returned, which can
        // be a moment after the API server stopped showing the pod
        OperatorHarness.awaitTrue(() -> {
            try {
                String s = mgmt("/metrics");
                return metric(s, "playpen_ttl_expirations_total") == 1.0
                        && metric(s, "playpen_pods{resource_type=\"runner\",state=\"claimed\",variant=\"amd64\"}") == 1.0;
            } catch (Exception | AssertionError e) {
                return false;
            }
        }, Duration.ofSeconds(60), "expiry counted and the expired pod gone from the cache");

        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        assertThat(jmx.getAttribute(routeMBean("alloc"), "ExchangesTotal")).isEqualTo(3L);
        assertThat(jmx.getAttribute(routeMBean("alloc"), "FailuresHandled")).isEqualTo(1L);
        assertThat(jmx.getAttribute(routeMBean("dealloc"), "ExchangesTotal")).isEqualTo(1L);
        assertThat(jmx.getAttribute(routeMBean("https-ingress"), "ExchangesTotal")).isEqualTo(4L);

        String scrape = mgmt("/metrics");
        assertThat(metric(scrape, "playpen_alloc_requests_total{code=\"200\",result=\"allocated\"}")).isEqualTo(2.0);
        assertThat(metric(scrape, "playpen_alloc_requests_total{code=\"409\",result=\"conflict\"}")).isEqualTo(1.0);
        assertThat(metric(scrape, "playpen_dealloc_requests_total{code=\"204\",result=\"deallocated\"}")).isEqualTo(1.0);
        assertThat(metric(scrape, "playpen_ttl_expirations_total")).isEqualTo(1.0);
        assertThat(metric(scrape, "playpen_alloc_latency_seconds_count")).isEqualTo(3.0);
        // one review of create on allocs (then cached for the two allocs after it) and one of create on deallocs
        assertThat(metric(scrape, "playpen_sar_cache_misses_total")).isEqualTo(2.0);
        assertThat(metric(scrape, "playpen_sar_cache_hits_total")).isEqualTo(2.0);
        assertThat(metric(scrape, "playpen_pods{resource_type=\"runner\",state=\"claimed\",variant=\"amd64\"}")).isEqualTo(1.0);
        assertThat(metric(scrape, "playpen_leader")).isEqualTo(1.0);
        assertThat(metric(scrape, "playpen_api_requests_total{call=\"pods_patch\",resource=\"pods\",verb=\"patch\"}"))
                .isEqualTo(2.0);
        assertThat(scrape).contains("playpen_free_host_ports{resource_type=\"runner\"}");

        OperatorHarness.awaitTrue(() -> {
            var reasons = cluster.client.v1().events().inNamespace("playpen").list().getItems().stream()
                    .map(e -> e.getReason()).toList();
            return reasons.contains("Allocated") && reasons.contains("Deallocated") && reasons.contains("Expired");
        }, Duration.ofSeconds(60), "Allocated, Deallocated and Expired events");
    }

    @Test
    void jolokiaReadsButRefusesExecAndListensOnLoopbackOnly() throws Exception {
        start(false);
        String mbean = routeMBean("pool-reconcile").toString();
        JsonNode read = M.readTree(mgmt("/jolokia/read/" + URLEncoder.encode(mbean, StandardCharsets.UTF_8)
                .replace("+", "%20") + "/RouteId"));
        assertThat(read.get("status").asInt()).as(read.toString()).isEqualTo(200);
        assertThat(read.get("value").asText()).isEqualTo("pool-reconcile");
        String exec = "{\"type\":\"exec\",\"mbean\":" + M.writeValueAsString(mbean) + ",\"operation\":\"stop()\"}";
        JsonNode refused = M.readTree(HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + mgmtPort + "/jolokia/")).POST(HttpRequest.BodyPublishers.ofString(exec)).build(),
                HttpResponse.BodyHandlers.ofString()).body());
        assertThat(refused.get("status").asInt()).as(refused.toString()).isEqualTo(403);
        assertThat(op.app.camelContext().getRouteController().getRouteStatus("pool-reconcile").isStarted()).isTrue();
        String write = "{\"type\":\"write\",\"mbean\":\"java.lang:type=Memory\",\"attribute\":\"Verbose\",\"value\":true}";
        JsonNode refusedWrite = M.readTree(HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + mgmtPort + "/jolokia/")).POST(HttpRequest.BodyPublishers.ofString(write)).build(),
                HttpResponse.BodyHandlers.ofString()).body());
        assertThat(refusedWrite.get("status").asInt()).isEqualTo(403);

        assertThat(OperatorConfig.parse().managementHost()).isEqualTo("127.0.0.1");
        assertThat(op.app.managementAddress().getAddress().isLoopbackAddress()).isTrue();
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                if (a instanceof Inet4Address && !a.isLoopbackAddress()) {
                    try (Socket s = new Socket()) {
                        boolean connected;
                        try {
                            s.connect(new InetSocketAddress(a, mgmtPort), 500);
                            connected = true;
                        } catch (java.io.IOException e) {
                            connected = false;
                        }
                        assertThat(connected).as("management port reachable on %s", a).isFalse();
                    }
                }
            }
        }
    }

    @Test
    void refusedEventWritesDoNotChangeAllocResults() throws Exception {
        start(true);
        var r = op.alloc("{\"idempotencyKey\":\"ev\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(5) + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(op.dealloc("{\"idempotencyKey\":\"ev\"}").statusCode()).isEqualTo(204);
        OperatorHarness.awaitTrue(() -> op.app.events().failed() >= 2, Duration.ofSeconds(60), "event writes refused");
        assertThat(cluster.client.v1().events().inNamespace("playpen").list().getItems()).isEmpty();
        assertThat(List.of(r.body())).allMatch(b -> b.contains("\"endpoint\""));
    }
}
