package io.unboundedcloud.playpen.model;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * A Kubernetes label selector in the string syntax Go's {@code labels.Parse} accepts ({@code a=b}, {@code a==b},
 * {@code a!=b}, {@code a in (x,y)}, {@code a notin (x)}, {@code a}, {@code !a}, {@code a>1}, {@code a<1}; comma = AND).
 * The empty selector matches every label set.
 */
public final class LabelSelector {

    /** The operators of a requirement, as {@code selection.Operator} names them. */
    public enum Op { IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN }

    /** One requirement: key, operator and its (sorted) values. */
    public record Requirement(String key, Op op, List<String> values) {
        boolean matches(Map<String, String> labels) {
            String v = labels.get(key);
            switch (op) {
                case IN, EQUALS, DOUBLE_EQUALS:
                    return v != null && values.contains(v);
                case NOT_IN, NOT_EQUALS:
                    return v == null || !values.contains(v);
                case EXISTS:
                    return v != null;
                case DOES_NOT_EXIST:
                    return v == null;
                default:
                    // Gt/Lt compare as 64-bit integers; a label that is not one never matches (as in Go)
                    if (v == null) {
                        return false;
                    }
                    long have;
                    try {
                        have = Long.parseLong(v);
                    } catch (NumberFormatException e) {
                        return false;
                    }
                    long want = Long.parseLong(values.get(0));
                    return op == Op.GREATER_THAN ? have > want : have < want;
            }
        }
    }

