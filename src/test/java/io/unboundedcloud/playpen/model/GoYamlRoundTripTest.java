package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * Whatever string GoYaml writes reads back as that same string with a YAML 1.1 parser (SnakeYAML, whose resolver
 * is at least as eager as go-yaml's): no value turns into a number, a boolean, a null or a timestamp, no indicator,
 * space, line break or control character is lost, whether the string is a key, a value or a list item.
 */
class GoYamlRoundTripTest {
    private static final List<String> TYPED = List.of("", "~", "null", "yes", "No", "y", "on", "OFF", "true", "0",
            "-1", "+1", "0644", "08", "0x1F", "0o17", "0b101", "1_000", "1e3", "1.5", ".5", "-.5", "1.", ".inf",
            "-.Inf", ".NaN", "1:20", "190:20:30.5", "2001-12-14", "2001-12-14 21:59:43.10",
            "2001-12-14t21:59:43.10-05:00", "---", "...", "- ", "? ", ": ", "#", "'", "\"");

    /** Strings built from the characters that decide YAML's scalar styles, and some whole typed words. */
    @Provide
    Arbitrary<String> tricky() {
        Arbitrary<String> pieces = Arbitraries.oneOf(
                Arbitraries.of(TYPED),
                Arbitraries.of(' ', ' ', '\n', '\n', '\t', '\r', '#', ':', '-', '?', ',', '[', ']', '{', '}', '&', '*',
                        '!', '|', '>', '\'', '"', '%', '@', '`', '\\', '.', '+', '_', '0', '1', '7', '9', 'e', 'x',
                        'a', 'b', 'y', 'n', '~', '\u0000', '\u0007', '\u001b', '\u007f', '\u0085', '\u00a0', '\u00e9',
                        '\ufeff', '\ue000', '\ufffd').map(String::valueOf),
                Arbitraries.of("\ud83d\ude00", "\ud800\udc00"));
        return pieces.list().ofMaxSize(6).map(l -> String.join("", l));
    }

    private static Object read(String yaml) {
        return new Yaml(new SafeConstructor(new LoaderOptions())).load(yaml);
    }

    @Property(tries = 1000)
    void valuesReadBackAsWritten(@ForAll("tricky") String s) {
        Map<String, Object> root = Map.of("k", s);
        assertThat(read(GoYaml.write(root))).as("%s", GoYaml.write(root)).isEqualTo(root);
    }

    @Property(tries = 1000)
    void keysReadBackAsWritten(@ForAll("tricky") String s) {
        Map<String, Object> root = Map.of(s, "v");
        assertThat(read(GoYaml.write(root))).as("%s", GoYaml.write(root)).isEqualTo(root);
    }

    /** Digits, zeros, letters and other characters: the cases go-yaml's key order tells apart. */
    @Provide
    Arbitrary<String> keys() {
        return Arbitraries.of('0', '0', '1', '9', 'a', 'b', 'B', '-', '.', '\u00e9', '\uff01')
                .list().ofMaxSize(5).map(l -> l.stream().map(String::valueOf).reduce("", String::concat));
    }

    @Property(tries = 1000)
    void keyOrderIsAntisymmetric(@ForAll("keys") String a, @ForAll("keys") String b) {
        int ab = Integer.signum(GoYaml.keyLess(a, b));
        int ba = Integer.signum(GoYaml.keyLess(b, a));
        assertThat(ab).as("%s vs %s", a, b).isEqualTo(-ba);
        assertThat(ab == 0).isEqualTo(a.equals(b));
    }

    @Property(tries = 300)
    void nestedItemsReadBackAsWritten(@ForAll("tricky") String a, @ForAll("tricky") String b) {
        Map<String, Object> inner = new LinkedHashMap<>();
        inner.put("x", a);
        inner.put(b, List.of(a, List.of(b, a)));
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("list", List.of(a, List.of(b, inner), inner));
        root.put("map", inner);
        assertThat(read(GoYaml.write(root))).as("%s", GoYaml.write(root)).isEqualTo(root);
    }
}
