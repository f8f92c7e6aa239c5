package io.unboundedcloud.playpen.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Writes a tree of maps, lists, strings, booleans and nulls as sigs.k8s.io/yaml (go-yaml v2) writes it, which
 * is what client-go's {@code clientcmd.Write} produces: block style, keys in go-yaml's order, sequences not
 * indented under their key, strings plain unless they would read back as another type or need quoting.
 * Long plain strings with spaces are not folded at 80 columns as go-yaml would (kubeconfigs have none).
 */
final class GoYaml {
    private static final Pattern YAML_FLOAT = Pattern.compile("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
    private static final Pattern BASE60_FLOAT = Pattern.compile("[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\\.[0-9_]*)?");
    private static final Pattern GO_INT = Pattern.compile(
            "[-+]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[1-9][0-9]*|0)");
    /** What Go's strconv.ParseFloat takes from a string that starts with a dot: underscores only between digits. */
    private static final Pattern DOT_FLOAT = Pattern.compile("\\.[0-9](_?[0-9])*([eE][-+]?[0-9](_?[0-9])*)?");
    private static final Pattern TIMESTAMP = Pattern.compile(
            "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
            + "(([Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\\.[0-9]+)?(Z|[-+][0-9]{2}:[0-9]{2}))"
            + "|( [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\\.[0-9]+)?))?");
    private static final List<String> RESOLVED = List.of("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE",
            "on", "On", "ON", "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
            "", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
            "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF");

    private GoYaml() {
    }

    static String write(Map<String, Object> root) {
        StringBuilder out = new StringBuilder();
        mapping(out, root, 0, false);
        return out.toString();
    }

    private static void mapping(StringBuilder out, Map<String, Object> map, int indent, boolean inline) {
        List<String> keys = new ArrayList<>(map.keySet());
        keys.sort(GoYaml::keyLess);
        boolean first = true;
        for (String key : keys) {
            if (!(first && inline)) {
                out.append(" ".repeat(indent));
            }
            first = false;
            out.append(scalar(key, indent, true)).append(':');
            value(out, map.get(key), indent, true);
        }
    }

    @SuppressWarnings("unchecked")
    private static void value(StringBuilder out, Object v, int indent, boolean inMapping) {
        if (v instanceof Map<?, ?> m && !m.isEmpty()) {
            out.append('\n');
            mapping(out, (Map<String, Object>) m, indent + 2, false);
        } else if (v instanceof List<?> l && !l.isEmpty()) {
            out.append('\n');
            // go-yaml writes a mapping's sequence at the key's own indentation
            sequence(out, (List<Object>) l, inMapping ? indent : indent + 2, false);
        } else {
            out.append(' ').append(leaf(v, indent)).append('\n');
        }
    }

    @SuppressWarnings("unchecked")
    private static void sequence(StringBuilder out, List<Object> list, int indent, boolean inline) {
        boolean first = true;
        for (Object item : list) {
            if (!(first && inline)) {
                out.append(" ".repeat(indent));
            }
            first = false;
            out.append('-');
            if (item instanceof Map<?, ?> m && !m.isEmpty()) {
                out.append(' ');
                mapping(out, (Map<String, Object>) m, indent + 2, true);
            } else if (item instanceof List<?> l && !l.isEmpty()) {
                out.append(' ');
                sequence(out, (List<Object>) l, indent + 2, true);
            } else {
                out.append(' ').append(leaf(item, indent)).append('\n');
            }
        }
    }

    private static String leaf(Object v, int indent) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Map<?, ?>) {
            return "{}";
        }
        if (v instanceof List<?>) {
            return "[]";
        }
        if (v instanceof Boolean b) {
            return b.toString();
        }
        return scalar(v.toString(), indent, false);
    }

    /** go-yaml's choice of scalar style for a string (plain, single, double quoted or literal block). */
    static String scalar(String s, int indent, boolean key) {
        boolean canUsePlain = !resolvesToOtherType(s) && !BASE60_FLOAT.matcher(s).matches();
        Analysis a = analyze(s);
        if (s.contains("\n") && !key && a.blockAllowed) {
            return literal(s, indent + 2);
        }
        if (canUsePlain && !s.contains("\n") && a.blockPlainAllowed) {
            return s;
        }
        if (canUsePlain && !s.contains("\n") && a.singleQuotedAllowed) {
            return "'" + s.replace("'", "''") + "'";
        }
        return doubleQuoted(s);
    }

    /** go-yaml v2's resolve(): would this plain scalar read back as null, bool, int, float or timestamp? */
    static boolean resolvesToOtherType(String s) {
        if (RESOLVED.contains(s)) {
            return true;
        }
        char c = s.charAt(0);
        if (c == '.') {
            return DOT_FLOAT.matcher(s).matches();
        }
        if (c != '+' && c != '-' && (c < '0' || c > '9')) {
            return false;
        }
        if (TIMESTAMP.matcher(s).matches()) {
            return true;
        }
        String plain = s.replace("_", "");
        return GO_INT.matcher(plain).matches() || YAML_FLOAT.matcher(plain).matches();
    }

    private record Analysis(boolean blockPlainAllowed, boolean singleQuotedAllowed, boolean blockAllowed) {
    }

    /** libyaml's yaml_emitter_analyze_scalar, block context. */
    private static Analysis analyze(String s) {
        if (s.isEmpty()) {
            return new Analysis(false, true, false);
        }
        boolean blockIndicators = s.startsWith("---") || s.startsWith("...");
        boolean specialCharacters = false;
        boolean lineBreaks = false;
        boolean leadingSpace = false;
        boolean leadingBreak = false;
        boolean trailingSpace = false;
        boolean trailingBreak = false;
        boolean breakSpace = false;
        boolean spaceBreak = false;
        boolean previousSpace = false;
        boolean previousBreak = false;
        boolean precededByWhitespace = true;
        int[] cps = s.codePoints().toArray();
        for (int i = 0; i < cps.length; i++) {
            int c = cps[i];
            boolean followedByWhitespace = i + 1 >= cps.length || isBlank(cps[i + 1]);
            if (i == 0) {
                if ("#,[]{}&*!|>'\"%@`".indexOf(c) >= 0) {
                    blockIndicators = true;
                }
                if ((c == '?' || c == ':' || c == '-') && followedByWhitespace) {
                    blockIndicators = true;
                }
            } else {
                if (c == ':' && followedByWhitespace) {
                    blockIndicators = true;
                }
                if (c == '#' && precededByWhitespace) {
                    blockIndicators = true;
                }
            }
            if (!isPrintable(c)) {
                specialCharacters = true;
            }
            boolean isBreak = c == '\r' || c == '\n' || c == 0x85 || c == 0x2028 || c == 0x2029;
            if (isBreak) {
                lineBreaks = true;
            }
            if (c == ' ') {
                leadingSpace |= i == 0;
                trailingSpace |= i == cps.length - 1;
                breakSpace |= previousBreak;
                previousSpace = true;
                previousBreak = false;
            } else if (isBreak) {
                leadingBreak |= i == 0;
                trailingBreak |= i == cps.length - 1;
                spaceBreak |= previousSpace;
                previousSpace = false;
                previousBreak = true;
            } else {
                previousSpace = false;
                previousBreak = false;
            }
            precededByWhitespace = isBlank(c) || isBreak;
        }
        boolean plain = !(leadingSpace || leadingBreak || trailingSpace || trailingBreak || breakSpace || spaceBreak
                || specialCharacters || lineBreaks || blockIndicators);
        boolean single = !(breakSpace || spaceBreak || specialCharacters);
        boolean block = !(trailingSpace || spaceBreak || specialCharacters);
        return new Analysis(plain, single, block);
    }

    private static boolean isBlank(int c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0x85 || c == 0x2028 || c == 0x2029;
    }

    /**
     * go-yaml's is_printable (its emitter allows Unicode). It looks at UTF-8 lead bytes up to 0xEF only, so every
     * character beyond U+FFFD (emoji among them) counts as non-printable: escaped, and never plain or in a block.
     */
    private static boolean isPrintable(int c) {
        return c == 0x0A || (c >= 0x20 && c <= 0x7E) || (c >= 0xA0 && c <= 0xD7FF)
                || (c >= 0xE000 && c <= 0xFFFD && c != 0xFEFF);
    }

    private static String literal(String s, int indent) {
        StringBuilder b = new StringBuilder("|");
        if (s.charAt(0) == ' ' || s.charAt(0) == '\n') {
            b.append('2');
        }
        if (!s.endsWith("\n")) {
            b.append('-');
        } else if (s.length() == 1 || s.charAt(s.length() - 2) == '\n') {
            b.append('+');
        }
        String body = s.endsWith("\n") ? s.substring(0, s.length() - 1) : s;
        for (String line : body.split("\n", -1)) {
            b.append('\n');
            if (!line.isEmpty()) {
                b.append(" ".repeat(indent)).append(line);
            }
        }
        return b.toString();
    }

    private static String doubleQuoted(String s) {
        StringBuilder b = new StringBuilder("\"");
        s.codePoints().forEach(c -> {
            boolean isBreak = c == '\r' || c == '\n' || c == 0x85 || c == 0x2028 || c == 0x2029;
            if (isPrintable(c) && !isBreak && c != '"' && c != '\\' && c != 0xFEFF) {
                b.appendCodePoint(c);
                return;
            }
            switch (c) {
                case 0: b.append("\\0"); break;
                case 0x07: b.append("\\a"); break;
                case '\b': b.append("\\b"); break;
                case '\t': b.append("\\t"); break;
                case '\n': b.append("\\n"); break;
                case 0x0B: b.append("\\v"); break;
                case '\f': b.append("\\f"); break;
                case '\r': b.append("\\r"); break;
                case 0x1B: b.append("\\e"); break;
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case 0x85: b.append("\\N"); break;
                case 0xA0: b.append("\\_"); break;
                case 0x2028: b.append("\\L"); break;
                case 0x2029: b.append("\\P"); break;
                default:
                    if (c <= 0xFF) {
                        b.append(String.format("\\x%02X", c));
                    } else if (c <= 0xFFFF) {
                        b.append(String.format("\\u%04X", c));
                    } else {
                        b.append(String.format("\\U%08X", c));
                    }
            }
        });
        return b.append('"').toString();
    }

    /** go-yaml v2's keyList.Less for string keys: letters by code point, digit runs by value, non-letters first. */
    static int keyLess(String a, String b) {
        if (a.equals(b)) {
            return 0;
        }
        return less(a, b) ? -1 : 1;
    }

    private static boolean less(String as, String bs) {
        int[] ar = as.codePoints().toArray();
        int[] br = bs.codePoints().toArray();
        for (int i = 0; i < ar.length && i < br.length; i++) {
            if (ar[i] == br[i]) {
                continue;
            }
            boolean al = Character.isLetter(ar[i]);
            boolean bl = Character.isLetter(br[i]);
            if (al && bl) {
                return ar[i] < br[i];
            }
            if (al || bl) {
                return bl;
            }
            long an = 0;
            long bn = 0;
            if (ar[i] == '0' || br[i] == '0') {
                for (int j = i - 1; j >= 0 && Character.isDigit(ar[j]); j--) {
                    if (ar[j] != '0') {
                        an = 1;
                        bn = 1;
                        break;
                    }
                }
            }
            int ai = i;
            for (; ai < ar.length && Character.isDigit(ar[ai]); ai++) {
                an = an * 10 + (ar[ai] - '0');
            }
            int bi = i;
            for (; bi < br.length && Character.isDigit(br[bi]); bi++) {
                bn = bn * 10 + (br[bi] - '0');
            }
            if (an != bn) {
                return an < bn;
            }
            if (ai != bi) {
                return ai < bi;
            }
            return ar[i] < br[i];
        }
        return ar.length < br.length;
    }
}
