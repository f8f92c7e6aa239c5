package io.unboundedcloud.playpen.model;

import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.io.JsonEOFException;

/**
 * Decodes a request body the way the reference's {@code json.NewDecoder(body).Decode(&req)} does into a struct of
 * string fields: the first JSON value only (whatever follows is never read), field names matched exactly and
 * then case-insensitively (Go's folding), {@code null} values and a top-level {@code null} leave fields empty,
 * unknown fields ignored, invalid UTF-8 and lone surrogates become U+FFFD. Any other value type is an error.
 */
final class GoJson {
    /** The body held no JSON value at all (Go's io.EOF). */
    static final class EndOfInput extends Exception {
        private static final long serialVersionUID = 1L;

        EndOfInput() {
            super("EOF", null, false, false);
        }
    }

    /**
     * The first value is not valid JSON, or does not fit the struct (Go's syntax and type errors). The message says
     * what is wrong in a user's words and never quotes the body (a body may hold keys).
     */
    static final class DecodeError extends Exception {
        private static final long serialVersionUID = 1L;

        DecodeError(String message) {
            super(message, null, false, false);
        }
    }

    private static final String ENDS_EARLY = "the body ends before its JSON value does";

    // encoding/json refuses nesting deeper than 10000; unknown fields may nest that deep and still decode. A number
    // literal of any length is valid JSON to Go (Jackson stops at 1000 digits); numbers are only ever skipped here,
    // never converted, and bodies are at most 64 KiB
    private static final JsonFactory FACTORY = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(10_000)
                    .maxNumberLength(Integer.MAX_VALUE).build())
            .build();

    private GoJson() {
    }

    /** A field's JSON value as sent: its token and its text (null for objects and arrays). */
    record Value(JsonToken token, String text) {
        boolean isString() {
            return token == JsonToken.VALUE_STRING;
        }
    }

    /**
     * A field name of the request that did not name a field exactly: {@code matched} is the field Go's
     * case-insensitive match read it as, or null when it names none (ignored, as Go ignores it). With
     * {@code duplicate}, the name named a field exactly, but the body had already sent it (the last value is read).
     */
    record FieldNote(String sent, String matched, boolean duplicate) {
        FieldNote(String sent, String matched) {
            this(sent, matched, false);
        }
    }

    /** The string fields named in {@code fields} (absent when not sent or null); throws for EOF and bad JSON. */
    static Map<String, String> decode(byte[] body, List<String> fields) throws EndOfInput, DecodeError {
        return decode(body, fields, List.of(), new HashMap<>());
    }

    /**
     * Like {@link #decode(byte[], List)}, and the fields named in {@code loose} (any JSON type: this
     * implementation's additions, which the caller validates with its own messages) go to {@code looseOut}.
     */
    static Map<String, String> decode(byte[] body, List<String> fields, List<String> loose, Map<String, Value> looseOut)
            throws EndOfInput, DecodeError {
        return decode(body, fields, loose, looseOut, new java.util.ArrayList<>());
    }

    /**
     * Like {@link #decode(byte[], List, List, Map)}, and every field name that is not one of the fields exactly, or
     * that repeats one sent before, goes to {@code notes} in the order sent, also when the body then turns out not to
     * decode.
     */
    static Map<String, String> decode(byte[] body, List<String> fields, List<String> loose, Map<String, Value> looseOut,
            List<FieldNote> notes) throws EndOfInput, DecodeError {
        List<String> all = new java.util.ArrayList<>(fields);
        all.addAll(loose);
        String text = decodeUtf8(body == null ? new byte[0] : body);
        int start = 0;
        while (start < text.length() && isJsonSpace(text.charAt(start))) {
            start++;
        }
        if (start == text.length()) {
            throw new EndOfInput();
        }
        if (text.charAt(start) == '\uFEFF') {
            throw new DecodeError("the body starts with a byte order mark (U+FEFF); save it as UTF-8 without one");
        }
        Map<String, String> out = new HashMap<>();
        String typeError = null;
        try (JsonParser p = FACTORY.createParser(text.substring(start))) {
            JsonToken t = p.nextToken();
            if (t == JsonToken.VALUE_NULL) {
                return out;
            }
            if (t != JsonToken.START_OBJECT) {
                // Go still reads the whole value before it reports that it does not fit the struct
                p.skipChildren();
                throw new DecodeError("the body is " + kind(t) + ", not an object");
            }
            java.util.Set<String> seen = new java.util.HashSet<>();
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String sent = p.currentName();
                String field = match(sent, all);
                if (field == null || !field.equals(sent)) {
                    notes.add(new FieldNote(withoutLoneSurrogates(sent), field));
                } else if (!seen.add(sent)) {
                    notes.add(new FieldNote(sent, field, true));
                }
                JsonToken v = p.nextToken();
                if (field != null && loose.contains(field)) {
                    boolean scalar = v != JsonToken.START_OBJECT && v != JsonToken.START_ARRAY;
                    String valueText = scalar ? withoutLoneSurrogates(p.getText()) : null;
                    p.skipChildren();
                    if (v != JsonToken.VALUE_NULL) {
                        // null leaves the field as it was, as Go's decoder does
                        looseOut.put(field, new Value(v, valueText));
                    }
                } else if (field == null) {
                    p.skipChildren();
                } else if (v == JsonToken.VALUE_STRING) {
                    out.put(field, withoutLoneSurrogates(p.getText()));
                } else if (v != JsonToken.VALUE_NULL) {
                    // Go keeps decoding after a type error and reports it at the end; syntax errors still win
                    p.skipChildren();
                    if (typeError == null) {
                        typeError = "field " + quote(field.equals(sent) ? field : withoutLoneSurrogates(sent))
                                + " is " + kind(v) + ", not a string";
                    }
                }
            }
            if (t != JsonToken.END_OBJECT) {
                throw new DecodeError(ENDS_EARLY);
            }
        } catch (StreamConstraintsException e) {
            throw new DecodeError("the body nests arrays or objects more than 10000 deep");
        } catch (JsonEOFException e) {
            throw new DecodeError(ENDS_EARLY);
        } catch (JsonProcessingException e) {
            throw new DecodeError("the body is not valid JSON near " + where(text, start + charOffset(e), isWord(e)));
        } catch (IOException e) {
            throw new DecodeError("the body is not valid JSON");
        }
        if (typeError != null) {
            throw new DecodeError(typeError);
        }
        return out;
    }

    /** A JSON value's kind as a user would name it, with its article. */
    static String kind(JsonToken t) {
        switch (t) {
            case START_ARRAY:
                return "an array";
            case START_OBJECT:
                return "an object";
            case VALUE_STRING:
                return "a string";
            case VALUE_NUMBER_INT:
            case VALUE_NUMBER_FLOAT:
                return "a number";
            case VALUE_TRUE:
            case VALUE_FALSE:
                return "a boolean";
            default:
                return "not a JSON value";
        }
    }

    private static int charOffset(JsonProcessingException e) {
        long offset = e.getLocation() == null ? -1 : e.getLocation().getCharOffset();
        return (int) Math.max(0, offset);
    }

    /**
     * Whether Jackson refused a whole word ({@code amd64} or {@code NaN} where a value belongs): it then reports the
     * position just after the word, where it places any other error at the character that is wrong.
     */
    private static boolean isWord(JsonProcessingException e) {
        String m = e.getOriginalMessage();
        return m != null && (m.startsWith("Unrecognized token") || m.startsWith("Non-standard token"));
    }

    /**
     * "line L, column C" (both from 1) of a character offset into the decoded body; {@code afterWord}: the offset is
     * just after a refused word, and the column given is the word's first.
     */
    static String where(String text, int offset, boolean afterWord) {
        while (afterWord && offset > 0 && offset <= text.length() && Character.isLetterOrDigit(text.charAt(offset - 1))) {
            offset--;
        }
        int line = 1;
        int column = 1;
        for (int i = 0; i < Math.min(offset, text.length()); i++) {
            if (text.charAt(i) == '\n') {
                line++;
                column = 1;
            } else {
                column++;
            }
        }
        return "line " + line + ", column " + column;
    }

    /** The struct field a JSON key sets: the exact name first, else Go's case-insensitive match. */
    static String match(String key, List<String> fields) {
        for (String f : fields) {
            if (f.equals(key)) {
                return f;
            }
        }
        String folded = fold(key);
        for (String f : fields) {
            if (fold(f).equals(folded)) {
                return f;
            }
        }
        return null;
    }

    /** Go's foldName: ASCII letters upper-cased, other runes mapped through ToUpper(ToLower(r)). */
    static String fold(String s) {
        StringBuilder b = new StringBuilder(s.length());
        s.codePoints().forEach(c -> {
            if (c < 0x80) {
                b.append((char) (c >= 'a' && c <= 'z' ? c - ('a' - 'A') : c));
            } else {
                b.appendCodePoint(Character.toUpperCase(Character.toLowerCase(c)));
            }
        });
        return b.toString();
    }

    private static boolean isJsonSpace(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
    }

    /** UTF-8 decoded like Go's utf8.DecodeRune: every byte of an invalid sequence becomes one U+FFFD. */
    static String decodeUtf8(byte[] b) {
        StringBuilder out = new StringBuilder(b.length);
        int i = 0;
        while (i < b.length) {
            int c = b[i] & 0xFF;
            if (c < 0x80) {
                out.append((char) c);
                i++;
                continue;
            }
            int n;
            int cp;
            int lo = 0x80;
            int hi = 0xBF;
            if (c >= 0xC2 && c <= 0xDF) {
                n = 2;
                cp = c & 0x1F;
            } else if (c >= 0xE0 && c <= 0xEF) {
                n = 3;
                cp = c & 0x0F;
                lo = c == 0xE0 ? 0xA0 : 0x80;
                hi = c == 0xED ? 0x9F : 0xBF;
            } else if (c >= 0xF0 && c <= 0xF4) {
                n = 4;
                cp = c & 0x07;
                lo = c == 0xF0 ? 0x90 : 0x80;
                hi = c == 0xF4 ? 0x8F : 0xBF;
            } else {
                out.append('\uFFFD');
                i++;
                continue;
            }
            boolean ok = i + n <= b.length;
            for (int k = 1; ok && k < n; k++) {
                int cc = b[i + k] & 0xFF;
                int min = k == 1 ? lo : 0x80;
                int max = k == 1 ? hi : 0xBF;
                if (cc < min || cc > max) {
                    ok = false;
                } else {
                    cp = (cp << 6) | (cc & 0x3F);
                }
            }
            if (!ok) {
                out.append('\uFFFD');
                i++;
                continue;
            }
            out.appendCodePoint(cp);
            i += n;
        }
        return out.toString();
    }

    /** Go decodes a \\u escape of an unpaired surrogate as U+FFFD. */
    static String withoutLoneSurrogates(String s) {
        StringBuilder b = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean lone = Character.isHighSurrogate(c)
                    ? i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))
                    : Character.isLowSurrogate(c) && (i == 0 || !Character.isHighSurrogate(s.charAt(i - 1)));
            if (lone && b == null) {
                b = new StringBuilder(s.substring(0, i));
            }
            if (b != null) {
                b.append(lone ? '\uFFFD' : c);
            }
        }
        return b == null ? s : b.toString();
    }

    /** Go's strconv.Quote (the {@code %q} verb): printable runes kept, others escaped with lowercase hex. */
    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        s.codePoints().forEach(c -> {
            switch (c) {
                case '"': b.append("\\\""); return;
                case '\\': b.append("\\\\"); return;
                case 0x07: b.append("\\a"); return;
                case '\b': b.append("\\b"); return;
                case '\f': b.append("\\f"); return;
                case '\n': b.append("\\n"); return;
                case '\r': b.append("\\r"); return;
                case '\t': b.append("\\t"); return;
                case 0x0B: b.append("\\v"); return;
                default:
            }
            if (isPrint(c)) {
                b.appendCodePoint(c);
            } else if (c < ' ' || c == 0x7F) {
                b.append(String.format("\\x%02x", c));
            } else if (Character.isSurrogate((char) c) && c <= 0xFFFF) {
                b.append("\\ufffd");
            } else if (c < 0x10000) {
                b.append(String.format("\\u%04x", c));
            } else {
                b.append(String.format("\\U%08x", c));
            }
        });
        return b.append('"').toString();
    }

    /** Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
    private static boolean isPrint(int c) {
        if (c == ' ') {
            return true;
        }
        switch (Character.getType(c)) {
            case Character.UPPERCASE_LETTER: case Character.LOWERCASE_LETTER: case Character.TITLECASE_LETTER:
            case Character.MODIFIER_LETTER: case Character.OTHER_LETTER:
            case Character.NON_SPACING_MARK: case Character.ENCLOSING_MARK: case Character.COMBINING_SPACING_MARK:
            case Character.DECIMAL_DIGIT_NUMBER: case Character.LETTER_NUMBER: case Character.OTHER_NUMBER:
            case Character.CONNECTOR_PUNCTUATION: case Character.DASH_PUNCTUATION: case Character.START_PUNCTUATION:
            case Character.END_PUNCTUATION: case Character.INITIAL_QUOTE_PUNCTUATION:
            case Character.FINAL_QUOTE_PUNCTUATION: case Character.OTHER_PUNCTUATION:
            case Character.MATH_SYMBOL: case Character.CURRENCY_SYMBOL: case Character.MODIFIER_SYMBOL:
            case Character.OTHER_SYMBOL:
                return true;
            default:
                return false;
        }
    }
}
