package io.unboundedcloud.playpen.support;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.tls.Pki;

/**
 * The hostile-client corpus: bad requests read from {@code src/test/resources/hostile/*.txt}, one case per
 * line, sent as raw bytes over their own connection (TLS with one of several client certificates, or plain TCP), and
 * judged: every answer a 4xx Kubernetes {@code Status} (or the connection closed, where the case says so), no class
 * names or stack traces on the wire, no header the client tried to inject, the cluster unchanged and the server still
 * healthy. Used by {@code HostileClientsRouteTest} (in-process, {@code mvn verify}) and the chaos suite (a replica
 * process).
 *
 * <p>Line format: {@code id | conn | expect | request line | headers | body} (fields split on {@code " | "}; the body
 * is the rest of the line). {@code conn}: {@code fp} (trusted front-proxy certificate), {@code none}, {@code wrongca},
 * {@code expired}, {@code notyet}, {@code noeku} (no clientAuth usage), {@code badcn} (CN not allowed), {@code ca}
 * (the CA certificate itself), {@code selfsigned}, {@code tls12} (client offers TLS 1.2 only), {@code plain} (plain
 * TCP to the TLS port). {@code expect}: alternatives split on commas, e.g. {@code 400},
 * {@code 4xx}, {@code close}, {@code 403,431}, optionally followed by the exact Status message (or all of it before
 * the advice {@code "; send ..."} that follows what is wrong with a body that does not decode). The request line
 * {@code POST <<allocs>>} gets {@code HTTP/1.1}; {@code RAW <bytes>} sends the bytes alone. Headers split on
 * {@code ;;}; by default {@code Host}, the user {@code alice} in {@code playpen-users} ({@code @nouser} drops it),
 * {@code Connection: close} ({@code @keepalive}) and {@code Content-Length} ({@code @nolength}) are added. Macros:
 * {@code <<allocs>>}, {@code <<deallocs>>}, {@code <<v1>>}, {@code <<wg>>} (a valid WireGuard key), {@code <<key>>}
 * (a key unique to the case), {@code <<rep N:text>>}; escapes {@code \r \n \t \0 \\ \xNN}.
 */
public final class HostileCorpus {
    static final ObjectMapper M = new ObjectMapper();
    public static final String V1 = "/apis/playpen.unbounded-cloud.io/v1alpha1";
    /** What must never reach a client: Java class names, stack frames, framework packages. */
    static final Pattern LEAK = Pattern.compile("(?i)(exception|\\bat [a-z0-9_$]+\\.[a-z0-9_$.]+\\(|\\bjava\\.|\\bjavax\\."
            + "|org\\.apache|io\\.netty|io\\.fabric8|io\\.unboundedcloud|com\\.fasterxml|\\.java:\\d+|caused by)");
    private static final Pattern REP = Pattern.compile("<<rep (\\d+):(.*?)>>", Pattern.DOTALL);

    public record Case(String id, String conn, List<String> expect, String message, String requestLine,
            List<String> headers, String body, String source) {
        @Override
        public String toString() {
            return id;
        }
    }

    /** One HTTP answer as parsed from the wire. */
    public record Reply(int code, Map<String, String> headers, String body) {
    }

    /** What a case got: the answers (empty = connection closed without one) and every rule it broke. */
    public record Outcome(Case c, List<Reply> replies, String closedBy, List<String> problems) {
        /** "400", "403", ... for the first answer, "close" when there was none. */
        public String observed() {
            return replies.isEmpty() ? "close" : String.valueOf(replies.get(0).code());
        }
    }

    /** Where to send the corpus and with which front-proxy CA (its key issues the good and the bad client certificates). */
    public static final class Target {
        final String host;
        final int port;
        /** How long to wait for the answer or the close: longer than the server's header and body deadlines. */
        Duration readBudget = Duration.ofSeconds(10);
        final Map<String, SSLContext> contexts = new LinkedHashMap<>();