    private static final Pattern NAME = Pattern.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]");
    private static final Pattern DNS1123_SUBDOMAIN =
            Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
    private static final Pattern LABEL_VALUE = Pattern.compile("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?");
    private static final Pattern INTEGER = Pattern.compile("[+-]?\\d+");

    private static final LabelSelector EVERYTHING = new LabelSelector("", List.of());

    private final String text;
    private final List<Requirement> requirements;

    private LabelSelector(String text, List<Requirement> requirements) {
        this.text = text;
        this.requirements = requirements;
    }

    /** The selector that matches everything. */
    public static LabelSelector everything() {
        return EVERYTHING;
    }

    /** The selector {@code k1=v1,k2=v2,...} (keys and values are taken as they are). */
    public static LabelSelector equality(Map<String, String> labels) {
        List<Requirement> reqs = new ArrayList<>();
        labels.forEach((k, v) -> reqs.add(new Requirement(k, Op.EQUALS, List.of(v))));
        reqs.sort(Comparator.comparing(Requirement::key));
        StringBuilder text = new StringBuilder();
        for (Requirement r : reqs) {
            text.append(text.length() == 0 ? "" : ",").append(r.key()).append('=').append(r.values().get(0));
        }
        return new LabelSelector(text.toString(), Collections.unmodifiableList(reqs));
    }

    /** Parses a selector; a syntax or validation error throws IllegalArgumentException with a one-line message. */
    public static LabelSelector parse(String selector) {
        List<Requirement> reqs = new Parser(new Lexer(selector).tokens()).parse();
        // Go sorts requirements by key; the order does not change the meaning but keeps toString stable
        reqs.sort(Comparator.comparing(Requirement::key));
        return new LabelSelector(selector.trim(), Collections.unmodifiableList(reqs));
    }

    /** True when every requirement holds for these labels (null = no labels). */
    public boolean matches(Map<String, String> labels) {
        Map<String, String> l = labels == null ? Map.of() : labels;
        for (Requirement r : requirements) {
            if (!r.matches(l)) {
                return false;
            }
        }
        return true;
    }

    public boolean isEmpty() {
        return requirements.isEmpty();
    }

    public List<Requirement> requirements() {
        return requirements;
    }

    /** The selector as it was written (trimmed). */
    @Override
    public String toString() {
        return text;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LabelSelector s && s.requirements.equals(requirements);
    }

    @Override
    public int hashCode() {
        return requirements.hashCode();
    }

    // ---- lexer: the token set and greedy special-symbol scan of apimachinery's labels lexer ----

    private enum Tok { ERROR, EOS, CLOSED_PAR, COMMA, DOES_NOT_EXIST, DOUBLE_EQUALS, EQUALS, GREATER_THAN, IDENTIFIER, IN,
        LESS_THAN, NOT_EQUALS, NOT_IN, OPEN_PAR }

    private record Item(Tok tok, String literal) {
    }

    private static Tok keyword(String s) {
        return switch (s) {
            case ")" -> Tok.CLOSED_PAR;
            case "," -> Tok.COMMA;
            case "!" -> Tok.DOES_NOT_EXIST;
            case "==" -> Tok.DOUBLE_EQUALS;
            case "=" -> Tok.EQUALS;
            case ">" -> Tok.GREATER_THAN;
            case "in" -> Tok.IN;
            case "<" -> Tok.LESS_THAN;
            case "!=" -> Tok.NOT_EQUALS;
            case "notin" -> Tok.NOT_IN;
            case "(" -> Tok.OPEN_PAR;
            default -> null;
        };
    }

    private static final class Lexer {
        private final String s;
        private int pos;

        Lexer(String s) {
            this.s = s;
        }

        private static boolean isWhitespace(char c) {
            return c == ' ' || c == '\t' || c == '\r' || c == '\n';
        }

        private static boolean isSpecial(char c) {
            return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
        }

        List<Item> tokens() {
            List<Item> out = new ArrayList<>();
            while (true) {
                Item it = next();
                out.add(it);
                if (it.tok() == Tok.EOS || it.tok() == Tok.ERROR) {
                    return out;
                }
            }
        }

        private Item next() {
            while (pos < s.length() && isWhitespace(s.charAt(pos))) {
                pos++;
            }
            if (pos >= s.length()) {
                return new Item(Tok.EOS, "");
            }
            char c = s.charAt(pos);
            if (isSpecial(c)) {
                // longest run of special symbols that still forms a known token ("!=" but "!" then "(" for "!(")
                StringBuilder buf = new StringBuilder();
                Item last = null;
                while (pos < s.length() && isSpecial(s.charAt(pos))) {
                    buf.append(s.charAt(pos));
                    Tok t = keyword(buf.toString());
                    if (t != null) {
                        last = new Item(t, buf.toString());
                        pos++;
                    } else if (last != null) {
                        break;
                    } else {
                        pos++;
                    }
                }
                return last != null ? last : new Item(Tok.ERROR, "error expected: keyword found '" + buf + "'");
            }
            int start = pos;
            while (pos < s.length() && !isWhitespace(s.charAt(pos)) && !isSpecial(s.charAt(pos))) {
                pos++;
            }
            String word = s.substring(start, pos);
            Tok t = keyword(word);
            return new Item(t == Tok.IN || t == Tok.NOT_IN ? t : Tok.IDENTIFIER, word);
        }
    }

    // ---- parser: the recursive descent of apimachinery's labels parser, same acceptance and messages ----

    private static final class Parser {
        private final List<Item> items;
        private int pos;

        Parser(List<Item> items) {
            this.items = items;
        }

        /** Values context: the keywords in/notin are plain identifiers there (a key may be called "in"). */
        private Item lookahead() {
            return values(items.get(Math.min(pos, items.size() - 1)));
        }

        private Item consume() {
            return values(items.get(Math.min(pos++, items.size() - 1)));
        }

        private Item consumeOperator() {
            return items.get(Math.min(pos++, items.size() - 1));
        }

        private static Item values(Item it) {
            return it.tok() == Tok.IN || it.tok() == Tok.NOT_IN ? new Item(Tok.IDENTIFIER, it.literal()) : it;
        }

        private static IllegalArgumentException error(String msg) {
            return new IllegalArgumentException(msg);
        }

        List<Requirement> parse() {
            List<Requirement> out = new ArrayList<>();
            while (true) {
                Item it = lookahead();
                switch (it.tok()) {
                    case IDENTIFIER, DOES_NOT_EXIST -> {
                        try {
                            out.add(requirement());
                        } catch (IllegalArgumentException e) {
                            throw error("unable to parse requirement: " + e.getMessage());
                        }
                        Item after = consume();
                        if (after.tok() == Tok.EOS) {
                            return out;
                        }
                        if (after.tok() != Tok.COMMA) {
                            throw error("found '" + after.literal() + "', expected: ',' or 'end of string'");
                        }
                        Item next = lookahead();
                        if (next.tok() != Tok.IDENTIFIER && next.tok() != Tok.DOES_NOT_EXIST) {
                            throw error("found '" + next.literal() + "', expected: identifier after ','");
                        }
                    }
                    case EOS -> {
                        return out;
                    }
                    default -> throw error("found '" + it.literal() + "', expected: !, identifier, or 'end of string'");
                }
            }
        }

        private Requirement requirement() {
            Op op = null;
            Item it = consume();
            if (it.tok() == Tok.DOES_NOT_EXIST) {
                op = Op.DOES_NOT_EXIST;
                it = consume();
            }
            if (it.tok() != Tok.IDENTIFIER) {
                throw error("found '" + it.literal() + "', expected: identifier");
            }
            String key = it.literal();
            validateKey(key);
            Tok next = lookahead().tok();
            if (op == Op.DOES_NOT_EXIST) {
                return requirement(key, op, Set.of());
            }
            if (next == Tok.EOS || next == Tok.COMMA) {
                return requirement(key, Op.EXISTS, Set.of());
            }
            Item o = consumeOperator();
            op = switch (o.tok()) {
                case IN -> Op.IN;
                case NOT_IN -> Op.NOT_IN;
                case EQUALS -> Op.EQUALS;
                case DOUBLE_EQUALS -> Op.DOUBLE_EQUALS;
                case NOT_EQUALS -> Op.NOT_EQUALS;
                case GREATER_THAN -> Op.GREATER_THAN;
                case LESS_THAN -> Op.LESS_THAN;
                default -> throw error("found '" + o.literal() + "', expected: in, notin, =, ==, !=, gt, lt");
            };
            Set<String> vals = op == Op.IN || op == Op.NOT_IN ? valueSet() : exactValue();
            return requirement(key, op, vals);
        }

        private Set<String> valueSet() {
            Item open = consume();
            if (open.tok() != Tok.OPEN_PAR) {
                throw error("found '" + open.literal() + "' expected: '('");
            }
            Item next = lookahead();
            switch (next.tok()) {
                case IDENTIFIER, COMMA -> {
                    Set<String> s = identifiers();
                    Item close = consume();
                    if (close.tok() != Tok.CLOSED_PAR) {
                        throw error("found '" + close.literal() + "', expected: ')'");
                    }
                    return s;
                }
                case CLOSED_PAR -> {
                    consume();
                    // "()" is the set holding the empty value
                    return new TreeSet<>(Set.of(""));
                }
                default -> throw error("found '" + next.literal() + "', expected: ',', ')' or identifier");
            }
        }

        private Set<String> identifiers() {
            Set<String> s = new TreeSet<>();
            while (true) {
                Item it = consume();
                switch (it.tok()) {
                    case IDENTIFIER -> {
                        s.add(it.literal());
                        Item next = lookahead();
                        if (next.tok() == Tok.CLOSED_PAR) {
                            return s;
                        }
                        if (next.tok() != Tok.COMMA) {
                            throw error("found '" + next.literal() + "', expected: ',' or ')'");
                        }
                    }
                    case COMMA -> {
                        // "(,", ",," and ",)" stand for the empty value
                        if (s.isEmpty()) {
                            s.add("");
                        }
                        Item next = lookahead();
                        if (next.tok() == Tok.CLOSED_PAR) {
                            s.add("");
                            return s;
                        }
                        if (next.tok() == Tok.COMMA) {
                            consume();
                            s.add("");
                        }
                    }
                    default -> throw error("found '" + it.literal() + "', expected: ',', or identifier");
                }
            }
        }

        private Set<String> exactValue() {
            Item next = lookahead();
            if (next.tok() == Tok.EOS || next.tok() == Tok.COMMA) {
                return Set.of("");
            }
            Item it = consume();
            if (it.tok() == Tok.IDENTIFIER) {
                return Set.of(it.literal());
            }
            throw error("found '" + it.literal() + "', expected: identifier");
        }

        private static Requirement requirement(String key, Op op, Set<String> vals) {
            List<String> sorted = new ArrayList<>(new TreeSet<>(vals));
            if ((op == Op.GREATER_THAN || op == Op.LESS_THAN)) {
                for (String v : sorted) {
                    if (!INTEGER.matcher(v).matches() || !fitsLong(v)) {
                        throw error("values[0]: Invalid value: \"" + v
                                + "\": for 'Gt', 'Lt' operators, the value must be an integer");
                    }
                }
            }
            for (String v : sorted) {
                validateValue(v);
            }
            return new Requirement(key, op, List.copyOf(sorted));
        }

        private static boolean fitsLong(String v) {
            try {
                Long.parseLong(v);
                return true;
            } catch (NumberFormatException e) {
                return false;
            }
        }

        private static void validateKey(String key) {
            String name = key;
            int slash = key.indexOf('/');
            if (slash >= 0) {
                String prefix = key.substring(0, slash);
                name = key.substring(slash + 1);
                if (prefix.isEmpty()) {
                    throw error("key: Invalid value: \"" + key + "\": prefix part must be non-empty");
                }
                if (prefix.length() > 253 || !DNS1123_SUBDOMAIN.matcher(prefix).matches()) {
                    throw error("key: Invalid value: \"" + key
                            + "\": prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters");
                }
                if (name.indexOf('/') >= 0) {
                    throw error("key: Invalid value: \"" + key
                            + "\": a qualified name must consist of an optional prefix and a name separated by one '/'");
                }
            }
            if (name.isEmpty()) {
                throw error("key: Invalid value: \"" + key + "\": name part must be non-empty");
            }
            if (name.length() > 63) {
                throw error("key: Invalid value: \"" + key + "\": name part must be no more than 63 characters");
            }
            if (!NAME.matcher(name).matches()) {
                throw error("key: Invalid value: \"" + key + "\": name part must consist of alphanumeric characters,"
                        + " '-', '_' or '.', and must start and end with an alphanumeric character");
            }
        }

        private static void validateValue(String v) {
            if (v.length() > 63) {
                throw error("values: Invalid value: \"" + v + "\": must be no more than 63 characters");
            }
            if (!LABEL_VALUE.matcher(v).matches()) {
                throw error("values: Invalid value: \"" + v + "\": a valid label must be an empty string or consist of"
                        + " alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character");
            }
        }
    }
}
