package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** Json.encode writes strings as Go's json.Encoder does (HTML-safe escaping) and ends with a newline. */
class JsonGoEscapesTest {

    private static String encoded(String s) {
        String json = Json.encode(Map.of("s", s));
        assertThat(json).startsWith("{\"s\":\"").endsWith("\"}\n");
        return json.substring(6, json.length() - 3);
    }

    @ParameterizedTest(name = "U+{0}")
    @CsvSource({
        "0000, \\u0000", "0001, \\u0001", "0007, \\u0007", "0008, \\b", "0009, \\t", "000a, \\n", "000b, \\u000b",
        "000c, \\f", "000d, \\r", "001b, \\u001b", "001f, \\u001f", "003c, \\u003c", "003e, \\u003e", "0026, \\u0026",
        "2028, \\u2028", "2029, \\u2029", "0022, \\\"", "005c, \\\\"})
    void escapedAsGoEscapesThem(String hex, String escape) {
        assertThat(encoded(Character.toString(Integer.parseInt(hex, 16)))).isEqualTo(escape);
    }

    @ParameterizedTest(name = "U+{0}")
    @CsvSource({"0020", "002f", "0027", "007e", "007f", "0080", "00e9", "2027", "202a", "fffd", "1f600"})
    void writtenAsTheyAre(String hex) {
        String c = Character.toString(Integer.parseInt(hex, 16));
        assertThat(encoded("a" + c + "b")).isEqualTo("a" + c + "b");
    }

    @Test
    void writeIsPlainJacksonWithoutTheNewline() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("a", "<&>");
        m.put("n", 1);
        assertThat(Json.write(m)).isEqualTo("{\"a\":\"<&>\",\"n\":1}");
        assertThat(Json.encode(m)).isEqualTo("{\"a\":\"\\u003c\\u0026\\u003e\",\"n\":1}\n");
    }
}
