package io.unboundedcloud.playpen.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.api.OpenApi;
import io.unboundedcloud.playpen.model.AllocRequestParser;

/**
 * docs/api.md against what the operator serves: the Alloc fields and the read paths are generated from the OpenAPI
 * document the operator serves at /openapi/v3/apis/playpen.unbounded-cloud.io/v1alpha1 (kubectl explain reads the
 * same), and the alloc body table names exactly the fields the parser reads. Regenerate with
 * {@code mvn -o -q test -Dtest=ApiDocTest -Ddocs.write=true}.
 */
class ApiDocTest {
    static final Path DOC = Path.of("docs/api.md");
    static final ObjectMapper M = new ObjectMapper();

    static JsonNode served() throws Exception {
        return M.readTree(OpenApi.V3_GROUP);
    }

    /** One row per field of Alloc, nested fields by their dotted path, in the document's order. */
    static String allocFields() throws Exception {
        JsonNode alloc = served().at("/components/schemas/" + OpenApi.ALLOC_SCHEMA.replace("/", "~1"));
        StringBuilder sb = new StringBuilder("| field | type | description |\n| --- | --- | --- |\n");
        fields(alloc.get("properties"), "", sb);
        return sb.toString();
    }

    private static void fields(JsonNode properties, String prefix, StringBuilder sb) {
        for (Iterator<Map.Entry<String, JsonNode>> it = properties.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> f = it.next();
            String name = prefix + f.getKey();
            JsonNode schema = f.getValue();
            sb.append("| `").append(name).append("` | ").append(schema.path("type").asText()).append(" | ")
                    .append(ConfigurationDocTest.cell(schema.path("description").asText())).append(" |\n");
            if (schema.has("properties")) {
                fields(schema.get("properties"), name + ".", sb);
            }
        }
    }

    /** The read API's paths and methods with their descriptions, as served. */
    static String readPaths() throws Exception {
        StringBuilder sb = new StringBuilder("| method | path | what |\n| --- | --- | --- |\n");
        for (Iterator<Map.Entry<String, JsonNode>> it = served().get("paths").fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> p = it.next();
            for (Iterator<Map.Entry<String, JsonNode>> ops = p.getValue().fields(); ops.hasNext();) {
                Map.Entry<String, JsonNode> op = ops.next();
                sb.append("| ").append(op.getKey().toUpperCase(java.util.Locale.ROOT)).append(" | `").append(p.getKey())
                        .append("` | ").append(ConfigurationDocTest.cell(op.getValue().path("description").asText()))
                        .append(" |\n");
            }
        }
        return sb.toString();
    }

    @Test
    void theAllocFieldsAreTheServedSchema() throws Exception {
        assertThat(GeneratedSection.checkOrWrite(DOC, "alloc-fields", allocFields()))
                .as("docs/api.md is out of date: run mvn -o -q test -Dtest=ApiDocTest -Ddocs.write=true")
                .isEqualTo(allocFields());
    }

    @Test
    void theReadPathsAreTheServedOnes() throws Exception {
        assertThat(GeneratedSection.checkOrWrite(DOC, "read-paths", readPaths()))
                .as("docs/api.md is out of date: run mvn -o -q test -Dtest=ApiDocTest -Ddocs.write=true")
                .isEqualTo(readPaths());
    }

    /** The first column of the alloc body table (the one headed "| field | type | rules |"). */
    @Test
    void theAllocBodyTableNamesExactlyTheFieldsTheParserReads() throws Exception {
        List<String> documented = new ArrayList<>();
        boolean in = false;
        for (String line : Files.readAllLines(DOC)) {
            if (line.startsWith("| field | type | rules |")) {
                in = true;
                continue;
            }
            if (in && line.startsWith("| ---")) {
                continue;
            }
            if (in && !line.startsWith("|")) {
                break;
            }
            if (in) {
                documented.add(line.substring(line.indexOf('`') + 1, line.indexOf('`', line.indexOf('`') + 1)));
            }
        }
        assertThat(documented).containsExactlyElementsOf(AllocRequestParser.ALLOC_BODY_FIELDS);
    }
}
