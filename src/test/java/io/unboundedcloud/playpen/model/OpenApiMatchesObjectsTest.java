package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.api.OpenApi;

/**
 * The OpenAPI schemas the operator serves (what kubectl explain prints) describe the JSON it really answers: every
 * field of a full Alloc, AllocList, Pool and PoolList (every optional part present) is declared with its JSON type,
 * and a field holding a map (labels, pods by reason) is declared as a map of its values' type.
 */
class OpenApiMatchesObjectsTest {
    private static final ObjectMapper M = new ObjectMapper();
    private static final Instant NOW = Instant.parse("2026-01-02T04:00:00.750Z");

    private static JsonNode schemas(String document, String container) throws Exception {
        JsonNode doc = M.readTree(document);
        return "v3".equals(container) ? doc.at("/components/schemas") : doc.get("definitions");
    }

    private static JsonNode resolve(JsonNode schemas, JsonNode schema) {
        if (schema.has("$ref")) {
            String ref = schema.get("$ref").asText();
            return schemas.get(ref.substring(ref.lastIndexOf('/') + 1));
        }
        return schema;
    }

    private static void walk(JsonNode schemas, JsonNode schema, JsonNode value, String path, List<String> wrong) {
        JsonNode s = resolve(schemas, schema);
        if (s == null) {
            wrong.add(path + ": no schema");
            return;
        }
        String type = s.path("type").asText();
        if (value.isNull()) {
            return;
        }
        if (value.isObject()) {
            if (!type.equals("object")) {
                wrong.add(path + ": an object, declared " + type);
                return;
            }
            JsonNode props = s.path("properties");
            JsonNode additional = s.get("additionalProperties");
            if (props.size() == 0 && (additional == null || !additional.isObject())) {
                wrong.add(path + ": a map, declared with neither properties nor additionalProperties");
                return;
            }
            value.fields().forEachRemaining(e -> {
                JsonNode field = props.get(e.getKey());
                if (field == null && additional != null && additional.isObject()) {
                    field = additional;
                }
                if (field == null) {
                    wrong.add(path + "." + e.getKey() + ": not declared");
                } else {
                    walk(schemas, field, e.getValue(), path + "." + e.getKey(), wrong);
                }
            });
        } else if (value.isArray()) {
            if (!type.equals("array")) {
                wrong.add(path + ": an array, declared " + type);
                return;
            }
            for (int i = 0; i < value.size(); i++) {
                walk(schemas, s.get("items"), value.get(i), path + "[" + i + "]", wrong);
            }
        } else {
            String actual = value.isTextual() ? "string" : value.isIntegralNumber() ? "integer"
                    : value.isNumber() ? "number" : value.isBoolean() ? "boolean" : "?";
            if (!actual.equals(type) && !(actual.equals("integer") && type.equals("number"))) {
                wrong.add(path + ": a " + actual + ", declared " + type);
            }
        }
    }

    private static List<String> mismatches(String schemaName, Object object) throws Exception {
        List<String> wrong = new ArrayList<>();
        JsonNode value = M.readTree(Json.write(object));
        for (String version : List.of("v2", "v3")) {
            JsonNode schemas = schemas("v3".equals(version) ? OpenApi.V3_GROUP : OpenApi.V2, version);
            walk(schemas, schemas.get(schemaName), value, version + ":" + schemaName.substring(
                    schemaName.lastIndexOf('.') + 1), wrong);
        }
        return wrong;
    }

    /** A pool with every optional part: unhealthy pods of both kinds, a back-off, a time to ready. */
    private static PoolStatus fullPool() {
        return new PoolStatus(PoolTarget.controlPlane("1.33.0"), true, 2, 4, 2, 1, 3, 1, 0, 2, 0,
                Map.of("CrashLoop", 1), Map.of("NotReady", 1), "h1", "k3s:1",
                new PoolBackoff.View(2, Duration.ofSeconds(40), NOW.plusSeconds(30)), false,
                NOW.minus(Duration.ofMinutes(90)), 0.5, Duration.ofMillis(12_345), 0, 0);
    }

    @Test
    void everyFieldOfAPoolAndAPoolListIsDeclaredWithItsType() throws Exception {
        PoolViews views = new PoolViews("25%");
        assertThat(mismatches(OpenApi.POOL_SCHEMA, views.object(fullPool(), NOW))).isEmpty();
        assertThat(mismatches(OpenApi.POOL_LIST_SCHEMA, views.list(List.of(fullPool()), NOW))).isEmpty();
    }

    @Test
    void everyFieldOfAnAllocAndAnAllocListIsDeclaredWithItsType() throws Exception {
        List<Pod> pods = List.of(AllocViewsTest.claimed("p1", "alice", null), AllocViewsTest.claimed("p2", "alice",
                null));
        AllocViews.Page page = AllocViews.selectMatching(pods, AllocViewsTest.IP, AllocViewsTest.HOUR_TTL, null,
                AllocViews.parseQuery(null, "limit=1", null));
        Map<String, Object> one = AllocViews.object(AllocViews.of(pods.get(0), n -> Optional.of("198.51.100.7"),
                AllocViewsTest.HOUR_TTL).orElseThrow());
        AllocViews.withKubeconfig(one, "apiVersion: v1\nkind: Config\n");
        assertThat(mismatches(OpenApi.ALLOC_SCHEMA, one)).isEmpty();
        Pod leaving = new io.fabric8.kubernetes.api.model.PodBuilder(pods.get(1)).editMetadata()
                .withDeletionTimestamp("2026-01-02T05:00:00Z").endMetadata().build();
        assertThat(mismatches(OpenApi.ALLOC_SCHEMA, AllocViews.object(AllocViews.of(leaving, AllocViewsTest.IP,
                AllocViewsTest.HOUR_TTL).orElseThrow()))).isEmpty();
        assertThat(mismatches(OpenApi.ALLOC_LIST_SCHEMA, AllocViews.list(page))).isEmpty();
    }
}