        public Target(String host, int port, Pki.Issued frontProxyCa, String allowedCn) throws Exception {
            this.host = host;
            this.port = port;
            Instant now = Instant.now();
            Duration day = Duration.ofDays(1);
            Pki.Issued otherCa = Pki.selfSigned(Pki.Subject.cn("hostile-other-ca"), Pki.Usage.CA, now.minusSeconds(60), day);
            contexts.put("fp", ctx(Pki.issue(frontProxyCa, Pki.Subject.cn(allowedCn), Pki.Usage.CLIENT, now.minusSeconds(60), day)));
            contexts.put("none", ctx(null));
            contexts.put("tls12", ctx(null));
            contexts.put("wrongca", ctx(Pki.issue(otherCa, Pki.Subject.cn(allowedCn), Pki.Usage.CLIENT, now.minusSeconds(60), day)));
            contexts.put("expired", ctx(Pki.issue(frontProxyCa, Pki.Subject.cn(allowedCn), Pki.Usage.CLIENT,
                    now.minus(Duration.ofDays(3)), day)));
            contexts.put("notyet", ctx(Pki.issue(frontProxyCa, Pki.Subject.cn(allowedCn), Pki.Usage.CLIENT,
                    now.plus(Duration.ofDays(2)), day)));
            contexts.put("noeku", ctx(Pki.issue(frontProxyCa, Pki.Subject.cn(allowedCn), Pki.Usage.SERVER, now.minusSeconds(60), day)));
            contexts.put("badcn", ctx(Pki.issue(frontProxyCa, Pki.Subject.cn("hostile-not-allowed"), Pki.Usage.CLIENT,
                    now.minusSeconds(60), day)));
            contexts.put("ca", ctx(frontProxyCa));
            contexts.put("selfsigned", ctx(Pki.selfSigned(Pki.Subject.cn(allowedCn), Pki.Usage.CLIENT, now.minusSeconds(60), day)));
        }

        /** Waits up to {@code budget} for each answer (set it above the server's request header and body timeouts). */
        public Target readBudget(Duration budget) {
            this.readBudget = budget;
            return this;
        }

        private static SSLContext ctx(Pki.Issued cert) throws Exception {
            return OperatorHarness.sslContext(cert);
        }
    }

    private HostileCorpus() {
    }

