package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A request to /apis refused before any flow took it (no or an untrusted client certificate, no user) is audited
 * too: one line with the verb its method and path name, who (nobody authenticated) and why it was refused, and
 * nothing the request carried beyond that.
 */
class RefusalAuditRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String DEALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs";
    static final String DISCOVERY = "/apis/playpen.unbounded-cloud.io/v1alpha1";
    static TestCluster cluster;
    static OperatorHarness op;

    @RegisterExtension
    final CapturedLogs audit = CapturedLogs.named("playpen.audit");

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        op = new OperatorHarness(cluster);
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    HttpResponse<String> send(HttpClient http, HttpRequest.Builder b) throws Exception {
        return http.send(b.timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The one audit line written so far, once it is there. */
    JsonNode theAuditLine() throws Exception {
        OperatorHarness.awaitTrue(() -> !audit.lines().isEmpty(), Duration.ofSeconds(60), "an audit line");
        List<String> lines = audit.lines().stream().map(e -> e.getFormattedMessage()).toList();
        assertThat(lines).hasSize(1);
        assertThat(lines.get(0)).doesNotContain("secret-key-0123").doesNotContain("mallory");
        return M.readTree(lines.get(0));
    }

    @Test
    void aDeallocWithoutAClientCertificateIsAudited() throws Exception {
        HttpResponse<String> r = send(OperatorHarness.client(null), HttpRequest.newBuilder(URI.create(op.url(DEALLOCS)))
                .header("Idempotency-Key", "secret-key-0123").header("X-Remote-User", "mallory")
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(403);
        JsonNode line = theAuditLine();
        assertThat(line.get("verb").asText()).isEqualTo("deallocate");
        assertThat(line.get("user").asText()).isEqualTo("system:anonymous");
        assertThat(line.get("outcome").asText()).isEqualTo("forbidden");
        assertThat(line.get("reason").asText()).isEqualTo("no client certificate");
    }

    @Test
    void aDiscoveryReadWithoutAClientCertificateIsAudited() throws Exception {
        HttpResponse<String> r = send(OperatorHarness.client(null),
                HttpRequest.newBuilder(URI.create(op.url(DISCOVERY))).GET());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(403);
        JsonNode line = theAuditLine();
        assertThat(line.get("verb").asText()).isEqualTo("get");
        assertThat(line.get("user").asText()).isEqualTo("system:anonymous");
        assertThat(line.get("reason").asText()).isEqualTo("no client certificate");
    }

    @Test
    void aDeallocFromTheFrontProxyWithoutAUserIsAudited() throws Exception {
        HttpResponse<String> r = send(op.frontProxy(), HttpRequest.newBuilder(URI.create(op.url(DEALLOCS)))
                .header("Idempotency-Key", "secret-key-0123").POST(HttpRequest.BodyPublishers.noBody()));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(403);
        JsonNode line = theAuditLine();
        assertThat(line.get("verb").asText()).isEqualTo("deallocate");
        assertThat(line.get("user").asText()).isEqualTo("system:anonymous");
        assertThat(line.get("outcome").asText()).isEqualTo("forbidden");
        assertThat(line.get("reason").asText()).isEqualTo("missing remote user");
    }
}
