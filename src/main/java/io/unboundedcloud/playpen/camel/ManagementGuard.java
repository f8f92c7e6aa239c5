package io.unboundedcloud.playpen.camel;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.HttpExchange;

/**
 * The management listener's gate, in front of every handler on it: browser-made requests are refused unless
 * their origin is configured ({@code --management-allowed-origins}), and requests naming a host that is neither
 * an IP address, localhost, a cluster-internal name nor a configured host are refused (DNS rebinding). In front
 * of Jolokia it also lets through only the read-only request types Hawtio uses (read, list, search, version,
 * exec; the policy decides which operations), never a proxy {@code target}, never a JSONP {@code callback} and
 * never a request that would lift the agent's caps on an answer ({@link #limitRefusal}), in the GET and POST forms
 * and in every request of a bulk POST. A POST body is parsed here and Jolokia gets
 * that parse written back, so the two never read one body differently. A bulk POST holds at most
 * {@value #MAX_BULK_REQUESTS} requests, and its requests go to Jolokia one at a time, each answer written out before
 * the next request runs: the heap holds one answer, never every answer of the bulk at once.
 */
final class ManagementGuard extends Filter {
    static final int MAX_BODY = 256 * 1024;
    /** The most requests one bulk POST may hold. */
    static final int MAX_BULK_REQUESTS = 100;
    /** The request types Hawtio needs; exec is limited by the policy to read-only operations. */
    static final Set<String> JOLOKIA_TYPES = Set.of("read", "list", "search", "version", "exec");
    /** Keys that name another JVM to proxy to (Jolokia's legacy form and its options form). */
    static final Set<String> TARGET_KEYS = Set.of("target", "targetid");

    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            // what Jolokia reads is plain ASCII, whatever charset it assumes
            .enable(JsonWriteFeature.ESCAPE_NON_ASCII)
            .build();
    private static final Pattern CHARSET = Pattern.compile(";\\s*charset\\s*=\\s*\"?([^;,\"\\s]+)",
            Pattern.CASE_INSENSITIVE);
    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

    private final String agentContext;
    private final ManagementAccess access;
    private final com.sun.net.httpserver.HttpHandler agent;

    /** {@code agentContext}: Jolokia's context path when this guards Jolokia (the Jolokia checks too), else null. */
    ManagementGuard(String agentContext, ManagementAccess access) {
        this(agentContext, access, null);
    }

    /** Guards Jolokia's handler {@code agent}, which answers the requests of a bulk POST one at a time. */
    ManagementGuard(String agentContext, ManagementAccess access, com.sun.net.httpserver.HttpHandler agent) {
        this.agentContext = agentContext;
        this.access = access;
        this.agent = agent;
    }

    /** A refusal: the HTTP status and the message (Jolokia's error shape, which Hawtio shows). */
    record Refusal(int status, String message) {
    }

    @Override
    public void doFilter(HttpExchange exchange, Chain chain) throws IOException {
        Refusal refusal = browser(exchange.getRequestHeaders().getFirst("Origin"),
                exchange.getRequestHeaders().getFirst("Sec-Fetch-Site"), exchange.getRequestHeaders().getFirst("Host"));
        List<byte[]> bulk = null;
        if (refusal == null && agentContext != null) {
            Checked checked = jolokia(exchange);
            refusal = checked.refusal();
            bulk = checked.bulk();
        }
        if (refusal != null) {
            refuse(exchange, refusal);
            return;
        }
        String origin = exchange.getRequestHeaders().getFirst("Origin");
        if (agentContext != null && origin != null) {
            // only a configured origin gets here: answer its CORS questions (Jolokia itself never echoes one)
            cors(exchange, origin);
        }
        if (bulk != null && agent != null) {
            bulk(exchange, bulk);
            return;
        }
        chain.doFilter(exchange);
    }

