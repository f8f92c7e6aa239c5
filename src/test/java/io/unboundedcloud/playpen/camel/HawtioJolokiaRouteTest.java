package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Optional;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Replays the Jolokia requests Hawtio 2.17.7's JMX and Camel plugins make (taken from its app bundle: JMX
 * tree list, route diagram {@code dumpRoutesAsXml()}, diagram statistics {@code dumpRoutesStatsAsXml},
 * route profile {@code dumpRouteStatsAsXml(boolean,boolean)}, attribute reads) against the management
 * listener, and asserts that every state-changing request is refused and changed nothing.
 */
class HawtioJolokiaRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final List<String> ROUTES = List.of("https-ingress", "alloc", "dealloc", "discovery", "health",
            "pool-reconcile", "ttl-expiry", "ca-bundle", "trust-refresh");
    static TestCluster cluster;
    static OperatorHarness op;
    static int mgmtPort;
    static String context;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0", "--reconcile-interval=10m");
        mgmtPort = op.app.managementAddress().getPort();
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        var r = op.alloc("{\"idempotencyKey\":\"hawtio\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        context = "org.apache.camel:context=" + op.app.camelContext().getManagementName() + ",type=context,name=\""
                + op.app.camelContext().getName() + "\"";
    }

    @AfterAll
    static void down() {
        op.close();
        cluster.close();
    }

    static String route(String id) {
        return "org.apache.camel:context=" + op.app.camelContext().getManagementName() + ",type=routes,name=\"" + id + "\"";
    }

    static JsonNode post(String json) throws Exception {
        return post(json, Optional.empty());
    }

    static JsonNode post(String json, Optional<String> origin) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + mgmtPort + "/jolokia/"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json));
        origin.ifPresent(o -> b.header("Origin", o));
        HttpResponse<String> resp = HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
        assertThat(resp.headers().firstValue("Access-Control-Allow-Origin")).as("no CORS origin echoed").isEmpty();
        return M.readTree(resp.body());
    }

    static JsonNode ok(String json) throws Exception {
        JsonNode r = post(json);
        assertThat(r.path("status").asInt()).as("%s -> %s", json, r).isEqualTo(200);
        return r.get("value");
    }

    static String q(String s) throws Exception {
        return M.writeValueAsString(s);
    }

    @Test
    void hawtioJmxTreeAndAttributeViewsWork() throws Exception {
        assertThat(ok("{\"type\":\"version\"}").path("agent").asText()).isNotEmpty();
        // the JMX tree: Jolokia's list with Hawtio's default options
        JsonNode tree = ok("{\"type\":\"list\",\"config\":{\"maxDepth\":7,\"maxCollectionSize\":50000,"
                + "\"ignoreErrors\":true,\"canonicalNaming\":false}}");
        assertThat(tree.has("org.apache.camel")).as("camel domain in the tree").isTrue();
        assertThat(tree.has("java.lang")).isTrue();
        assertThat(tree.toString()).as("the whole tree within the caps on one answer")
                .doesNotContain("[Object limit exceeded]");
        // the Operations tab lists an MBean's operations (listing is not invoking)
        JsonNode ops = ok("{\"type\":\"list\",\"path\":" + q(route("alloc").replace("org.apache.camel:", "org.apache.camel/"))
                + ",\"config\":{\"ignoreErrors\":true}}");
        assertThat(ops.path("op").has("stop")).isTrue();
        assertThat(ok("{\"type\":\"read\",\"mbean\":" + q(context) + ",\"attribute\":\"CamelVersion\"}").asText())
                .startsWith("4.18");
        JsonNode attrs = ok("{\"type\":\"read\",\"mbean\":" + q(route("alloc")) + "}");
        assertThat(attrs.path("ExchangesTotal").asLong()).isGreaterThanOrEqualTo(1);
        assertThat(attrs.path("RouteId").asText()).isEqualTo("alloc");
        // the Camel routes table reads every route with a pattern
        JsonNode all = ok("{\"type\":\"read\",\"mbean\":\"org.apache.camel:type=routes,*\",\"attribute\":[\"State\",\"ExchangesTotal\"]}");
        assertThat(all.size()).isGreaterThanOrEqualTo(ROUTES.size());
        assertThat(ok("{\"type\":\"read\",\"mbean\":\"java.lang:type=Memory\",\"attribute\":\"HeapMemoryUsage\"}")
                .path("used").asLong()).isPositive();
        assertThat(ok("{\"type\":\"search\",\"mbean\":\"org.apache.camel:type=context,*\"}").toString())
                .contains("type=context");
    }

    @Test
    void hawtioRouteDiagramSourceAndStatisticsWork() throws Exception {
        String xml = ok("{\"type\":\"exec\",\"mbean\":" + q(context) + ",\"operation\":\"dumpRoutesAsXml()\"}").asText();
        for (String id : ROUTES) {
            assertThat(xml).as("route %s in the diagram source", id).contains("id=\"" + id + "\"");
        }
        assertThat(xml).contains("<bean").contains("<choice");
        // the diagrams show the steps a person would name, side effects included
        for (String node : List.of("alloc-authorize", "alloc-read-body", "alloc-parse", "alloc-replay-or-claim",
                "alloc-claimed-or-replayed", "alloc-event", "alloc-audit", "alloc-answer", "dealloc-delete-claimed",
                "dealloc-event", "dealloc-audit", "ttl-expired", "ttl-event", "ttl-audit", "pool-created", "kube-event",
                "record-event", "audit", "audit-off-the-answer-path", "audit-line", "write-audit-line")) {
            assertThat(xml).as("node %s in the diagram source", node).contains("id=\"" + node + "\"");
        }
        assertThat(xml).contains("<wireTap").contains("<split").contains("uri=\"direct:kube-event\"")
                .contains("uri=\"direct:audit\"");
        String stats = ok("{\"type\":\"exec\",\"mbean\":" + q(context)
                + ",\"operation\":\"dumpRoutesStatsAsXml\",\"arguments\":[true,true]}").asText();
        assertThat(stats).contains("<routeStat").contains("<processorStat").contains("id=\"alloc\"");
        String profile = ok("{\"type\":\"exec\",\"mbean\":" + q(route("alloc"))
                + ",\"operation\":\"dumpRouteStatsAsXml(boolean,boolean)\",\"arguments\":[false,true]}").asText();
        assertThat(profile).contains("<routeStat").contains("exchangesTotal=\"");
        String one = ok("{\"type\":\"exec\",\"mbean\":" + q(route("alloc")) + ",\"operation\":\"dumpRouteAsXml(boolean)\","
                + "\"arguments\":[false]}").asText();
        assertThat(one).contains("id=\"alloc\"");
    }

    @Test
    void everyStateChangingRequestIsRefusedAndChangesNothing() throws Exception {
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        long before = (Long) jmx.getAttribute(new ObjectName(route("alloc")), "ExchangesTotal");
        List<String> refused = List.of(
                exec(route("alloc"), "stop()"), exec(route("alloc"), "suspend()"), exec(route("alloc"), "remove()"),
                exec(route("alloc"), "reset()"), exec(route("alloc"), "reset(boolean)", "true"),
                exec(route("alloc"), "start()"), exec(route("alloc"), "resume()"),
                exec(route("alloc"), "updateRouteFromXml(java.lang.String)", "\"<route/>\""),
                exec(context, "stop()"), exec(context, "suspend()"), exec(context, "resume()"), exec(context, "start()"),
                exec(context, "reset()"), exec(context, "restart()"),
                exec(context, "addOrUpdateRoutesFromXml(java.lang.String)", "\"<routes/>\""),
                exec(context, "sendBody(java.lang.String,java.lang.Object)", "\"direct:alloc\"", "\"{}\""),
                exec(context, "sendStringBody(java.lang.String,java.lang.String)", "\"direct:dealloc\"", "\"{}\""),
                exec(context, "requestBody(java.lang.String,java.lang.Object)", "\"direct:alloc\"", "\"{}\""),
                exec("java.lang:type=Memory", "gc()"),
                exec("com.sun.management:type=HotSpotDiagnostic", "dumpHeap(java.lang.String,boolean)", "\"/tmp/h\"", "true"),
                exec("com.sun.management:type=DiagnosticCommand", "vmSystemProperties()"),
                "{\"type\":\"write\",\"mbean\":" + q(context) + ",\"attribute\":\"Tracing\",\"value\":true}",
                "{\"type\":\"write\",\"mbean\":\"java.lang:type=Memory\",\"attribute\":\"Verbose\",\"value\":true}",
                "{\"type\":\"notification\",\"command\":\"register\"}",
                "{\"type\":\"notification\",\"command\":\"add\",\"client\":\"x\",\"mode\":\"pull\",\"mbean\":\"JMImplementation:type=MBeanServerDelegate\"}");
        for (String request : refused) {
            JsonNode r = post(request);
            assertThat(r.path("status").asInt()).as("%s -> %s", request, r).isEqualTo(403);
        }
        for (String id : ROUTES) {
            assertThat(op.app.camelContext().getRouteController().getRouteStatus(id).isStarted()).as(id).isTrue();
        }
        assertThat(op.app.camelContext().isTracing()).isFalse();
        assertThat((Long) jmx.getAttribute(new ObjectName(route("alloc")), "ExchangesTotal")).as("not reset").isEqualTo(before);
    }

    @Test
    void notificationRegistrationsAreRefusedInEveryForm() throws Exception {
        HttpClient client = HttpClient.newHttpClient();
        List<String> forms = List.of("{\"type\":\"notification\",\"command\":\"register\"}",
                "{\"type\":\"NOTIFICATION\",\"command\":\"register\"}",
                "[{\"type\":\"version\"},{\"type\":\"notification\",\"command\":\"register\"}]",
                " {\"command\":\"register\", \"type\" : \" notification\"}");
        for (int i = 0; i < 400; i++) {
            HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + mgmtPort + "/jolokia/"))
                    .POST(HttpRequest.BodyPublishers.ofString(forms.get(i % forms.size()))).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(403);
            assertThat(r.body()).doesNotContain("\"id\"").contains("notifications are disabled");
        }
        for (String get : List.of("/jolokia/notification/register", "/jolokia//Notification/register")) {
            HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + mgmtPort + get)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(get).isEqualTo(403);
        }
    }

    @Test
    void noWebPageIsAnsweredWhileNoOriginIsConfigured() throws Exception {
        for (String origin : List.of("http://evil.example", "http://localhost:8080", "null")) {
            JsonNode r = post("{\"type\":\"version\"}", Optional.of(origin));
            assertThat(r.path("status").asInt()).as(origin).isEqualTo(403);
            assertThat(r.has("value")).isFalse();
        }
        HttpResponse<String> preflight = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + mgmtPort + "/jolokia/")).method("OPTIONS", HttpRequest.BodyPublishers.noBody())
                .header("Origin", "http://evil.example").header("Access-Control-Request-Method", "POST").build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(preflight.statusCode()).isEqualTo(403);
        assertThat(preflight.headers().firstValue("Access-Control-Allow-Origin")).isEmpty();
    }

    static String exec(String mbean, String operation, String... args) throws Exception {
        return "{\"type\":\"exec\",\"mbean\":" + q(mbean) + ",\"operation\":" + q(operation) + ",\"arguments\":["
                + String.join(",", args) + "]}";
    }
}
