package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * What an audit line says, from the exchange's properties alone: who (the flow's user, else the authenticated
 * caller, else the operator itself), the verb, the allocation, at most eight characters of the key hash (never more,
 * whatever a flow put there), and the outcome (a failure's answer wins over the outcome a flow had set before it
 * failed).
 */
class AuditLogFieldsTest {
    static final ObjectMapper M = new ObjectMapper();
    final CamelContext camel = new DefaultCamelContext();
    final AuditLog audit = new AuditLog(Clock.fixed(Instant.parse("2026-11-27T10:00:00Z"), ZoneOffset.UTC));

    @AfterEach
    void down() throws Exception {
        camel.close();
    }

    Exchange exchange(Map<String, Object> properties) {
        Exchange e = new DefaultExchange(camel);
        properties.forEach(e::setProperty);
        return e;
    }

    JsonNode line(Exchange e) throws Exception {
        String line = audit.line(e);
        assertThat(line.lines().count()).isEqualTo(1);
        return M.readTree(line);
    }

    @Test
    void anAllocationsLineNamesItsCallerAndAtMostEightCharactersOfTheKeyHash() throws Exception {
        Identity alice = new Identity("alice", "u-1", List.of("playpen-users"), Map.of());
        JsonNode l = line(exchange(Map.of(AuditLog.VERB, "allocate", AuditLog.OUTCOME, "allocated",
                AuditLog.ALLOCATION_ID, "playpen-runner-amd64-51820", AuditLog.KEY_HASH_PREFIX,
                "0123456789abcdef0123456789abcdef", FrontDoor.IDENTITY, alice)));
        assertThat(l.toString()).isEqualTo("{\"time\":\"2026-11-27T10:00:00Z\",\"user\":\"alice\",\"verb\":\"allocate\","
                + "\"allocation\":\"playpen-runner-amd64-51820\",\"keyHashPrefix\":\"01234567\",\"outcome\":\"allocated\"}");
    }

    @Test
    void whoIsTheFlowsUserElseTheCallerElseTheOperator() throws Exception {
        Identity alice = new Identity("alice", "u-1", List.of(), Map.of());
        assertThat(line(exchange(Map.of(AuditLog.VERB, "expire", AuditLog.USER, "system:ttl", FrontDoor.IDENTITY,
                alice))).get("user").asText()).isEqualTo("system:ttl");
        assertThat(line(exchange(Map.of(AuditLog.VERB, "allocate", FrontDoor.IDENTITY, alice))).get("user").asText())
                .isEqualTo("alice");
        JsonNode bare = line(exchange(Map.of(AuditLog.VERB, "expire")));
        assertThat(bare.get("user").asText()).isEqualTo(AuditLog.OPERATOR_USER);
        assertThat(bare.get("allocation").asText()).isEmpty();
        assertThat(bare.get("keyHashPrefix").asText()).isEmpty();
    }

    @Test
    void theOutcomeIsTheFailuresAnswerWhenItFailedElseTheFlowsElseTheAnswerElseUnknown() throws Exception {
        Exchange failed = exchange(Map.of(AuditLog.VERB, "allocate", AuditLog.OUTCOME, "allocated",
                ReplyWriter.RESULT, "conflict"));
        failed.setException(new IllegalStateException("conflict"));
        assertThat(line(failed).get("outcome").asText()).isEqualTo("conflict");
        Exchange caught = exchange(Map.of(AuditLog.VERB, "allocate", AuditLog.OUTCOME, "allocated",
                ReplyWriter.RESULT, "forbidden", Exchange.EXCEPTION_CAUGHT, new SecurityException("no")));
        assertThat(line(caught).get("outcome").asText()).as("handled by the errors configuration").isEqualTo("forbidden");
        assertThat(line(exchange(Map.of(AuditLog.VERB, "allocate", AuditLog.OUTCOME, "replayed", ReplyWriter.RESULT,
                "success"))).get("outcome").asText()).isEqualTo("replayed");
        assertThat(line(exchange(Map.of(AuditLog.VERB, "deallocate", ReplyWriter.RESULT, "notFound"))).get("outcome")
                .asText()).isEqualTo("notFound");
        // failed before any answer was chosen: the flow's outcome so far
        Exchange early = exchange(Map.of(AuditLog.VERB, "allocate", AuditLog.OUTCOME, "claiming"));
        early.setException(new IllegalStateException("boom"));
        assertThat(line(early).get("outcome").asText()).isEqualTo("claiming");
        assertThat(line(exchange(Map.of(AuditLog.VERB, "allocate"))).get("outcome").asText()).isEqualTo("unknown");
    }

    @Test
    void aClaimedPodsKeyHashPrefixIsItsFirstEightCharacters() {
        String hash = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
        assertThat(audit.keyHashPrefix(new PodBuilder().withNewMetadata().withName("p")
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, hash).endMetadata().build())).isEqualTo("fedcba98");
    }
}