    /**
     * A bulk POST, answered as Jolokia answers one (the JSON array of the single answers, in order), but one request
     * at a time: each goes to Jolokia on its own and its answer is written out before the next one runs. Jolokia
     * would hold every answer of the bulk until the last was ready; a few kilobytes of whole-tree lists then filled
     * the heap and stopped the JVM.
     */
    private void bulk(HttpExchange exchange, List<byte[]> requests) throws IOException {
        try (exchange) {
            OutputStream out = null;
            for (byte[] request : requests) {
                One one = new One(exchange, request);
                agent.handle(one);
                if (out == null) {
                    one.headers.forEach((name, values) -> {
                        if (!name.equalsIgnoreCase("Content-Length") && !name.equalsIgnoreCase("Transfer-Encoding")) {
                            exchange.getResponseHeaders().putIfAbsent(name, values);
                        }
                    });
                    exchange.sendResponseHeaders(200, 0);
                    out = exchange.getResponseBody();
                    out.write('[');
                } else {
                    out.write(',');
                }
                one.body.writeTo(out);
            }
            if (out != null) {
                out.write(']');
                out.close();
            }
        }
    }

    /** One request of a bulk POST as its own exchange: its body is that request, its answer is kept here. */
    private static final class One extends ForwardingExchange {
        private final java.io.InputStream request;
        final com.sun.net.httpserver.Headers headers = new com.sun.net.httpserver.Headers();
        final java.io.ByteArrayOutputStream body = new java.io.ByteArrayOutputStream();
        private int code = -1;

        One(HttpExchange in, byte[] request) {
            super(in);
            this.request = new ByteArrayInputStream(request);
        }

        @Override
        public com.sun.net.httpserver.Headers getResponseHeaders() {
            return headers;
        }

        @Override
        public void close() {
            // the bulk's own exchange is closed once every answer is written
        }

        @Override
        public java.io.InputStream getRequestBody() {
            return request;
        }

        @Override
        public OutputStream getResponseBody() {
            return body;
        }

        @Override
        public void sendResponseHeaders(int rCode, long responseLength) {
            code = rCode;
        }

        @Override
        public int getResponseCode() {
            return code;
        }

        @Override
        public void setStreams(java.io.InputStream i, OutputStream o) {
            throw new UnsupportedOperationException("one request of a bulk");
        }
    }

    private static void cors(HttpExchange exchange, String origin) {
        var out = exchange.getResponseHeaders();
        out.set("Access-Control-Allow-Origin", origin.trim());
        out.set("Access-Control-Allow-Credentials", "true");
        out.add("Vary", "Origin");
        if (exchange.getRequestMethod().equalsIgnoreCase("OPTIONS")) {
            out.set("Access-Control-Allow-Methods", "GET, POST");
            String asked = exchange.getRequestHeaders().getFirst("Access-Control-Request-Headers");
            if (asked != null && asked.matches("[A-Za-z0-9!#$%&'*+.^_`|~, -]{1,512}")) {
                out.set("Access-Control-Allow-Headers", asked);
            }
            out.set("Access-Control-Max-Age", "600");
        }
    }

    /**
     * Requests a web page made: any Origin not configured (cross-origin fetches and form posts carry it, and so
     * does every POST), a Sec-Fetch-Site of cross-site or same-site without such an Origin (a script or image tag
     * of another page), and a Host that could be an attacker's DNS name pointing here. Sec-Fetch-Site none (a
     * typed URL) and same-origin (this listener serves no pages; a console's proxy in front of it may pass on what
     * the browser said about the console's own page) pass.
     */
    Refusal browser(String origin, String fetchSite, String host) {
        boolean allowedOrigin = origin != null && access.allowsOrigin(origin);
        if (origin != null && !allowedOrigin) {
            return new Refusal(403, "requests from web pages are refused: origin " + printable(origin)
                    + " is not in --management-allowed-origins");
        }
        String site = fetchSite == null ? "" : fetchSite.trim().toLowerCase(Locale.ROOT);
        if (!allowedOrigin && (site.equals("cross-site") || site.equals("same-site"))) {
            return new Refusal(403, "requests from web pages are refused (Sec-Fetch-Site: " + printable(fetchSite)
                    + "); add the page's origin to --management-allowed-origins");
        }
        if (host != null && !hostAllowed(host)) {
            return new Refusal(403, "host " + printable(host) + " is not an IP address, localhost or a cluster-internal"
                    + " name; add it to --management-allowed-hosts to reach this listener by that name");
        }
        return null;
    }

