package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * The management guard's rules taken one at a time. Which Host headers the listener answers (a DNS name of an
 * attacker's, rebound to this address, must not reach it): IP literals, localhost, cluster-internal names and
 * configured hosts, with or without a port; the rest, and what only looks like one of them, is refused. Which
 * Jolokia GET paths pass, how a query is split as Jolokia splits it, and refusals that echo what was sent without
 * its control characters.
 */
class ManagementGuardRulesTest {
    final ManagementGuard guard = new ManagementGuard(null, ManagementAccess.of(List.of(), List.of("ops.example")));

    @Test
    void ipv6LiteralsPassOnlyWhole() {
        for (String host : List.of("[::1]", "[::1]:9876", "[fe80::1%25eth0]:80", "[2001:db8::7]")) {
            assertThat(guard.hostAllowed(host)).as(host).isTrue();
        }
        // a bracket that does not close the host, an empty literal, or a name glued after it
        for (String host : List.of("[]", "[]:80", "[::1", "[::1]evil.example", "[::1].attacker.example:80")) {
            assertThat(guard.hostAllowed(host)).as(host).isFalse();
        }
    }

    @Test
    void namesPassWhenLocalClusterInternalOrConfigured() {
        for (String host : List.of("127.0.0.1", "10.1.2.3:9876", "localhost", "LOCALHOST:80", "app.localhost",
                "playpen-operator-metrics.playpen-system.svc:9876", "x.playpen.svc.cluster.local.", "ops.example:9876",
                "Ops.Example.")) {
            assertThat(guard.hostAllowed(host)).as(host).isTrue();
        }
        for (String host : List.of("", ":80", ".", "attacker.example", "localhost.attacker.example",
                "svc.attacker.example", "ops.example.attacker.example", "1.2.3.4.attacker.example",
                "evil-localhost")) {
            assertThat(guard.hostAllowed(host)).as(host).isFalse();
        }
    }

    @Test
    void aGetPassesWithAReadOnlyTypeOrNoneAndNotificationsAreNamedInTheirRefusal() {
        for (String path : List.of("", "/", "//", "/version", "read/java.lang:type=Memory", "/LIST", "/exec/x/y",
                "/search/*:*")) {
            assertThat(ManagementGuard.getRefusal(path)).as(path).isNull();
        }
        assertThat(ManagementGuard.getRefusal("/write/java.lang:type=Memory/Verbose/true"))
                .isEqualTo(new ManagementGuard.Refusal(403, "request type \"write\" is not allowed on this agent"
                        + " (allowed: exec, list, read, search, version)"));
        assertThat(ManagementGuard.getRefusal("/notification/register").message())
                .isEqualTo("notifications are disabled on this agent");
    }

    @Test
    void aQueryIsSplitAsJolokiaSplitsIt() {
        assertThat(ManagementGuard.jolokiaParameters("=x&p=%2Fread&flag&p=2")).isEqualTo(Map.of("", List.of("x"),
                "p", List.of("/read", "2"), "flag", List.of("")));
        assertThat(ManagementGuard.jolokiaParameters(null)).isEmpty();
        assertThat(ManagementGuard.queryRefusal(ManagementGuard.jolokiaParameters("p=1&p=2")).status())
                .isEqualTo(400);
        assertThat(ManagementGuard.queryRefusal(ManagementGuard.jolokiaParameters("%74arget=x")).status())
                .as("a decoded name").isEqualTo(403);
    }

    @Test
    void refusalsShowWhatWasSentWithoutItsControlCharactersAndAtMostAHundredOfThem() {
        assertThat(ManagementGuard.printable("a\u0000b\r\nc\u2028d\u2029\u0085é"))
                .isEqualTo("\"a?b??c?d??é\"");
        assertThat(ManagementGuard.printable("x".repeat(150))).isEqualTo("\"" + "x".repeat(100) + "\"");
        assertThat(guard.browser("http://evil.example\r\nSet-Cookie: a=b", null, null).message())
                .startsWith("requests from web pages are refused: origin \"http://evil.example??Set-Cookie: a=b\"");
    }

    static ManagementGuard.Refusal postRefusal(byte[] body) {
        return ManagementGuard.checkPost(body).refusal();
    }

    static ManagementGuard.Refusal postRefusal(String body) {
        return postRefusal(body.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    @Test
    void aPostBodyIsOneJsonObjectOrArrayOfReadOnlyRequestsInUtf8AndJolokiaGetsItsParseInAscii() {
        assertThat(postRefusal(new byte[] {'{', (byte) 0xC3, '}'})).isEqualTo(
                new ManagementGuard.Refusal(400, "request body is not UTF-8"));
        for (String notOne : List.of("{", "{} {}", "1", "\"read\"", "null", "")) {
            assertThat(postRefusal(notOne)).as(notOne).isEqualTo(
                    new ManagementGuard.Refusal(400, "request body is not one JSON object or array"));
        }
        assertThat(postRefusal("[{\"type\":\"version\"},1]").message())
                .isEqualTo("every request of a bulk request must be a JSON object");
        assertThat(postRefusal("{\"type\":1}").message()).isEqualTo("a request needs a type");
        assertThat(postRefusal("[{\"type\":\"read\"},{\"type\":\"write\"}]").status()).isEqualTo(403);
        assertThat(postRefusal("{\"type\":\"read\",\" Target \":{\"url\":\"x\"}}").status()).isEqualTo(403);
        assertThat(postRefusal("{\"type\":\"read\",\"options\":{\"targetId\":\"x\"}}").status()).isEqualTo(403);

        ManagementGuard.Checked ok = ManagementGuard.checkPost(
                "{\"type\":\"READ\",\"mbean\":\"caf\u00e9:type=x\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        assertThat(ok.refusal()).isNull();
        assertThat(new String(ok.body(), java.nio.charset.StandardCharsets.US_ASCII))
                .isEqualTo("{\"type\":\"READ\",\"mbean\":\"caf\\u00E9:type=x\"}");
    }
}
