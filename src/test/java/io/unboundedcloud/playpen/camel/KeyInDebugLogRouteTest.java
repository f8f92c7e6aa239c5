package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.LinkedHashMap;
import java.util.Map;

import javax.xml.parsers.DocumentBuilderFactory;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;

import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The idempotency key is an allocation's password: it is never logged, also with Camel's own loggers at DEBUG (what an
 * operator sets to see how a request went through the routes). The loggers' levels are the shipped logback.xml's
 * (the tests' own configuration keeps Camel at WARN), with org.apache.camel then raised to DEBUG.
 */
class KeyInDebugLogRouteTest {
    static TestCluster cluster;
    static OperatorHarness op;
    static final Logger CAMEL = (Logger) LoggerFactory.getLogger("org.apache.camel");
    static final Map<Logger, Level> before = new LinkedHashMap<>();

    @RegisterExtension
    final CapturedLogs camelLog = CapturedLogs.named("org.apache.camel");

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster);
        var loggers = DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(KeyInDebugLogRouteTest.class.getResourceAsStream("/logback.xml")).getElementsByTagName("logger");
        for (int i = 0; i < loggers.getLength(); i++) {
            var e = (org.w3c.dom.Element) loggers.item(i);
            setLevel((Logger) LoggerFactory.getLogger(e.getAttribute("name")), Level.toLevel(e.getAttribute("level")));
        }
        setLevel(CAMEL, Level.DEBUG);
    }

    @AfterAll
    static void down() {
        before.forEach(Logger::setLevel);
        op.close();
        cluster.close();
    }

    static void setLevel(Logger logger, Level level) {
        before.putIfAbsent(logger, logger.getLevel());
        logger.setLevel(level);
    }

    @Test
    void anIdempotencyKeyHeaderIsNotInCamelsDebugLog() throws Exception {
        String key = "debug-log-key-" + System.nanoTime();
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url("/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs")))
                .header("Idempotency-Key", key).POST(HttpRequest.BodyPublishers.noBody());
        HttpResponse<String> r = op.frontProxy().send(OperatorHarness.asUser(b, "alice", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(204);
        assertThat(camelLog.lines()).as("Camel's DEBUG lines of the request").isNotEmpty();
        assertThat(camelLog.lines()).extracting(ILoggingEvent::getFormattedMessage).noneMatch(m -> m.contains(key));
    }
}
