package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The mutation scopes of whole packages (model, api, auth, config; see docs/mutation-testing.md) run only the tests
 * of their own package. A class with code that no test of its package names has all its mutants undetected there,
 * and the scope's score falls with every such class (the profile is not part of {@code mvn verify}, so that would
 * go unseen until someone runs it). Records without methods have no code to mutate.
 */
class MutationScopesTest {
    private static final Path MAIN = Path.of("src/main/java/io/unboundedcloud/playpen");
    private static final Path TEST = Path.of("src/test/java/io/unboundedcloud/playpen");
    private static final List<String> PACKAGE_SCOPES = List.of("model", "api", "auth", "config");

    @Test
    void everyClassWithCodeInAPackageScopeIsNamedByATestOfItsPackage() throws IOException {
        List<String> unnamed = new ArrayList<>();
        int checked = 0;
        for (String pkg : PACKAGE_SCOPES) {
            String tests = testsOf(pkg);
            for (Path source : javaFiles(MAIN.resolve(pkg))) {
                String name = source.getFileName().toString().replace(".java", "");
                if (name.equals("package-info") || isRecordWithoutMethods(name, Files.readString(source))) {
                    continue;
                }
                checked++;
                if (!Pattern.compile("\\b" + name + "\\b").matcher(tests).find()) {
                    unnamed.add(pkg + "." + name);
                }
            }
        }
        assertThat(checked).as("classes checked").isGreaterThan(50);
        assertThat(unnamed).as("classes no test of their own package names: add a test beside them, or the "
                + "package's mutation scope counts all their mutants as undetected").isEmpty();
    }

    @Test
    void aRecordWithAMethodIsCode() {
        assertThat(isRecordWithoutMethods("R", "public record R(String a, int b) {\n}\n")).isTrue();
        assertThat(isRecordWithoutMethods("R", "public record R(@X(Y.Z) String a) {\n    public static final R D = "
                + "new R(\"a\");\n}\n")).isTrue();
        assertThat(isRecordWithoutMethods("R", "public record R(String a) {\n    public String b() {\n        return a;"
                + "\n    }\n}\n")).isFalse();
        assertThat(isRecordWithoutMethods("R", "public record R(String a) {\n    public R {\n        a.trim();\n    }\n}"))
                .isFalse();
        assertThat(isRecordWithoutMethods("R", "public final class R {\n}\n")).isFalse();
    }

    /** A record whose body declares no method or constructor (constants are fine). */
    static boolean isRecordWithoutMethods(String name, String source) {
        Matcher header = Pattern.compile("\\brecord\\s+" + name + "\\s*\\(").matcher(source);
        if (!header.find()) {
            return false;
        }
        // the header's parameters end at the parenthesis that closes the one after the name
        int depth = 0;
        int i = header.end() - 1;
        for (; i < source.length(); i++) {
            char c = source.charAt(i);
            if (c == '(') {
                depth++;
            } else if (c == ')' && --depth == 0) {
                break;
            }
        }
        String body = source.substring(source.indexOf('{', i) + 1);
        return !Pattern.compile("\\)\\s*\\{|\\b" + name + "\\s*\\{").matcher(body).find();
    }

    private static String testsOf(String pkg) throws IOException {
        StringBuilder all = new StringBuilder();
        for (Path t : javaFiles(TEST.resolve(pkg))) {
            all.append(Files.readString(t)).append('\n');
        }
        return all.toString();
    }

    private static List<Path> javaFiles(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        }
    }
}
