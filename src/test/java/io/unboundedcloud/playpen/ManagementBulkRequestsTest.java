package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * What one bulk Jolokia request can cost the management listener's JVM. A bulk POST of a few kilobytes can ask for
 * the whole MBean tree hundreds of times over; answered at once, it holds every answer in the heap together and the
 * operator's JVM (which exits on running out of memory) stops. The listener runs in a child JVM with a small heap and
 * the image's exit-on-OutOfMemoryError flag ({@link ManagementChildJvm}).
 */
class ManagementBulkRequestsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The most requests one bulk POST may hold (docs/security.md, "The management listener"). */
    static final int MAX_REQUESTS = 100;

    static HttpResponse<String> post(int port, String body) throws Exception {
        return HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/jolokia/"))
                        .timeout(Duration.ofSeconds(300)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static String bulk(int n, String request) {
        return "[" + String.join(",", Collections.nCopies(n, request)) + "]";
    }

    @Test
    void aBulkOfWholeTreeListsIsAnsweredWithoutExhaustingTheHeap(@TempDir Path dir) throws Exception {
        // 1,500 MBeans: a tree of about 2 MB, like the operator's with its Camel MBeans
        try (ManagementChildJvm child = ManagementChildJvm.start(dir, List.of("-Xmx64m", "-XX:+UseSerialGC",
                "-XX:+ExitOnOutOfMemoryError", "-Dplaypen.test.filler-mbeans=1500"), "bulk_probe")) {
            int n = MAX_REQUESTS;
            HttpResponse<String> r = null;
            try {
                r = post(child.port, bulk(n, "{\"type\":\"list\"}"));
            } catch (java.io.IOException e) {
                // the connection ended without an answer: the child's output says why
            }
            assertThat(child.exited()).as("the child JVM after a bulk of %d lists", n).isNull();
            assertThat(r).isNotNull();
            assertThat(r.statusCode()).isEqualTo(200);
            JsonNode answers = JSON.readTree(r.body());
            assertThat(answers.isArray()).isTrue();
            assertThat(answers).hasSize(n).allSatisfy(a -> {
                assertThat(a.path("status").asInt()).isEqualTo(200);
                assertThat(a.path("value").has("java.lang")).isTrue();
                assertThat(a.path("value").path("playpen.test").size()).isEqualTo(1500);
            });
            // each request of a bulk is answered in its place, a refused one too, as Jolokia answers a bulk
            HttpResponse<String> mixed = post(child.port, "[{\"type\":\"version\"},{\"type\":\"exec\","
                    + "\"mbean\":\"java.lang:type=Memory\",\"operation\":\"gc\"},{\"type\":\"read\","
                    + "\"mbean\":\"java.lang:type=Runtime\",\"attribute\":\"Uptime\"}]");
            assertThat(mixed.statusCode()).isEqualTo(200);
            JsonNode three = JSON.readTree(mixed.body());
            assertThat(three).hasSize(3);
            assertThat(three.get(0).path("value").path("agent").asText()).isNotEmpty();
            assertThat(three.get(1).path("status").asInt()).isEqualTo(403);
            assertThat(three.get(2).path("status").asInt()).isEqualTo(200);
            assertThat(three.get(2).path("request").path("attribute").asText()).isEqualTo("Uptime");
            // and it still answers everything else
            HttpResponse<String> version = post(child.port, "{\"type\":\"version\"}");
            assertThat(version.statusCode()).isEqualTo(200);
            assertThat(JSON.readTree(version.body()).path("value").path("agent").asText()).isNotEmpty();
        }
    }

    @Test
    void aBulkOfMoreRequestsThanTheCapIsRefusedAndRunsNone(@TempDir Path dir) throws Exception {
        try (ManagementChildJvm child = ManagementChildJvm.start(dir,
                List.of("-Xmx48m", "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError"), "bulk_probe")) {
            HttpResponse<String> r = post(child.port, bulk(MAX_REQUESTS + 1, "{\"type\":\"list\"}"));
            assertThat(child.exited()).isNull();
            assertThat(r.statusCode()).isEqualTo(413);
            JsonNode refusal = JSON.readTree(r.body());
            assertThat(refusal.path("status").asInt()).isEqualTo(413);
            assertThat(refusal.path("error").asText()).contains(String.valueOf(MAX_REQUESTS))
                    .contains("split");
        }
    }
}
