package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

/** The pod columns kubectl shows, as kube-apiserver's printer fills them. (Through the real kubectl: DevClusterTest.) */
class PodTablesTest {
    static final Instant NOW = Instant.parse("2026-11-25T12:10:00Z");

    static JsonNode pod(String json) throws Exception {
        return PodTables.parse(json.getBytes(StandardCharsets.UTF_8));
    }

    static final String META = "\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"2026-11-25T12:00:00Z\"";
    static final String SPEC = "\"spec\":{\"nodeName\":\"dev-amd64\",\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}";

    @Test
    void runningAndReady() throws Exception {
        JsonNode p = pod("{" + META + "}," + SPEC + ",\"status\":{\"phase\":\"Running\",\"podIP\":\"10.244.0.10\","
                + "\"containerStatuses\":[{\"ready\":true,\"restartCount\":1,\"state\":{\"running\":{}}},"
                + "{\"ready\":true,\"restartCount\":2,\"state\":{\"running\":{}}}]}}");
        assertThat(PodTables.cells(p, NOW)).containsExactly("p", "2/2", "Running", 3L, "10m", "10.244.0.10", "dev-amd64",
                "<none>", "<none>");
    }

    @Test
    void pendingWithoutPhaseOrStatus() throws Exception {
        JsonNode p = pod("{" + META + "},\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
        assertThat(PodTables.cells(p, NOW)).containsExactly("p", "0/1", "Pending", 0L, "10m", "<none>", "<none>",
                "<none>", "<none>");
    }

    @Test
    void waitingReasonAndTerminating() throws Exception {
        JsonNode waiting = pod("{" + META + "}," + SPEC + ",\"status\":{\"phase\":\"Pending\",\"containerStatuses\":["
                + "{\"ready\":false,\"state\":{\"waiting\":{\"reason\":\"ImagePullBackOff\"}}}]}}");
        assertThat(PodTables.cells(waiting, NOW).get(2)).isEqualTo("ImagePullBackOff");
        JsonNode terminating = pod("{" + META + ",\"deletionTimestamp\":\"2026-11-25T12:09:00Z\"}," + SPEC
                + ",\"status\":{\"phase\":\"Running\"}}");
        assertThat(PodTables.cells(terminating, NOW).get(2)).isEqualTo("Terminating");
    }

    @Test
    void aListBecomesOneRowPerPodWithItsMetadata() throws Exception {
        JsonNode list = pod("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"7\"},\"items\":[{" + META
                + ",\"labels\":{\"x\":\"y\"}}," + SPEC + "}]}");
        JsonNode table = PodTables.parse(PodTables.table(list, "", NOW).getBytes(StandardCharsets.UTF_8));
        assertThat(table.get("kind").asText()).isEqualTo("Table");
        assertThat(table.get("apiVersion").asText()).isEqualTo("meta.k8s.io/v1");
        assertThat(table.at("/metadata/resourceVersion").asText()).isEqualTo("7");
        assertThat(table.get("columnDefinitions").findValuesAsText("name")).containsExactly("Name", "Ready", "Status",
                "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates");
        assertThat(table.at("/rows/0/object/kind").asText()).isEqualTo("PartialObjectMetadata");
        assertThat(table.at("/rows/0/object/metadata/labels/x").asText()).isEqualTo("y");
        assertThat(PodTables.parse(PodTables.table(list, "None", NOW).getBytes(StandardCharsets.UTF_8)).at("/rows/0")
                .has("object")).isFalse();
    }

    @Test
    void onlyPodGetsThatAskForATableAreBuilt() {
        String table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
        assertThat(PodTables.wanted("GET", "/api/v1/namespaces/playpen/pods", "", table)).isTrue();
        assertThat(PodTables.wanted("GET", "/api/v1/pods", "limit=500", table)).isTrue();
        assertThat(PodTables.wanted("GET", "/api/v1/namespaces/playpen/pods/x", "", table)).isTrue();
        for (List<String> no : List.of(List.of("GET", "/api/v1/namespaces/playpen/pods", "", "application/json"),
                List.of("POST", "/api/v1/namespaces/playpen/pods", "", table),
                List.of("GET", "/api/v1/namespaces/playpen/pods/x/log", "", table),
                List.of("GET", "/api/v1/namespaces/playpen/pods", "watch=true", table),
                List.of("GET", "/api/v1/nodes", "", table))) {
            assertThat(PodTables.wanted(no.get(0), no.get(1), no.get(2), no.get(3))).as(no.toString()).isFalse();
        }
    }

    @Test
    void rowsComeInTheApiServersOrder() throws Exception {
        JsonNode list = pod("{\"kind\":\"PodList\",\"items\":["
                + "{\"metadata\":{\"namespace\":\"b\",\"name\":\"a\"}},"
                + "{\"metadata\":{\"namespace\":\"a\",\"name\":\"z\"}},"
                + "{\"metadata\":{\"namespace\":\"a\",\"name\":\"m\"}}]}");
        JsonNode table = PodTables.parse(PodTables.table(list, "", NOW).getBytes(StandardCharsets.UTF_8));
        assertThat(table.get("rows").findValues("cells")).extracting(c -> c.get(0).asText()).containsExactly("m", "z", "a");
    }
}
