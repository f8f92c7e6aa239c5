package io.unboundedcloud.playpen.chaos;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A loopback HTTP/1.1 reverse proxy in front of the (plain-HTTP) simulated API server that misbehaves like a
 * kube-apiserver under pressure, each fault at its own rate: APF 429s, 500/503/504, resets before the request is
 * forwarded and after its answer came back (the write landed, the client never heard), added latency, watch streams
 * closed early, 410 "too old resource version" on watches, and 409 on writes. One request per client connection
 * ({@code Connection: close}), so every fault hits exactly one request.
 */
public final class ChaosProxy implements AutoCloseable {
    /** What the proxy can do to one request. */
    public enum Fault {
        /** 429 with Retry-After, as API Priority and Fairness rejects a request. */
        TOO_MANY_REQUESTS,
        INTERNAL_ERROR,
        SERVICE_UNAVAILABLE,
        GATEWAY_TIMEOUT,
        /** TCP reset before the request reaches the API server. */
        RESET_BEFORE,
        /** The request is served by the API server (a write lands), then the client's connection is reset. */
        RESET_AFTER,
        /** 0 to 2 s before the request is forwarded. */
        LATENCY,
        /** A watch is forwarded, then closed after a short while. */
        WATCH_CLOSED_EARLY,
        /** A watch answered with an ERROR event carrying 410 Expired, forcing a re-list. */
        WATCH_GONE,
        /** A write (POST/PUT/PATCH/DELETE) answered 409 Conflict without reaching the API server. */
        CONFLICT_ON_WRITE;

