package io.unboundedcloud.playpen.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * What a documented output and a fresh one must agree on: the same lines once what changes from run to run is
 * replaced by a placeholder (times and ages, ids, keys, certificates, resource versions, pod IPs, ports, pids) and
 * runs of spaces are one (kubectl sizes its columns to the values). Blank lines do not count.
 */
final class OutputMatch {
    private record Rule(Pattern pattern, String replacement) {
    }

    private static final List<Rule> RULES = List.of(
            // certificates and keys in PEM, also inside JSON strings (escaped newlines) and YAML blocks
            new Rule(Pattern.compile("-----BEGIN [A-Z ]+-----.*?-----END [A-Z ]+-----", Pattern.DOTALL), "<pem>"),
            new Rule(Pattern.compile("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?(Z|[+-]\\d\\d:\\d\\d)"), "<time>"),
            new Rule(Pattern.compile("\\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\\b"), "<uid>"),
            new Rule(Pattern.compile("[A-Za-z0-9+/]{40,}={0,2}"), "<base64>"),
            new Rule(Pattern.compile("\\b[0-9a-f]{16}\\b"), "<hex>"),
            new Rule(Pattern.compile("(keyHashPrefix\"?:\\s*\"?)[0-9a-f]{8}"), "$1<hex>"),
            new Rule(Pattern.compile("\\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{8,}\\b"), "<hex>"),
            new Rule(Pattern.compile("(resourceVersion\"?:\\s*\"?)\\d+"), "$1<rv>"),
            new Rule(Pattern.compile("\\b10\\.244\\.\\d+\\.\\d+\\b"), "<pod-ip>"),
            new Rule(Pattern.compile("\\b(127\\.0\\.0\\.1|localhost):\\d+"), "$1:<port>"),
            new Rule(Pattern.compile("\\bpid \\d+"), "pid <pid>"),
            new Rule(Pattern.compile("(?<=^|\\s)\\d+[smhdy](\\d+[smh])?(?=\\s|$)"), "<age>"),
            new Rule(Pattern.compile("\\bin \\d+ ms\\b"), "in <ms> ms"));

    private OutputMatch() {
    }

    /** The output as compared: placeholders in, spaces collapsed, trailing spaces and blank lines gone. */
    static List<String> normalize(String output) {
        String text = output;
        for (Rule r : RULES) {
            text = r.pattern().matcher(text).replaceAll(r.replacement());
        }
        List<String> out = new ArrayList<>();
        for (String line : text.split("\n", -1)) {
            String l = line.replaceAll("[ \t]+", " ").strip();
            if (!l.isEmpty()) {
                out.add(l);
            }
        }
        return out;
    }

    static boolean matches(List<String> documented, String actual) {
        return normalize(String.join("\n", documented)).equals(normalize(actual));
    }
}
