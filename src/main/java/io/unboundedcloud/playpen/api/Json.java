package io.unboundedcloud.playpen.api;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * The one JSON mapper for wire documents: declared field order, nulls written as null. {@link #encode} writes
 * the exact bytes of the reference's {@code json.NewEncoder(w).Encode}: Go's string escaping and a trailing newline.
 */
public final class Json {
    public static final ObjectMapper MAPPER = JsonMapper.builder()
            .disable(MapperFeature.SORT_PROPERTIES_ALPHABETICALLY)
            .build();

    private static final ObjectWriter GO = MAPPER.writer().with(new GoEscapes());

    private Json() {
    }

    public static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise " + value.getClass().getSimpleName(), e);
        }
    }

    /** The bytes Go's {@code json.Encoder.Encode} writes for the same document (alloc answers, discovery). */
    public static String encode(Object value) {
        try {
            return GO.writeValueAsString(value) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise " + value.getClass().getSimpleName(), e);
        }
    }

    /**
     * Go's encoding/json string escaping (HTML-safe by default): {@code < > &} and U+2028/U+2029 as six-character
     * escapes with lowercase hex, control characters as {@code \b \f \n \r \t} or the same six-character escape.
     */
    static final class GoEscapes extends CharacterEscapes {
        private static final long serialVersionUID = 1L;
        private final int[] ascii = standardAsciiEscapesForJSON();

        GoEscapes() {
            for (int c = 0; c < 0x20; c++) {
                ascii[c] = ESCAPE_CUSTOM;
            }
            ascii['<'] = ESCAPE_CUSTOM;
            ascii['>'] = ESCAPE_CUSTOM;
            ascii['&'] = ESCAPE_CUSTOM;
        }

        @Override
        public int[] getEscapeCodesForAscii() {
            return ascii;
        }

        @Override
        public SerializableString getEscapeSequence(int ch) {
            switch (ch) {
                case '\b': return new SerializedString("\\b");
                case '\f': return new SerializedString("\\f");
                case '\n': return new SerializedString("\\n");
                case '\r': return new SerializedString("\\r");
                case '\t': return new SerializedString("\\t");
                default:
                    if (ch < 0x20 || ch == '<' || ch == '>' || ch == '&' || ch == 0x2028 || ch == 0x2029) {
                        return new SerializedString(String.format("\\u%04x", ch));
                    }
                    return null;
            }
        }
    }
}