        boolean appliesTo(boolean watch, boolean write) {
            return switch (this) {
                case WATCH_CLOSED_EARLY, WATCH_GONE -> watch;
                case CONFLICT_ON_WRITE -> write;
                case RESET_AFTER -> !watch;
                default -> true;
            };
        }
    }

    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection", "te",
            "trailer", "upgrade", "http2-settings", "transfer-encoding", "content-length", "expect");

    private final URI upstream;
    private final ServerSocket server;
    private final ExecutorService workers;
    private final ScheduledExecutorService closers;
    private final Map<Fault, Double> rates = new EnumMap<>(Fault.class);
    private final Random random;
    private volatile Duration maxLatency = Duration.ofSeconds(2);
    private volatile Duration minLatency = Duration.ZERO;
    private final AtomicLongArray injected = new AtomicLongArray(Fault.values().length);
    private final AtomicLong requests = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Client sockets of watches in flight, so a scenario can make every watcher reconnect (and meet the faults). */
    private final Set<Socket> watches = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** Starts listening on a free loopback port; no faults until {@link #rate} sets some. */
    public ChaosProxy(URI upstream, long seed) throws IOException {
        this.upstream = upstream;
        this.random = new Random(seed);
        this.server = new ServerSocket(0, 256, InetAddress.getLoopbackAddress());
        this.workers = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "chaos-proxy");
            t.setDaemon(true);
            return t;
        });
        this.closers = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "chaos-proxy-closer");
            t.setDaemon(true);
            return t;
        });
        workers.execute(this::acceptLoop);
    }

    public URI url() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    /** Sets one fault's probability per applicable request (0 to 1). */
    public synchronized ChaosProxy rate(Fault fault, double probability) {
        if (probability < 0 || probability > 1) {
            throw new IllegalArgumentException("rate " + probability);
        }
        rates.put(fault, probability);
        return this;
    }

    /** Every fault off. */
    public synchronized ChaosProxy clear() {
        rates.clear();
        return this;
    }

    /** The range {@link Fault#LATENCY} draws from (default 0 to 2 s). */
    public ChaosProxy latency(Duration min, Duration max) {
        this.minLatency = min;
        this.maxLatency = max;
        return this;
    }

    /** Closes every watch in flight: watchers reconnect, and their new watches meet the current fault rates. */
    public int closeWatches() {
        int n = 0;
        for (Socket s : watches) {
            closeQuietly(s);
            n++;
        }
        return n;
    }

    public long requests() {
        return requests.get();
    }

    /** How often each fault was injected so far. */
    public Map<Fault, Long> injected() {
        Map<Fault, Long> out = new EnumMap<>(Fault.class);
        for (Fault f : Fault.values()) {
            out.put(f, injected.get(f.ordinal()));
        }
        return out;
    }

    /** At most one fault per request: the applicable ones are tried in order, each with its own rate. */
    private synchronized Fault draw(boolean watch, boolean write) {
        for (Map.Entry<Fault, Double> e : rates.entrySet()) {
            if (e.getKey().appliesTo(watch, write) && random.nextDouble() < e.getValue()) {
                return e.getKey();
            }
        }
        return null;
    }

    private synchronized long drawMillis(long min, long max) {
        return max <= min ? min : min + (long) (random.nextDouble() * (max - min));
    }

    private void acceptLoop() {
        while (!closed.get()) {
            try {
                Socket client = server.accept();
                workers.execute(() -> serve(client));
            } catch (IOException e) {
                if (!closed.get()) {
                    sleepQuietly(10);
                }
            }
        }
    }

    /** A parsed HTTP/1.1 request or response head. */
    private record Head(String startLine, List<String[]> headers) {
        String header(String name) {
            for (String[] h : headers) {
                if (h[0].equalsIgnoreCase(name)) {
                    return h[1];
                }
            }
            return null;
        }
    }

    private void serve(Socket client) {
        try (client) {
            client.setTcpNoDelay(true);
            InputStream in = new BufferedInputStream(client.getInputStream());
            OutputStream out = client.getOutputStream();
            Head req = readHead(in);
            if (req == null) {
                return;
            }
            byte[] body = readBody(in, req, false);
            requests.incrementAndGet();
            String[] parts = req.startLine().split(" ");
            String method = parts[0];
            String target = parts.length > 1 ? parts[1] : "/";
            boolean watch = target.matches(".*[?&]watch=(true|1)(&.*)?$");
            boolean write = Set.of("POST", "PUT", "PATCH", "DELETE").contains(method);
            // fabric8's Vert.x client watches over WebSocket (Upgrade: websocket), kubectl over chunked HTTP
            boolean websocket = "websocket".equalsIgnoreCase(req.header("Upgrade"));
            if (watch) {
                watches.add(client);
            }
            Fault fault = draw(watch, write);
            if (fault != null) {
                injected.incrementAndGet(fault.ordinal());
            }
            if (fault == Fault.LATENCY) {
                Thread.sleep(drawMillis(minLatency.toMillis(), maxLatency.toMillis()));
            }
            if (fault != null) {
                switch (fault) {
                    case TOO_MANY_REQUESTS -> {
                        status(out, 429, "Too Many Requests", "TooManyRequests",
                                "the server has received too many requests and has asked us to try again later",
                                "Retry-After: 1\r\nX-Kubernetes-Pf-Flowschema-Uid: chaos\r\n");
                        return;
                    }
                    case INTERNAL_ERROR -> {
                        status(out, 500, "Internal Server Error", "InternalError", "chaos: internal error", "");
                        return;
                    }
                    case SERVICE_UNAVAILABLE -> {
                        status(out, 503, "Service Unavailable", "ServiceUnavailable", "chaos: service unavailable",
                                "Retry-After: 1\r\n");
                        return;
                    }
                    case GATEWAY_TIMEOUT -> {
                        status(out, 504, "Gateway Timeout", "Timeout",
                                "chaos: the server was unable to return a response in the time allotted", "");
                        return;
                    }
                    case RESET_BEFORE -> {
                        reset(client);
                        return;
                    }
                    case CONFLICT_ON_WRITE -> {
                        status(out, 409, "Conflict", "Conflict", "chaos: Operation cannot be fulfilled: the object "
                                + "has been modified; please apply your changes to the latest version and try again", "");
                        return;
                    }
                    case WATCH_GONE -> {
                        if (websocket) {
                            webSocketGone(out, req);
                        } else {
                            watchGone(out);
                        }
                        return;
                    }
                    default -> {
                        // forwarded below
                    }
                }
            }
            try (Socket up = new Socket()) {
                up.connect(new InetSocketAddress(upstream.getHost(), upstream.getPort()), 5000);
                up.setTcpNoDelay(true);
                OutputStream upOut = up.getOutputStream();
                if (websocket) {
                    tunnel(client, in, out, up, req, fault == Fault.WATCH_CLOSED_EARLY);
                    return;
                }
                upOut.write(requestBytes(req, body));
                upOut.flush();
                InputStream upIn = new BufferedInputStream(up.getInputStream());
                Head res = readHead(upIn);
                if (res == null) {
                    reset(client);
                    return;
                }
                if (fault == Fault.RESET_AFTER) {
                    readBody(upIn, res, method.equals("HEAD")); // the API server has answered: the write landed
                    reset(client);
                    return;
                }
                if (fault == Fault.WATCH_CLOSED_EARLY) {
                    long after = drawMillis(200, 3000);
                    closers.schedule(() -> {
                        closeQuietly(up);
                        closeQuietly(client);
                    }, after, TimeUnit.MILLISECONDS);
                }
                relay(res, upIn, out, method.equals("HEAD"));
            }
        } catch (IOException e) {
            // the client or the upstream went away; nothing to answer
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            watches.remove(client);
        }
    }

    /**
     * A WebSocket watch: the handshake goes through verbatim, then bytes flow both ways until either side closes (or
     * the early-close fault cuts it).
     */
    private void tunnel(Socket client, InputStream in, OutputStream out, Socket up, Head req, boolean closeEarly)
            throws IOException {
        StringBuilder sb = new StringBuilder(req.startLine()).append("\r\n");
        for (String[] h : req.headers()) {
            sb.append(h[0]).append(": ").append(h[1]).append("\r\n");
        }
        sb.append("\r\n");
        OutputStream upOut = up.getOutputStream();
        upOut.write(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
        upOut.flush();
        if (closeEarly) {
            closers.schedule(() -> {
                closeQuietly(up);
                closeQuietly(client);
            }, drawMillis(200, 3000), TimeUnit.MILLISECONDS);
        }
        workers.execute(() -> {
            try {
                in.transferTo(upOut);
            } catch (IOException e) {
                // either side closed
            } finally {
                closeQuietly(up);
            }
        });
        try {
            up.getInputStream().transferTo(out);
        } finally {
            closeQuietly(client);
        }
    }

    /** The handshake answered here, then one ERROR frame with a 410 Status and a close frame, as the API server does. */
    private static void webSocketGone(OutputStream out, Head req) throws IOException {
        String key = req.header("Sec-WebSocket-Key");
        String accept;
        try {
            accept = java.util.Base64.getEncoder().encodeToString(java.security.MessageDigest.getInstance("SHA-1")
                    .digest((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").getBytes(StandardCharsets.ISO_8859_1)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        String protocol = req.header("Sec-WebSocket-Protocol");
        out.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: " + accept + "\r\n"
                + (protocol == null ? "" : "Sec-WebSocket-Protocol: " + protocol.split(",")[0].trim() + "\r\n")
                + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        byte[] event = GONE_EVENT.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream frame = new ByteArrayOutputStream();
        frame.write(0x81); // FIN + text
        if (event.length < 126) {
            frame.write(event.length);
        } else {
            frame.write(126);
            frame.write(event.length >> 8);
            frame.write(event.length & 0xff);
        }
        frame.write(event);
        frame.write(0x88); // FIN + close, status 1000
        frame.write(2);
        frame.write(0x03);
        frame.write(0xe8);
        out.write(frame.toByteArray());
        out.flush();
    }

    private static final String GONE_EVENT = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
            + "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 1 (2)\","
            + "\"reason\":\"Expired\",\"code\":410}}";

    private static byte[] requestBytes(Head req, byte[] body) {
        StringBuilder sb = new StringBuilder(req.startLine()).append("\r\n");
        for (String[] h : req.headers()) {
            if (!HOP_BY_HOP.contains(h[0].toLowerCase(Locale.ROOT))) {
                sb.append(h[0]).append(": ").append(h[1]).append("\r\n");
            }
        }
        sb.append("Connection: close\r\n");
        if (body.length > 0 || req.header("Content-Length") != null || req.header("Transfer-Encoding") != null) {
            sb.append("Content-Length: ").append(body.length).append("\r\n");
        }
        sb.append("\r\n");
        byte[] head = sb.toString().getBytes(StandardCharsets.ISO_8859_1);
        byte[] all = new byte[head.length + body.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(body, 0, all, head.length, body.length);
        return all;
    }

    /** The upstream's answer to the client: same status and headers but {@code Connection: close}, body streamed. */
    private static void relay(Head res, InputStream upIn, OutputStream out, boolean head) throws IOException {
        StringBuilder sb = new StringBuilder(res.startLine()).append("\r\n");
        for (String[] h : res.headers()) {
            String lower = h[0].toLowerCase(Locale.ROOT);
            if (!lower.equals("connection") && !lower.equals("keep-alive")) {
                sb.append(h[0]).append(": ").append(h[1]).append("\r\n");
            }
        }
        sb.append("Connection: close\r\n\r\n");
        out.write(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        if (head) {
            return;
        }
        String te = res.header("Transfer-Encoding");
        String cl = res.header("Content-Length");
        if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
            // chunk by chunk, flushing each: watch events must not wait in a buffer
            while (true) {
                String sizeLine = readLine(upIn);
                if (sizeLine == null) {
                    throw new EOFException("upstream closed mid-stream");
                }
                out.write((sizeLine + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
                int size = Integer.parseInt(sizeLine.split(";")[0].trim(), 16);
                if (size == 0) {
                    String line;
                    while ((line = readLine(upIn)) != null && !line.isEmpty()) {
                        out.write((line + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
                    }
                    out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    return;
                }
                out.write(upIn.readNBytes(size));
                readLine(upIn);
                out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
            }
        } else if (cl != null) {
            out.write(upIn.readNBytes(Integer.parseInt(cl.trim())));
            out.flush();
        } else {
            upIn.transferTo(out);
            out.flush();
        }
    }

    private static void watchGone(OutputStream out) throws IOException {
        String event = GONE_EVENT + "\n";
        byte[] e = event.getBytes(StandardCharsets.UTF_8);
        out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                + "Connection: close\r\n\r\n" + Integer.toHexString(e.length) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        out.write(e);
        out.write("\r\n0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    private static void status(OutputStream out, int code, String phrase, String reason, String message, String extra)
            throws IOException {
        String json = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\""
                + message + "\",\"reason\":\"" + reason + "\",\"code\":" + code + "}";
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        out.write(("HTTP/1.1 " + code + " " + phrase + "\r\nContent-Type: application/json\r\nContent-Length: "
                + body.length + "\r\n" + extra + "Connection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        out.flush();
    }

    /** RST instead of FIN: SO_LINGER 0 then close. */
    private static void reset(Socket s) {
        try {
            s.setSoLinger(true, 0);
        } catch (SocketException e) {
            // already closed
        }
        closeQuietly(s);
    }

    private static Head readHead(InputStream in) throws IOException {
        String start = readLine(in);
        while (start != null && start.isEmpty()) {
            start = readLine(in);
        }
        if (start == null) {
            return null;
        }
        List<String[]> headers = new ArrayList<>();
        String line;
        while ((line = readLine(in)) != null && !line.isEmpty()) {
            int colon = line.indexOf(':');
            if (colon > 0) {
                headers.add(new String[] {line.substring(0, colon).trim(), line.substring(colon + 1).trim()});
            }
        }
        return new Head(start, headers);
    }

    /** A whole body by Content-Length or chunked framing (a response without either: until EOF). */
    private static byte[] readBody(InputStream in, Head head, boolean noBody) throws IOException {
        if (noBody) {
            return new byte[0];
        }
        String te = head.header("Transfer-Encoding");
        String cl = head.header("Content-Length");
        if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            while (true) {
                String sizeLine = readLine(in);
                if (sizeLine == null) {
                    throw new EOFException("chunked body cut short");
                }
                int size = Integer.parseInt(sizeLine.split(";")[0].trim(), 16);
                if (size == 0) {
                    String line;
                    while ((line = readLine(in)) != null && !line.isEmpty()) {
                        // trailers are dropped
                    }
                    return body.toByteArray();
                }
                body.write(in.readNBytes(size));
                readLine(in);
            }
        }
        if (cl != null) {
            return in.readNBytes(Integer.parseInt(cl.trim()));
        }
        if (head.startLine().startsWith("HTTP/")) {
            return in.readAllBytes();
        }
        return new byte[0];
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream(64);
        int b;
        while ((b = in.read()) != -1) {
            if (b == '\n') {
                byte[] bytes = line.toByteArray();
                int len = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
                return new String(bytes, 0, len, StandardCharsets.ISO_8859_1);
            }
            line.write(b);
            if (line.size() > 64 * 1024) {
                throw new IOException("header line too long");
            }
        }
        return line.size() == 0 ? null : line.toString(StandardCharsets.ISO_8859_1);
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                server.close();
            } catch (IOException e) {
                // closing anyway
            }
            workers.shutdownNow();
            closers.shutdownNow();
        }
    }
}
