package io.unboundedcloud.playpen.auth;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;

/**
 * A certificate's subject Common Name as Go's crypto/x509 reads it, which is what kube-apiserver compares with
 * {@code requestheader-allowed-names}: the attributes of the subject in the order they are encoded, and the
 * <em>last</em> CN among them wins (Java's X500Principal readers usually give the first). A name Go would refuse
 * to parse (an attribute value of a string type Go does not read, or one whose bytes do not fit its type) makes
 * the whole certificate unusable for Go, so it is refused here too; the issuer name is held to the same rules.
 */
public final class GoCertificateNames {
    private static final int SEQUENCE = 0x30;
    private static final int SET = 0x31;
    private static final int OID = 0x06;
    private static final byte[] CN_OID = {0x55, 0x04, 0x03};

    private GoCertificateNames() {
    }

    /** Thrown when Go's parser would refuse the certificate's names. */
    public static final class Unreadable extends Exception {
        private static final long serialVersionUID = 1L;

        Unreadable(String message) {
            super(message, null, false, false);
        }
    }

    /** The subject's CommonName as Go's x509 sets it ("" when there is none). */
    public static String commonName(X509Certificate certificate) throws Unreadable {
        byte[] tbs;
        try {
            tbs = certificate.getTBSCertificate();
        } catch (CertificateEncodingException e) {
            throw new Unreadable("the certificate cannot be encoded");
        }
        Der in = new Der(tbs, 0, tbs.length);
        Der body = in.read(SEQUENCE).contents();
        if (body.peekTag() == 0xa0) {
            body.readAny(); // [0] version
        }
        body.readAny(); // serialNumber
        body.read(SEQUENCE); // signature algorithm
        commonNameOf(body.read(SEQUENCE).contents()); // issuer: Go parses it with the same rules
        body.read(SEQUENCE); // validity
        return commonNameOf(body.read(SEQUENCE).contents());
    }

    /** The last CN of an RDNSequence's contents, in encoding order, after checking every value as Go does. */
    static String commonNameOf(Der rdns) throws Unreadable {
        String cn = "";
        while (!rdns.empty()) {
            Der set = rdns.read(SET).contents();
            while (!set.empty()) {
                Der atv = set.read(SEQUENCE).contents();
                Der.Element type = atv.read(OID);
                Der.Element value = atv.readAny();
                String text = string(value.tag(), value.bytes());
                if (java.util.Arrays.equals(type.bytes(), CN_OID)) {
                    cn = text;
                }
            }
        }
        return cn;
    }

    /** Go's parseASN1String: the six string types it reads, each checked as Go checks it. */
    static String string(int tag, byte[] v) throws Unreadable {
        switch (tag) {
            case 0x14: { // T61String, read as ISO-8859-1
                return new String(v, StandardCharsets.ISO_8859_1);
            }
            case 0x13: { // PrintableString
                for (byte b : v) {
                    if (!printable(b)) {
                        throw new Unreadable("invalid PrintableString");
                    }
                }
                return new String(v, StandardCharsets.US_ASCII);
            }
            case 0x0c: { // UTF8String
                try {
                    return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(v)).toString();
                } catch (CharacterCodingException e) {
                    throw new Unreadable("invalid UTF-8 string");
                }
            }
            case 0x1e: { // BMPString: UCS-2, an optional 00 00 terminator
                if (v.length % 2 != 0) {
                    throw new Unreadable("invalid BMPString");
                }
                int len = v.length;
                if (len >= 2 && v[len - 1] == 0 && v[len - 2] == 0) {
                    len -= 2;
                }
                StringBuilder s = new StringBuilder();
                for (int i = 0; i < len; i += 2) {
                    char c = (char) (((v[i] & 0xff) << 8) | (v[i + 1] & 0xff));
                    if (c == 0xfffe || c == 0xffff || (c >= 0xfdd0 && c <= 0xfdef) || (c >= 0xd800 && c <= 0xdfff)) {
                        throw new Unreadable("invalid BMPString");
                    }
                    s.append(c);
                }
                return s.toString();
            }
            case 0x16: { // IA5String: ASCII
                for (byte b : v) {
                    if (b < 0) {
                        throw new Unreadable("invalid IA5String");
                    }
                }
                return new String(v, StandardCharsets.US_ASCII);
            }
            case 0x12: { // NumericString
                for (byte b : v) {
                    if (!(b >= '0' && b <= '9' || b == ' ')) {
                        throw new Unreadable("invalid NumericString");
                    }
                }
                return new String(v, StandardCharsets.US_ASCII);
            }
            default:
                throw new Unreadable("unsupported string type: " + tag);
        }
    }

    private static boolean printable(byte b) {
        return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= '\'' && b <= ')'
                || b >= '+' && b <= '/' || b == ' ' || b == ':' || b == '=' || b == '?' || b == '*' || b == '&';
    }

    /** A minimal DER reader over a byte range: definite lengths only, as certificates are encoded. */
    static final class Der {
        private final byte[] buf;
        private int pos;
        private final int end;

        record Element(int tag, byte[] buf, int from, int to) {
            Der contents() {
                return new Der(buf, from, to);
            }

            byte[] bytes() {
                return java.util.Arrays.copyOfRange(buf, from, to);
            }
        }

        Der(byte[] buf, int from, int to) {
            this.buf = buf;
            this.pos = from;
            this.end = to;
        }

        boolean empty() {
            return pos >= end;
        }

        int peekTag() throws Unreadable {
            if (empty()) {
                throw new Unreadable("truncated name");
            }
            return buf[pos] & 0xff;
        }

        Element read(int tag) throws Unreadable {
            Element e = readAny();
            if (e.tag() != tag) {
                throw new Unreadable("unexpected element in name");
            }
            return e;
        }

        Element readAny() throws Unreadable {
            int tag = peekTag();
            if ((tag & 0x1f) == 0x1f) {
                throw new Unreadable("high tag numbers are not used in names");
            }
            pos++;
            if (empty()) {
                throw new Unreadable("truncated name");
            }
            int first = buf[pos++] & 0xff;
            long len;
            if (first < 0x80) {
                len = first;
            } else {
                int n = first & 0x7f;
                if (n == 0 || n > 4) {
                    throw new Unreadable("unsupported length encoding");
                }
                len = 0;
                for (int i = 0; i < n; i++) {
                    if (empty()) {
                        throw new Unreadable("truncated name");
                    }
                    len = (len << 8) | (buf[pos++] & 0xff);
                }
            }
            if (len > end - pos) {
                throw new Unreadable("truncated name");
            }
            Element e = new Element(tag, buf, pos, pos + (int) len);
            pos += (int) len;
            return e;
        }
    }
}
