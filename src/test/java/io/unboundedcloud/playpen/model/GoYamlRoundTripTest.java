package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Assume;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.nodes.Tag;
import org.yaml.snakeyaml.representer.Representer;
import org.yaml.snakeyaml.resolver.Resolver;

/**
 * Whatever string GoYaml writes reads back as that same string with a YAML 1.1 parser (SnakeYAML, whose resolver
 * is at least as eager as go-yaml's but for timestamps, where it is given go-yaml's layouts): no value turns into a
 * number, a boolean, a null or a timestamp, no indicator, space, line break or control character is lost, whether
 * the string is a key, a value or a list item.
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

    /**
     * SnakeYAML's implicit types with go-yaml v2's timestamp layouts (2006-1-2, 2006-1-2 15:4:5.999999999 and
     * 2006-1-2T15:4:5.999999999Z07:00): SnakeYAML would also read "2001-12-14 21:59:43.10 -5" as a time, which
     * go-yaml leaves a string and writes plain.
     */
    private static final class GoYamlTypes extends Resolver {
        private static final Pattern GO_TIMESTAMP = Pattern.compile("[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
                + "(?:[Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\\.[0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2})"
                + "| [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\\.[0-9]+)?)?");

        @Override
        protected void addImplicitResolvers() {
            addImplicitResolver(Tag.BOOL, BOOL, "yYnNtTfFoO");
            addImplicitResolver(Tag.INT, INT, "-+0123456789");
            addImplicitResolver(Tag.FLOAT, FLOAT, "-+0123456789.");
            addImplicitResolver(Tag.NULL, NULL, "~nN\0");
            addImplicitResolver(Tag.NULL, EMPTY, null);
            addImplicitResolver(Tag.TIMESTAMP, GO_TIMESTAMP, "0123456789");
        }
    }

    private static Object read(String yaml) {
        LoaderOptions options = new LoaderOptions();
        return new Yaml(new SafeConstructor(options), new Representer(new DumperOptions()), new DumperOptions(), options,
                new GoYamlTypes()).load(yaml);
    }

    /**
     * go-yaml reads a plain scalar that starts with a dot through Go's float syntax (underscores between digits),
     * which SnakeYAML does not know; GoYamlTest pins those by example.
     */
    private static void assumeNotADotWithUnderscores(String... strings) {
        for (String s : strings) {
            Assume.that(!(s.startsWith(".") && s.contains("_")));
        }
    }

    @Property(tries = 1000)
    void valuesReadBackAsWritten(@ForAll("tricky") String s) {
        assumeNotADotWithUnderscores(s);
        Map<String, Object> root = Map.of("k", s);
        assertThat(read(GoYaml.write(root))).as("%s", GoYaml.write(root)).isEqualTo(root);
    }

    @Property(tries = 1000)
    void keysReadBackAsWritten(@ForAll("tricky") String s) {
        assumeNotADotWithUnderscores(s);
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
        assumeNotADotWithUnderscores(a, b);
        Map<String, Object> inner = new LinkedHashMap<>();
        inner.put("x", a);
        inner.put(b, List.of(a, List.of(b, a)));
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("list", List.of(a, List.of(b, inner), inner));
        root.put("map", inner);
        assertThat(read(GoYaml.write(root))).as("%s", GoYaml.write(root)).isEqualTo(root);
    }
}