    boolean hostAllowed(String hostHeader) {
        String host = hostHeader.trim().toLowerCase(Locale.ROOT);
        if (host.startsWith("[")) {
            // an IPv6 literal, with or without a port
            int end = host.indexOf(']');
            return end > 1 && (end == host.length() - 1 || host.charAt(end + 1) == ':');
        }
        int colon = host.lastIndexOf(':');
        if (colon >= 0) {
            host = host.substring(0, colon);
        }
        if (host.endsWith(".")) {
            host = host.substring(0, host.length() - 1);
        }
        if (host.isEmpty()) {
            return false;
        }
        if (IPV4.matcher(host).matches() || host.equals("localhost") || host.endsWith(".localhost")
                || host.endsWith(".svc") || host.endsWith(".cluster.local")) {
            return true;
        }
        return access.allowsHost(host);
    }

    /** The Jolokia checks: a refusal, or the requests of a bulk POST (null for anything else that passes). */
    private Checked jolokia(HttpExchange exchange) throws IOException {
        URI uri = exchange.getRequestURI();
        Map<String, List<String>> params;
        try {
            params = jolokiaParameters(uri.getQuery());
        } catch (IllegalArgumentException e) {
            return refused(new Refusal(400, "the query string is not valid"));
        }
        Refusal q = queryRefusal(params);
        if (q != null) {
            return refused(q);
        }
        String method = exchange.getRequestMethod().toUpperCase(Locale.ROOT);
        if (method.equals("GET")) {
            // Jolokia takes the type from the path, and from ?p= only when the path names nothing: both must pass
            Refusal path = getRefusal(pathInfo(uri.getPath()));
            return refused(path != null || !params.containsKey("p") ? path : getRefusal(params.get("p").get(0)));
        }
        if (method.equals("POST")) {
            String contentType = exchange.getRequestHeaders().getFirst("Content-Type");
            if (!utf8(contentType)) {
                return refused(new Refusal(415, "request bodies must be UTF-8 JSON"));
            }
            byte[] body;
            try (InputStream in = exchange.getRequestBody()) {
                body = in.readNBytes(MAX_BODY + 1);
            }
            if (body.length > MAX_BODY) {
                return refused(new Refusal(413, "request body too large"));
            }
            Checked checked = checkPost(body);
            if (checked.refusal() == null) {
                exchange.setStreams(new ByteArrayInputStream(checked.body()), exchange.getResponseBody());
            }
            return checked;
        }
        // OPTIONS (a CORS preflight) got here only with a configured Origin; other methods Jolokia refuses itself
        return refused(null);
    }

    private static Checked refused(Refusal r) {
        return new Checked(r, null, null);
    }

