package io.unboundedcloud.playpen.auth;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.unboundedcloud.playpen.api.ApiException;

/**
 * The user kube-apiserver vouches for, read from its front-proxy headers exactly as kube-apiserver's own
 * request-header authenticator reads them: the first {@code X-Remote-User} line is the user (none, or an empty
 * one, is no user: 403); every non-empty {@code X-Remote-Group} line is one group, verbatim (group names may hold
 * commas); every {@code X-Remote-Extra-<key>} line adds a value to the extra {@code key}, lower-cased and
 * percent-decoded (kept as sent when the escape is malformed); the first {@code X-Remote-Uid} line is the uid, when
 * kube-apiserver lists that header in {@code requestheader-uid-headers} (else the caller may have sent it).
 * Values are taken as sent, never trimmed, and decoded as UTF-8. A value that is not UTF-8, or that holds a
 * control character other than tab (which Go's HTTP server refuses), is a 400 naming the header, saying why and
 * that kube-apiserver's aggregator sent it, and never repeating the value (it may be hostile).
 */
public final class IdentityHeaders {
    public static final String USER = "X-Remote-User";
    public static final String UID = "X-Remote-Uid";
    public static final String GROUP = "X-Remote-Group";
    public static final String EXTRA_PREFIX = "X-Remote-Extra-";

    private IdentityHeaders() {
    }

    /**
     * The identity in these header lines, in the order they arrived, from a kube-apiserver that sends the uid in
     * {@code X-Remote-Uid}. Names compare case-insensitively; each value is the line's bytes as one char per byte
     * (ISO-8859-1), the way Netty and the JDK hand header values over.
     */
    public static Identity parse(Iterable<Map.Entry<String, String>> lines) {
        return parse(lines, true);
    }

    /**
     * Like {@link #parse(Iterable)}; {@code readUid} false (kube-apiserver does not list {@code X-Remote-Uid} in
     * {@code requestheader-uid-headers}, so the header may be the caller's own) leaves the uid empty.
     */
    public static Identity parse(Iterable<Map.Entry<String, String>> lines, boolean readUid) {
        String user = null;
        String uid = null;
        List<String> groups = new ArrayList<>();
        Map<String, List<String>> extra = new LinkedHashMap<>();
        for (Map.Entry<String, String> line : lines) {
            String name = line.getKey();
            String raw = line.getValue() == null ? "" : line.getValue();
            if (name.equalsIgnoreCase(USER)) {
                if (user == null) {
                    user = value(USER, raw);
                }
            } else if (name.equalsIgnoreCase(UID)) {
                if (readUid && uid == null) {
                    uid = value(UID, raw);
                }
            } else if (name.equalsIgnoreCase(GROUP)) {
                String g = value(GROUP, raw);
                if (!g.isEmpty()) {
                    groups.add(g);
                }
            } else if (name.regionMatches(true, 0, EXTRA_PREFIX, 0, EXTRA_PREFIX.length())) {
                String key = extraKey(name.substring(EXTRA_PREFIX.length()));
                extra.computeIfAbsent(key, k -> new ArrayList<>()).add(value(name, raw));
            }
        }
        if (user == null || user.isEmpty()) {
            throw ApiException.forbidden(FrontProxyAuthenticator.MISSING_USER);
        }
        return new Identity(user, uid == null ? "" : uid, groups, extra);
    }

    /** One header value as UTF-8; 400 for bytes that are not UTF-8 or a control character other than tab. */
    static String value(String header, String raw) {
        byte[] bytes = new byte[raw.length()];
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c > 0xff) {
                // not one byte per char: already decoded text (not from the wire); take it as it is
                return checked(header, raw);
            }
            bytes[i] = (byte) c;
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw ApiException.badRequest(printableName(header) + " is not valid UTF-8" + SENT_BY_THE_FRONT_PROXY);
        }
        return checked(header, text);
    }

    private static String checked(String header, String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                throw ApiException.badRequest(printableName(header) + " holds a control character (only tab is allowed)"
                        + SENT_BY_THE_FRONT_PROXY);
            }
        }
        return text;
    }

    /**
     * kube-apiserver's extra key: the header name after the prefix, lower-cased, then percent-decoded like Go's
     * url.PathUnescape ('+' stays '+'); a malformed escape keeps the lower-cased text. Decoded bytes that are not
     * UTF-8 become U+FFFD, as they would in the SubjectAccessReview's JSON.
     */
    public static String extraKey(String encoded) {
        String lower = encoded.toLowerCase(Locale.ROOT);
        ByteArrayOutputStream out = new ByteArrayOutputStream(lower.length());
        for (int i = 0; i < lower.length(); i++) {
            char c = lower.charAt(i);
            if (c == '%') {
                if (i + 2 >= lower.length() || hex(lower.charAt(i + 1)) < 0 || hex(lower.charAt(i + 2)) < 0) {
                    return lower;
                }
                out.write(hex(lower.charAt(i + 1)) * 16 + hex(lower.charAt(i + 2)));
                i += 2;
            } else if (c > 0xff) {
                byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
                out.write(b, 0, b.length);
            } else {
                out.write(c);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** A lower-case hex digit's value (the key is lower-cased before it is decoded), else -1. */
    private static int hex(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        return -1;
    }

    /**
     * The header as a refusal names it: "the X-Remote-User header"; a name too long or not printable is not quoted
     * (only an extra's name can be: the others are fixed).
     */
    private static String printableName(String header) {
        return header.length() > 80 || !header.matches("[!-~]*") ? "an " + EXTRA_PREFIX + "* header (its name not shown)"
                : "the " + header + " header";
    }

    /**
     * What a refusal adds after why: who sent the header, that the value is not repeated, and what to check. The
     * reader runs the cluster: the aggregator fills these headers from the caller's identity.
     */
    static final String SENT_BY_THE_FRONT_PROXY = ": the front proxy (kube-apiserver's aggregator) sent it, filled from"
            + " the caller's identity, so the request was refused (the value is not repeated here); check the user name,"
            + " uid, groups and extra values the cluster's authenticator (client certificate, token, OIDC or webhook)"
            + " gives this caller";
}
