package io.unboundedcloud.playpen.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The name reader's string types and DER lengths, value by value: every byte of the one-byte types and every UCS-2
 * code unit of BMPString against the character sets Go's certificate parser accepts (written out here, not derived
 * from the reader), and the length encodings at their edges.
 */
class GoCertificateNamesStringsTest {
    /** Go's PrintableString: letters, digits, space and '()+,-./:=?, plus '*' and '&' which Go also takes. */
    static final String GO_PRINTABLE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 '()+,-./:=?*&";

    static byte[] bytes(int... values) {
        byte[] v = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            v[i] = (byte) values[i];
        }
        return v;
    }

    static String read(int tag, int... bytes) throws GoCertificateNames.Unreadable {
        return GoCertificateNames.string(tag, bytes(bytes));
    }

    static boolean readable(int tag, int... bytes) {
        try {
            read(tag, bytes);
            return true;
        } catch (GoCertificateNames.Unreadable e) {
            return false;
        }
    }

    @Test
    void printableStringTakesGosCharactersOnly() throws Exception {
        for (int b = 0; b < 256; b++) {
            boolean go = b < 0x80 && GO_PRINTABLE.indexOf(b) >= 0;
            assertThat(readable(0x13, 'a', b, 'z')).as("PrintableString byte 0x%02x", b).isEqualTo(go);
            if (go) {
                assertThat(read(0x13, b)).isEqualTo(String.valueOf((char) b));
            }
        }
        assertThatThrownBy(() -> read(0x13, '<')).hasMessage("invalid PrintableString");
    }

    @Test
    void ia5AndNumericStringsTakeTheirCharactersOnly() throws Exception {
        for (int b = 0; b < 256; b++) {
            assertThat(readable(0x16, b)).as("IA5String byte 0x%02x", b).isEqualTo(b < 0x80);
            assertThat(readable(0x12, '1', b)).as("NumericString byte 0x%02x", b)
                    .isEqualTo(b >= '0' && b <= '9' || b == ' ');
        }
        assertThat(read(0x16, 'a', 0x7f)).isEqualTo("a\u007f");
        assertThat(read(0x12, '0', ' ', '9')).isEqualTo("0 9");
        assertThatThrownBy(() -> read(0x16, 0x80)).hasMessage("invalid IA5String");
        assertThatThrownBy(() -> read(0x12, 'a')).hasMessage("invalid NumericString");
    }

    @Test
    void t61StringIsLatin1AndUtf8MustBeValid() throws Exception {
        assertThat(read(0x14, 'c', 0xe9, 0xff)).isEqualTo("c\u00e9\u00ff");
        assertThat(read(0x0c, 0xc3, 0xa9)).isEqualTo("\u00e9");
        assertThatThrownBy(() -> read(0x0c, 0xc3)).hasMessage("invalid UTF-8 string");
        assertThatThrownBy(() -> read(0x1a, 'a')).hasMessage("unsupported string type: 26");
    }

    /** Every UCS-2 code unit, big-endian: Go refuses the noncharacters U+FFFE, U+FFFF, U+FDD0-U+FDEF and surrogates. */
    @Test
    void bmpStringTakesEveryCodeUnitGoDoes() throws Exception {
        for (int c = 0; c <= 0xffff; c++) {
            boolean go = !(c == 0xfffe || c == 0xffff || c >= 0xfdd0 && c <= 0xfdef || c >= 0xd800 && c <= 0xdfff);
            int hi = c >> 8;
            int lo = c & 0xff;
            if (go) {
                assertThat(read(0x1e, hi, lo, 0, 'x')).as("U+%04X", c).isEqualTo((char) c + "x");
            } else {
                assertThat(readable(0x1e, hi, lo, 0, 'x')).as("U+%04X", c).isFalse();
            }
        }
    }

    @Test
    void bmpStringLengthAndTerminator() throws Exception {
        assertThatThrownBy(() -> read(0x1e, 0, 'a', 0)).hasMessage("invalid BMPString");
        assertThat(read(0x1e)).isEmpty();
        // a trailing 00 00 is a terminator, dropped; U+0000 elsewhere is a character
        assertThat(read(0x1e, 0, 0)).isEmpty();
        assertThat(read(0x1e, 0, 'a', 0, 0)).isEqualTo("a");
        assertThat(read(0x1e, 0, 0, 0, 'a')).isEqualTo("\u0000a");
        assertThat(read(0x1e, 0, 'a', 0, 0, 0, 0)).isEqualTo("a\u0000");
        assertThat(read(0x1e, 0, 'a', 1, 0)).isEqualTo("a\u0100");
        assertThat(read(0x1e, 0, 'a', 0, 1)).isEqualTo("a\u0001");
    }

    static GoCertificateNames.Der der(int... bytes) {
        byte[] v = bytes(bytes);
        return new GoCertificateNames.Der(v, 0, v.length);
    }

    @Test
    void derLengthsShortAndLongForm() throws Exception {
        // short form up to 127
        byte[] body = new byte[127];
        int[] shortForm = new int[129];
        shortForm[0] = 0x04;
        shortForm[1] = 0x7f;
        GoCertificateNames.Der.Element e = der(shortForm).readAny();
        assertThat(e.tag()).isEqualTo(0x04);
        assertThat(e.bytes()).isEqualTo(body);
        // 0x80 is the indefinite form, which DER does not use; 0x81-0x84 carry one to four length bytes
        assertThatThrownBy(() -> der(0x04, 0x80, 0, 0).readAny()).hasMessage("unsupported length encoding");
        assertThat(der(0x04, 0x81, 0x02, 'h', 'i').readAny().bytes()).isEqualTo("hi".getBytes(StandardCharsets.US_ASCII));
        assertThat(der(0x04, 0x84, 0, 0, 0, 0x01, 'h').readAny().bytes()).isEqualTo("h".getBytes(StandardCharsets.US_ASCII));
        assertThatThrownBy(() -> der(0x04, 0x85, 0, 0, 0, 0, 0x01, 'h').readAny())
                .hasMessage("unsupported length encoding");
        // a length beyond the bytes there are, by one
        assertThatThrownBy(() -> der(0x04, 0x03, 'a', 'b').readAny()).hasMessage("truncated name");
        assertThat(der(0x04, 0x02, 'a', 'b').readAny().bytes()).isEqualTo("ab".getBytes(StandardCharsets.US_ASCII));
        // the length counts from where the contents start, inside a reader that starts further in
        byte[] inner = {0x30, 0x04, 0x04, 0x02, 'a', 'b', 0x04, 0x00};
        GoCertificateNames.Der outer = new GoCertificateNames.Der(inner, 2, 6);
        assertThat(outer.readAny().bytes()).isEqualTo("ab".getBytes(StandardCharsets.US_ASCII));
        assertThat(outer.empty()).isTrue();
        GoCertificateNames.Der cut = new GoCertificateNames.Der(inner, 2, 5);
        assertThatThrownBy(cut::readAny).hasMessage("truncated name");
        assertThatThrownBy(() -> der(0x04, 0x82, 0x01).readAny()).hasMessage("truncated name");
        assertThatThrownBy(() -> der(0x1f, 0x01, 0x00).readAny()).hasMessage("high tag numbers are not used in names");
    }
}