    /** The query parameters the way Jolokia reads them: URI.getQuery() split on '&amp;', each part URL-decoded. */
    static Map<String, List<String>> jolokiaParameters(String query) {
        Map<String, List<String>> out = new TreeMap<>();
        if (query == null) {
            return out;
        }
        for (String part : query.split("&")) {
            int eq = part.indexOf('=');
            String name = URLDecoder.decode(eq < 0 ? part : part.substring(0, eq), StandardCharsets.UTF_8);
            String value = eq < 0 ? "" : URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8);
            out.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
        }
        return out;
    }

    /** The options that cap what one answer holds (Jolokia's names, matched in any case here). */
    static final Set<String> LIMIT_KEYS = Set.of("maxdepth", "maxcollectionsize", "maxobjects");

    /**
     * A request may lower the agent's caps on what one answer holds, never lift them: Jolokia reads 0 (or less) as
     * "no cap" and takes it over the agent's own, so a cap a request asks for must be a whole number from 1 (a
     * larger one than the agent's gets the agent's). Null when {@code key} is no cap or {@code value} is such a
     * number.
     */
    static Refusal limitRefusal(String key, String value) {
        if (!LIMIT_KEYS.contains(key.trim().toLowerCase(Locale.ROOT))
                || value != null && value.matches("[0-9]{1,9}") && Integer.parseInt(value) > 0) {
            return null;
        }
        return new Refusal(400, printable(key) + " must be a whole number from 1 (a larger one gets this agent's own"
                + " cap); 0 or less would lift the cap, which this agent does not allow: leave it out to get the cap");
    }

    static Refusal queryRefusal(Map<String, List<String>> params) {
        for (Map.Entry<String, List<String>> param : params.entrySet()) {
            String name = param.getKey();
            String n = name.trim().toLowerCase(Locale.ROOT);
            if (n.equals("callback")) {
                return new Refusal(403, "JSONP (callback) is disabled on this agent");
            }
            if (TARGET_KEYS.contains(n)) {
                return new Refusal(403, "proxy requests (target) are disabled on this agent");
            }
            for (String value : param.getValue()) {
                Refusal limit = limitRefusal(name, value);
                if (limit != null) {
                    return limit;
                }
            }
        }
        List<String> p = params.get("p");
        if (p != null && p.size() > 1) {
            return new Refusal(400, "more than one p parameter");
        }
        return null;
    }

    private String pathInfo(String path) {
        if (path == null) {
            return "";
        }
        return path.startsWith(agentContext) ? path.substring(agentContext.length()) : path;
    }

    /** A GET names its type as the first path element (after any slashes); none is a version request. */
    static Refusal getRefusal(String pathInfo) {
        String rest = pathInfo.replaceFirst("^/+", "");
        int slash = rest.indexOf('/');
        String type = (slash < 0 ? rest : rest.substring(0, slash)).toLowerCase(Locale.ROOT);
        if (type.isEmpty() || JOLOKIA_TYPES.contains(type)) {
            return null;
        }
        return typeRefusal(type);
    }

    private static Refusal typeRefusal(String type) {
        if (type.trim().equals("notification")) {
            return new Refusal(403, "notifications are disabled on this agent");
        }
        return new Refusal(403, "request type " + printable(type) + " is not allowed on this agent (allowed: "
                + String.join(", ", new java.util.TreeSet<>(JOLOKIA_TYPES)) + ")");
    }

    /**
     * A checked POST: the refusal, or the body Jolokia gets (the parse re-written, ASCII only) and, for a bulk of
     * more than one request, each request on its own (written the same way).
     */
    record Checked(Refusal refusal, byte[] body, List<byte[]> bulk) {
    }

    static Checked checkPost(byte[] body) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(body)).toString();
        } catch (CharacterCodingException e) {
            return refused(new Refusal(400, "request body is not UTF-8"));
        }
        JsonNode tree;
        try {
            tree = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            return refused(new Refusal(400, "request body is not one JSON object or array"));
        }
        if (tree == null || !(tree.isObject() || tree.isArray())) {
            return refused(new Refusal(400, "request body is not one JSON object or array"));
        }
        if (tree.isArray() && tree.size() > MAX_BULK_REQUESTS) {
            return refused(new Refusal(413, "a bulk request holds at most " + MAX_BULK_REQUESTS + " requests, this one "
                    + tree.size() + "; split it into several"));
        }
        List<JsonNode> requests = new ArrayList<>();
        if (tree.isArray()) {
            tree.forEach(requests::add);
        } else {
            requests.add(tree);
        }
        for (JsonNode r : requests) {
            Refusal refusal = requestRefusal(r);
            if (refusal != null) {
                return refused(refusal);
            }
        }
        try {
            List<byte[]> bulk = null;
            if (tree.isArray() && tree.size() > 1) {
                bulk = new ArrayList<>();
                for (JsonNode r : requests) {
                    bulk.add(JSON.writeValueAsBytes(r));
                }
            }
            return new Checked(null, JSON.writeValueAsBytes(tree), bulk);
        } catch (JsonProcessingException e) {
            return refused(new Refusal(400, "request body cannot be passed on"));
        }
    }

    private static Refusal requestRefusal(JsonNode r) {
        if (!r.isObject()) {
            return new Refusal(400, "every request of a bulk request must be a JSON object");
        }
        JsonNode type = r.get("type");
        if (type == null || !type.isTextual()) {
            return new Refusal(400, "a request needs a type");
        }
        String t = type.textValue().toLowerCase(Locale.ROOT);
        if (!JOLOKIA_TYPES.contains(t)) {
            return typeRefusal(t);
        }
        for (Iterator<String> it = r.fieldNames(); it.hasNext();) {
            if (TARGET_KEYS.contains(it.next().trim().toLowerCase(Locale.ROOT))) {
                return new Refusal(403, "proxy requests (target) are disabled on this agent");
            }
        }
        for (String holder : List.of("options", "config")) {
            JsonNode o = r.get(holder);
            if (o != null && o.isObject()) {
                for (Iterator<String> it = o.fieldNames(); it.hasNext();) {
                    String name = it.next();
                    String key = name.trim().toLowerCase(Locale.ROOT);
                    if (TARGET_KEYS.contains(key)) {
                        return new Refusal(403, "proxy requests (target) are disabled on this agent");
                    }
                    if (key.equals("callback")) {
                        return new Refusal(403, "JSONP (callback) is disabled on this agent");
                    }
                    JsonNode v = o.get(name);
                    Refusal limit = limitRefusal(name, v.isIntegralNumber() ? v.asText() : v.isTextual() ? v.textValue()
                            : null);
                    if (limit != null) {
                        return limit;
                    }
                }
            }
        }
        return null;
    }

    /** No charset, or UTF-8: Jolokia decodes with the declared charset, this filter only with UTF-8. */
    static boolean utf8(String contentType) {
        if (contentType == null) {
            return true;
        }
        Matcher m = CHARSET.matcher(contentType);
        while (m.find()) {
            String cs = m.group(1).toLowerCase(Locale.ROOT);
            if (!cs.equals("utf-8") && !cs.equals("utf8")) {
                return false;
            }
        }
        return true;
    }

    /** For messages: at most 100 characters, control and line-break characters shown as '?'. */
    static String printable(String s) {
        StringBuilder out = new StringBuilder();
        s.codePoints().limit(100).forEach(cp -> out.appendCodePoint(
                Character.isISOControl(cp) || cp == 0x2028 || cp == 0x2029 ? '?' : cp));
        return "\"" + out + "\"";
    }

    private static void refuse(HttpExchange exchange, Refusal r) throws IOException {
        // drain what is left of the request so the connection can be reused, up to the body limit
        try (InputStream in = exchange.getRequestBody()) {
            in.readNBytes(MAX_BODY);
        } catch (IOException e) {
            // the answer still goes out
        }
        byte[] out = ("{\"status\":" + r.status() + ",\"error_type\":\"java.lang.SecurityException\",\"error\":"
                + JSON.writeValueAsString(r.message()) + "}").getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json; charset=utf-8");
        exchange.sendResponseHeaders(r.status(), out.length);
        try (OutputStream o = exchange.getResponseBody()) {
            o.write(out);
        }
    }

    @Override
    public String description() {
        return "refuses browser-made requests, proxy targets, JSONP and state-changing Jolokia requests";
    }
}