    /** Every case of every {@code hostile/*.txt} on the test class path, in file then line order. */
    public static List<Case> load() throws IOException {
        try {
            Path dir = Path.of(Objects.requireNonNull(HostileCorpus.class.getResource("/hostile"), "hostile/ resources").toURI());
            List<Case> out = new ArrayList<>();
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.filter(p -> p.toString().endsWith(".txt")).sorted().toList()) {
                    List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
                    for (int i = 0; i < lines.size(); i++) {
                        String line = lines.get(i);
                        if (line.isBlank() || line.startsWith("#")) {
                            continue;
                        }
                        out.add(parse(line, f.getFileName() + ":" + (i + 1)));
                    }
                }
            }
            return out;
        } catch (URISyntaxException e) {
            throw new IOException(e);
        }
    }

    static Case parse(String line, String source) {
        String[] f = line.split(" \\| ", 6);
        if (f.length < 4) {
            throw new IllegalArgumentException(source + ": want id | conn | expect | request [| headers [| body]]");
        }
        String expectField = f[2].trim();
        int sp = expectField.indexOf(' ');
        List<String> expect = List.of((sp < 0 ? expectField : expectField.substring(0, sp)).split(","));
        String message = sp < 0 ? null : expectField.substring(sp + 1);
        List<String> headers = f.length > 4 && !f[4].isBlank() ? Arrays.stream(f[4].split(";;")).map(String::trim).toList()
                : List.of();
        return new Case(f[0].trim(), f[1].trim(), expect, message, f[3].trim(), headers, f.length > 5 ? f[5] : null, source);
    }

    /** The bytes the case sends. */
    public static byte[] request(Case c) {
        if (c.requestLine().startsWith("RAW ")) {
            return expand(c.requestLine().substring(4), c);
        }
        String line = c.requestLine();
        if (line.split(" ").length == 2) {
            line += " HTTP/1.1";
        }
        byte[] body = c.body() == null ? new byte[0] : expand(c.body(), c);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(expand(line + "\r\n", c));
        boolean user = !c.headers().contains("@nouser");
        List<String> head = new ArrayList<>();
        head.add("Host: 127.0.0.1");
        if (user) {
            head.add("X-Remote-User: alice");
            head.add("X-Remote-Group: playpen-users");
        }
        boolean chunked = false;
        for (String h : c.headers()) {
            if (!h.startsWith("@")) {
                head.add(h);
                chunked |= h.toLowerCase(Locale.ROOT).startsWith("transfer-encoding");
            }
        }
        if (!c.headers().contains("@keepalive")) {
            head.add("Connection: close");
        }
        if (!c.headers().contains("@nolength") && !chunked && (body.length > 0 || line.startsWith("POST "))) {
            head.add("Content-Length: " + body.length);
        }
        for (String h : head) {
            out.writeBytes(expand(h + "\r\n", c));
        }
        out.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
        out.writeBytes(body);
        return out.toByteArray();
    }

    /** Macros, then escapes; characters above U+00FF are written as UTF-8. */
    static byte[] expand(String text, Case c) {
        String s = text.replace("<<allocs>>", V1 + "/allocs").replace("<<deallocs>>", V1 + "/deallocs")
                .replace("<<v1>>", V1).replace("<<key>>", "hostile-" + c.id())
                .replace("<<wg>>", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
        Matcher m = REP.matcher(s);
        StringBuilder sb = new StringBuilder();
        while (m.find()) {
            m.appendReplacement(sb, Matcher.quoteReplacement(m.group(2).repeat(Integer.parseInt(m.group(1)))));
        }
        m.appendTail(sb);
        s = sb.toString();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == '\\' && i + 1 < s.length()) {
                char n = s.charAt(++i);
                switch (n) {
                    case 'r' -> out.write('\r');
                    case 'n' -> out.write('\n');
                    case 't' -> out.write('\t');
                    case '0' -> out.write(0);
                    case '\\' -> out.write('\\');
                    case 'x' -> {
                        out.write(Integer.parseInt(s.substring(i + 1, i + 3), 16));
                        i += 2;
                    }
                    default -> {
                        out.write('\\');
                        out.writeBytes(String.valueOf(n).getBytes(StandardCharsets.UTF_8));
                    }
                }
            } else if (ch < 0x100) {
                out.write(ch);
            } else {
                out.writeBytes(String.valueOf(ch).getBytes(StandardCharsets.UTF_8));
            }
        }
        return out.toByteArray();
    }

    /**
     * Sends the case and judges it. {@code snapshot} reads the cluster state that must not change (called before and
     * after); {@code healthy} says whether the server still answers its probe.
     */
    public static Outcome run(Case c, Target target, Supplier<Object> snapshot, Supplier<Boolean> healthy) {
        List<String> problems = new ArrayList<>();
        Object before = snapshot.get();
        byte[] raw = new byte[0];
        String closedBy = null;
        try {
            Wire w = exchange(c, target);
            raw = w.bytes();
            closedBy = w.closed() ? "close" : null;
        } catch (IOException e) {
            closedBy = e.getClass().getSimpleName();
        }
        if (c.conn().equals("plain") && raw.length >= 2 && raw[0] == 0x15 && raw[1] == 0x03) {
            // a TLS alert record to bytes that were not a valid handshake: the TLS listener's way of saying no
            closedBy = "tls-alert" + (closedBy == null ? ", connection open" : "");
            raw = new byte[0];
        }
        List<Reply> replies = new ArrayList<>();
        String wire = new String(raw, StandardCharsets.ISO_8859_1);
        boolean head = c.requestLine().startsWith("HEAD ");
        try {
            replies.addAll(parseReplies(raw, head));
        } catch (RuntimeException e) {
            problems.add("unparseable answer: " + abbreviate(wire));
        }
        if (raw.length > 0 && closedBy == null && replies.isEmpty()) {
            problems.add("bytes that are not an HTTP answer: " + abbreviate(wire));
        }
        Matcher leak = LEAK.matcher(wire);
        if (leak.find()) {
            problems.add("leaks '" + leak.group() + "' on the wire: " + abbreviate(wire));
        }
        if (replies.isEmpty()) {
            if (closedBy == null) {
                problems.add("no answer within " + target.readBudget.toSeconds() + " s and the connection still open");
            } else if (!c.expect().contains("close")) {
                problems.add("connection closed without an answer (" + closedBy + "), expected " + c.expect());
            }
        }
        for (int i = 0; i < replies.size(); i++) {
            Reply r = replies.get(i);
            String code = String.valueOf(r.code());
            if (!c.expect().contains(code) && !(c.expect().contains("4xx") && r.code() / 100 == 4)) {
                problems.add("answer " + (i + 1) + " is " + code + ", expected " + c.expect() + ": " + abbreviate(r.body()));
            }
            if (r.headers().containsKey("x-injected")) {
                problems.add("answer " + (i + 1) + " carries the injected header X-Injected");
            }
            if (!"application/json".equals(r.headers().get("content-type"))) {
                problems.add("answer " + (i + 1) + " Content-Type " + r.headers().get("content-type"));
            }
            if (head) {
                continue; // an answer to HEAD has no body to judge
            }
            try {
                JsonNode st = M.readTree(r.body());
                if (st == null || !"Status".equals(st.path("kind").asText()) || !"Failure".equals(st.path("status").asText())
                        || st.path("code").asInt() != r.code()) {
                    problems.add("answer " + (i + 1) + " is not a Failure Status with code " + code + ": " + abbreviate(r.body()));
                } else if (i == 0 && c.message() != null && !sameMessage(c.message(), st.path("message").asText())) {
                    problems.add("message '" + st.path("message").asText() + "', expected '" + c.message() + "'");
                }
            } catch (IOException e) {
                problems.add("answer " + (i + 1) + " is not JSON: " + abbreviate(r.body()));
            }
        }
        Object after = snapshot.get();
        if (!Objects.equals(before, after)) {
            problems.add("the cluster changed: before " + before + " after " + after);
        }
        if (!healthy.get()) {
            problems.add("the server is not healthy after the case");
        }
        return new Outcome(c, replies, closedBy, problems);
    }

    /** What came back, and whether the server closed the connection (EOF) rather than the read budget ending. */
    record Wire(byte[] bytes, boolean closed) {
    }

    /** Writes the bytes on a fresh connection and reads until the server closes (or the read budget ends). */
    static Wire exchange(Case c, Target t) throws IOException {
        byte[] request = request(c);
        Socket s;
        if (c.conn().equals("plain")) {
            s = new Socket();
            s.connect(new InetSocketAddress(t.host, t.port), 5000);
        } else {
            SSLContext ctx = t.contexts.get(c.conn());
            if (ctx == null) {
                throw new IllegalArgumentException(c.source() + ": unknown conn " + c.conn());
            }
            SSLSocket ssl = (SSLSocket) ctx.getSocketFactory().createSocket();
            ssl.connect(new InetSocketAddress(t.host, t.port), 5000);
            if (c.conn().equals("tls12")) {
                ssl.setEnabledProtocols(new String[] {"TLSv1.2"});
            }
            s = ssl;
        }
        try (s) {
            s.setSoTimeout((int) t.readBudget.toMillis());
            if (s instanceof SSLSocket ssl) {
                ssl.startHandshake();
            }
            OutputStream out = s.getOutputStream();
            try {
                out.write(request);
                out.flush();
            } catch (IOException e) {
                // the server may answer from the head alone and close while the rest is still on its way
            }
            InputStream in = s.getInputStream();
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            long deadline = System.nanoTime() + t.readBudget.toNanos();
            boolean head = c.requestLine().startsWith("HEAD ");
            boolean closed = false;
            try {
                int n;
                while (System.nanoTime() < deadline) {
                    n = in.read(buf);
                    if (n < 0) {
                        closed = true;
                        break;
                    }
                    all.write(buf, 0, n);
                    // stop at a complete answer that closes the connection (the server may linger before it closes);
                    // after any complete answer, wait only briefly for more (pipelined requests)
                    List<Reply> sofar;
                    try {
                        sofar = parseReplies(all.toByteArray(), head);
                    } catch (RuntimeException incomplete) {
                        continue;
                    }
                    if (!sofar.isEmpty()) {
                        if ("close".equalsIgnoreCase(sofar.get(sofar.size() - 1).headers().get("connection"))) {
                            break;
                        }
                        s.setSoTimeout(1000);
                    }
                }
            } catch (SocketTimeoutException e) {
                // a connection kept open: what came so far is the answer
            } catch (IOException e) {
                if (all.size() == 0) {
                    throw e;
                }
                closed = true;
            }
            return new Wire(all.toByteArray(), closed);
        }
    }

    /** Consecutive HTTP/1.x answers with Content-Length bodies (chunked bodies are de-chunked). */
    static List<Reply> parseReplies(byte[] bytes) {
        return parseReplies(bytes, false);
    }

    /**
     * Interim 1xx answers are skipped; {@code head} = answers to HEAD carry no body. Throws while an answer is
     * incomplete.
     */
    static List<Reply> parseReplies(byte[] bytes, boolean head) {
        List<Reply> out = new ArrayList<>();
        String text = new String(bytes, StandardCharsets.ISO_8859_1);
        int pos = 0;
        while (pos < text.length()) {
            int end = text.indexOf("\r\n\r\n", pos);
            if (end < 0 || !text.startsWith("HTTP/1.", pos)) {
                throw new IllegalArgumentException("not an HTTP answer at " + pos);
            }
            String[] lines = text.substring(pos, end).split("\r\n");
            Map<String, String> headers = new LinkedHashMap<>();
            for (int i = 1; i < lines.length; i++) {
                int colon = lines[i].indexOf(':');
                headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
            }
            int code = Integer.parseInt(lines[0].split(" ")[1]);
            int bodyStart = end + 4;
            String body;
            if (code / 100 == 1 || head) {
                body = "";
                pos = bodyStart;
                if (code / 100 == 1) {
                    continue;
                }
            } else if (headers.containsKey("content-length")) {
                int len = Integer.parseInt(headers.get("content-length"));
                if (bodyStart + len > text.length()) {
                    throw new IllegalArgumentException("incomplete body");
                }
                body = text.substring(bodyStart, bodyStart + len);
                pos = bodyStart + len;
            } else if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
                StringBuilder sb = new StringBuilder();
                int p = bodyStart;
                while (true) {
                    int eol = text.indexOf("\r\n", p);
                    int size = Integer.parseInt(text.substring(p, eol).trim(), 16);
                    p = eol + 2;
                    if (size == 0) {
                        p = text.indexOf("\r\n", p) + 2;
                        break;
                    }
                    sb.append(text, p, p + size);
                    p += size + 2;
                }
                body = sb.toString();
                pos = p;
            } else {
                body = text.substring(bodyStart);
                pos = text.length();
            }
            out.add(new Reply(code, headers, new String(body.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8)));
        }
        return out;
    }

    /** GET /readyz on a fresh TLS connection without a client certificate answers 2xx. */
    public static boolean ready(Target t) {
        try {
            Case probe = new Case("readyz", "none", List.of("2xx"), null, "GET /readyz", List.of("@nouser"), null, "probe");
            List<Reply> r = parseReplies(exchange(probe, t).bytes());
            return !r.isEmpty() && r.get(0).code() / 100 == 2;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    static String abbreviate(String s) {
        String one = s.replace("\r", "\\r").replace("\n", "\\n");
        return one.length() > 300 ? one.substring(0, 300) + "..." : one;
    }

    /** Resolves a URI-ish target for the chaos suite ("https://127.0.0.1:port"). */
    public static Target target(URI base, Pki.Issued frontProxyCa, String allowedCn) throws Exception {
        return new Target(base.getHost(), base.getPort(), frontProxyCa, allowedCn);
    }

    /** The expected message, or all of it before the advice on what to send that follows a body that does not decode. */
    static boolean sameMessage(String expected, String actual) {
        return expected.equals(actual) || actual.startsWith(expected + "; send ");
    }

}
