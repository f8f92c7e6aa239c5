package io.unboundedcloud.playpen.camel;

import java.nio.charset.StandardCharsets;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.SSLPeerUnverifiedException;

import org.apache.camel.component.netty.ChannelHandlerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerAdapter;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMessageDecoderResult;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.ReferenceCountUtil;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.ApiPaths;
import io.unboundedcloud.playpen.auth.FrontProxyAuthenticator;

/**
 * Bounds what one HTTPS connection can cost, in the Netty pipeline before any body is aggregated: connection caps
 * (unauthenticated ones evict the oldest), header and body deadlines, a small header budget and an early 403 for
 * connections without a trusted front-proxy certificate, and Netty's own errors (bad or oversized request head,
 * oversized or malformed body, TRACE, plain HTTP sent to the TLS port) answered as a Kubernetes Status that says what
 * to send instead. Referenced as {@code decoders=#connectionGuard}.
 * <p>
 * It also keeps the answers of pipelined requests in order (HTTP/1.1 requires it): a request goes on to the routes
 * only once the previous one on the connection has its answer, and the guard's own refusals wait for that too.
 * Without this, a request answered here from its head (404, 405, 403) or by a quick route overtakes one still in
 * the routes (an alloc waiting for capacity), and the client reads each answer as the other request's.
 * <p>
 * When the replica stops it drains the connections ({@link #drain}): kube-apiserver moves an open connection to
 * another replica only when told to close it.
 */
public final class ConnectionGuard extends ChannelHandlerAdapter implements ChannelHandlerFactory {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionGuard.class);
    /** How long a refused connection keeps draining its request before it is closed. */
    static final long LINGER_MILLIS = 1000;

    /**
     * The bounds. {@code maxConnections} caps every open connection (new ones beyond it are closed at once);
     * {@code maxUnauthenticated} caps connections without a trusted client certificate, including those still in
     * the TLS handshake (the oldest is closed to make room, so a slow attacker cannot lock out probes or the
     * aggregator); {@code headerTimeout} is the time a request head (and, for a new connection, the handshake
     * before it) may take, like Go's ReadHeaderTimeout; {@code bodyTimeout} the time a request body may take;
     * {@code unauthenticatedHeadBytes} and {@code unauthenticatedBodyBytes} bound what a client without a
     * trusted certificate may send (probes need little); {@code maxBodyBytes} bounds every body.
     */
    public record Limits(int maxConnections, int maxUnauthenticated, Duration headerTimeout, Duration bodyTimeout,
            int unauthenticatedHeadBytes, int unauthenticatedBodyBytes, int maxBodyBytes) {
    }

    /** A probe's request head is a few hundred bytes; Netty's former default. */
    public static final int UNAUTHENTICATED_HEAD_BYTES = 8192;
    /** Probes send no body; a little slack for tools that do. */
    public static final int UNAUTHENTICATED_BODY_BYTES = 4096;
    /** Pipelined requests held behind an unanswered one before the connection stops reading. */
    static final int MAX_HELD_REQUESTS = 8;

    private final FrontProxyAuthenticator authenticator;
    private final Limits limits;
    private final AtomicInteger open = new AtomicInteger();
    /** Unauthenticated connections, oldest first. */
    private final LinkedHashSet<Channel> unauthenticated = new LinkedHashSet<>();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong evicted = new AtomicLong();
    private final AtomicLong timedOut = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicLong lastWarnNanos = new AtomicLong(System.nanoTime() - TimeUnit.MINUTES.toNanos(1));
    /** Every open connection's handler, for {@link #drain}. */
    private final java.util.Set<PerConnection> connections = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final Object closedConnections = new Object();

    /** How this listener treats its connections while the replica stops ({@link #drain}, {@link #refuseRequests}). */
    private enum Stopping { NO, DRAINING, REFUSING }

    private volatile Stopping stopping = Stopping.NO;
    private volatile ApiException refusal;

    public ConnectionGuard(FrontProxyAuthenticator authenticator, Limits limits) {
        this.authenticator = authenticator;
        this.limits = limits;
    }

    /** Told of every /apis request refused from its head for its client certificate (for the audit log). */
    public interface Refusals {
        /** {@code flow}: what the request's method and path name; {@code refusal}: the answer it gets. */
        void refused(ApiPaths.Flow flow, ApiException refusal);
    }

    private volatile Refusals refusals = (flow, refusal) -> { };

    public void onRefusal(Refusals listener) {
        this.refusals = listener;
    }

    private void tellRefused(ApiPaths.Flow flow, ApiException refusal) {
        try {
            refusals.refused(flow, refusal);
        } catch (RuntimeException e) {
            LOG.warn("cannot audit a refused request: {}", e.toString());
        }
    }

    @Override
    public ChannelHandler newChannelHandler() {
        return new PerConnection();
    }

    /**
     * The replica stops: kube-apiserver keeps its connections open and sends requests on them whatever the endpoints
     * say (kube-proxy keeps an open connection on its pod), so it must be told to open new ones, which go to another
     * replica. From now on every answer carries {@code Connection: close} and its connection is closed once it is
     * written; a connection with no request under way is closed at once; a request that comes is still served.
     */
    public void drain() {
        if (stopping == Stopping.NO) {
            stopping = Stopping.DRAINING;
        }
        for (PerConnection c : connections) {
            c.drain();
        }
    }

    /**
     * Waits until every connection is closed ({@link #drain}), at most {@code max}: true when none is open.
     */
    public boolean awaitDrained(Duration max) throws InterruptedException {
        long deadline = System.nanoTime() + max.toNanos();
        synchronized (closedConnections) {
            for (long left = max.toNanos(); open.get() > 0 && left > 0; left = deadline - System.nanoTime()) {
                TimeUnit.NANOSECONDS.timedWait(closedConnections, left);
            }
        }
        return open.get() <= 0;
    }

    /**
     * Camel stops next, and would answer a request on a connection still open with a bare text/plain 503 (no Status,
     * no Retry-After, which client-go needs to retry): from now on such a request is answered {@code refusal} here,
     * on its connection, which is then closed.
     */
    public void refuseRequests(ApiException refusal) {
        this.refusal = refusal;
        stopping = Stopping.REFUSING;
        drain();
    }

    public int openConnections() {
        return open.get();
    }

    public int unauthenticatedConnections() {
        synchronized (unauthenticated) {
            return unauthenticated.size();
        }
    }

    /** Connections refused at the cap, evicted as the oldest unauthenticated one, closed by a deadline, and requests answered here. */
    public long refused() {
        return refused.get();
    }

    public long evicted() {
        return evicted.get();
    }

    public long timedOut() {
        return timedOut.get();
    }

    public long rejected() {
        return rejected.get();
    }

    private void warn(String what) {
        long now = System.nanoTime();
        long last = lastWarnNanos.get();
        // one line per 10 s at most: a flood must not become a log flood
        if (now - last > TimeUnit.SECONDS.toNanos(10) && lastWarnNanos.compareAndSet(last, now)) {
            LOG.warn("connection bounds: {} (open={} unauthenticated={} refused={} evicted={} timedOut={} rejected={})",
                    what, open.get(), unauthenticatedConnections(), refused.get(), evicted.get(), timedOut.get(),
                    rejected.get());
        }
    }

    private void addUnauthenticated(Channel ch) {
        Channel oldest = null;
        synchronized (unauthenticated) {
            unauthenticated.add(ch);
            if (unauthenticated.size() > limits.maxUnauthenticated()) {
                Iterator<Channel> it = unauthenticated.iterator();
                oldest = it.next();
                it.remove();
            }
        }
        if (oldest != null) {
            evicted.incrementAndGet();
            warn("too many unauthenticated connections, closing the oldest");
            oldest.close();
        }
    }

    private void removeUnauthenticated(Channel ch) {
        synchronized (unauthenticated) {
            unauthenticated.remove(ch);
        }
    }

    private enum Phase { HEAD, BODY, IDLE }

    static final String MALFORMED_HEAD = "malformed HTTP request head; send a request line (METHOD /path HTTP/1.1),"
            + " then one Name: value line per header field (a name of letters, digits and -, no space before the colon;"
            + " a printable value), at most one Content-Length, and an empty line";
    static final String MALFORMED_VERSION = "malformed HTTP version; send HTTP/1.1 (or HTTP/1.0), in capitals: this"
            + " server does not speak HTTP/2";
    static final String MALFORMED_BODY = "malformed HTTP request body; a chunked body is each chunk's size in"
            + " hexadecimal, CRLF, its bytes and CRLF, then a chunk of size 0 and an empty line: send it so, or send the"
            + " body whole with a Content-Length";
    static final String PLAIN_HTTP = "the client sent an HTTP request to an HTTPS server; send it over TLS, to https://"
            + " and this port";
    private static final String UNTRUSTED_HEAD_ADVICE = "without a trusted client certificate; send fewer or shorter"
            + " header fields, or send the request with a client certificate the front-proxy trust bundle trusts";
    /** The limit in the decoder's own words ("HTTP header is larger than 8192 bytes."): digits only. */
    private static final Pattern DECODER_LIMIT = Pattern.compile("larger than (\\d+) bytes");

    /**
     * The answer to a request head the decoder could not read, from why it failed: 431 for header fields over the
     * limit, 414 for a request line over it, 400 for anything else; each says what to send instead and quotes
     * nothing of the request. The probe listener answers the same.
     */
    static ApiException badHead(Throwable cause) {
        if (cause instanceof TooLongHttpHeaderException) {
            return new ApiException(431, "RequestHeaderFieldsTooLarge", "request header fields are larger than "
                    + decoderLimit(cause) + "the most this server reads; send fewer or shorter header fields");
        }
        if (cause instanceof TooLongHttpLineException) {
            return new ApiException(414, "RequestURITooLong", "request line is longer than " + decoderLimit(cause)
                    + "the most this server reads; send a shorter request target: this API's paths are short and need"
                    + " no query");
        }
        return ApiException.badRequest(MALFORMED_HEAD);
    }

    /** "8192 bytes, " from the decoder's exception, or nothing when it names no limit. */
    private static String decoderLimit(Throwable cause) {
        Matcher m = DECODER_LIMIT.matcher(String.valueOf(cause.getMessage()));
        return m.find() ? m.group(1) + " bytes, " : "";
    }

    /**
     * A refusal as Netty's HTTP encoder writes it: the Status as UTF-8 JSON (no body for a HEAD), the refusal's own
     * headers (Allow, Retry-After). The probe listener answers with it too.
     */
    static FullHttpResponse statusResponse(ApiException e, boolean head) {
        byte[] body = HttpReply.status(e).body().getBytes(StandardCharsets.UTF_8);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                HttpResponseStatus.valueOf(e.code()), head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(body));
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpReply.JSON);
        response.headers().set(HttpHeaderNames.CONTENT_LENGTH, body.length);
        for (Map.Entry<String, String> h : e.headers().entrySet()) {
            response.headers().set(h.getKey(), h.getValue());
        }
        return response;
    }

    /** One per connection: counts it, runs its deadlines and judges each request head before its body is read. */
    private final class PerConnection extends ChannelDuplexHandler {
        private boolean counted;
        private boolean trusted;
        private boolean closing;
        private Phase phase = Phase.HEAD;
        private long headBytes;
        private long bodyBytes;
        private long bodyLimit;
        /** A dealloc that carries its key in the header: its body is never read (the reference's rule), only drained. */
        private boolean discardBody;
        /** The request being read is a HEAD, which takes no body. */
        private boolean headRequest;
        private ScheduledFuture<?> deadline;
        /** Answers are kept in request order (an AnswerSeen handler tells when each answer is written). */
        private boolean ordered;
        /** A request went on to the routes and its answer is not written yet. */
        private boolean answerPending;
        /** Pipelined request parts that wait for the previous answer before they go on. */
        private final ArrayDeque<Object> held = new ArrayDeque<>();
        private int heldRequests;
        private long heldBytes;
        /** A refusal decided while an earlier request still waits for its answer: written after it. */
        private ApiException deferred;

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            ctxRef = ctx;
            // sees the decrypted bytes before the HTTP decoder, so the head of an unauthenticated request can be
            // cut off at a few KiB while the decoder itself allows the 1 MiB kube-apiserver may forward
            if (ctx.pipeline().get("decoder") != null && ctx.pipeline().get("head-budget") == null) {
                ctx.pipeline().addBefore("decoder", "head-budget", new HeadBudget(this));
            }
            if (ctx.pipeline().get("ssl") != null && ctx.pipeline().get("plain-http") == null) {
                ctx.pipeline().addBefore("ssl", "plain-http", new PlainHttp());
            }
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) throws Exception {
            connections.add(this);
            counted = true;
            if (open.incrementAndGet() > limits.maxConnections()) {
                refused.incrementAndGet();
                warn("connection limit reached, refusing a connection");
                closing = true;
                ctx.close();
                return;
            }
            addUnauthenticated(ctx.channel());
            // the pipeline is complete now: watch the answers where they are still HTTP objects (before the encoder,
            // behind the aggregator, so its 100 Continue is seen as the interim answer it is)
            if (ctx.pipeline().get("aggregator") != null && ctx.pipeline().get("answer-order") == null) {
                ctx.pipeline().addBefore("aggregator", "answer-order", new AnswerSeen(this));
                ordered = true;
            }
            // the TLS handshake and the first request head share one deadline, like Go's ReadHeaderTimeout
            arm(ctx, limits.headerTimeout(), "request head");
            super.channelActive(ctx);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            connections.remove(this);
            if (counted) {
                counted = false;
                open.decrementAndGet();
                synchronized (closedConnections) {
                    closedConnections.notifyAll();
                }
            }
            removeUnauthenticated(ctx.channel());
            disarm();
            releaseHeld();
            super.channelInactive(ctx);
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
            if (evt instanceof SslHandshakeCompletionEvent done && done.isSuccess()) {
                // stays unauthenticated when not trusted: it may still call the probes, so nothing is refused (and
                // logged as refused) before an /apis request is
                nowTrusted(ctx);
            }
            super.userEventTriggered(ctx, evt);
        }

        /** Bytes of a request head arrived (called by HeadBudget before the decoder sees them). */
        boolean onHeadBytes(ChannelHandlerContext ctx, int n) {
            if (closing) {
                return false;
            }
            if (phase == Phase.IDLE) {
                // first byte of the next request on a kept-alive connection: its head gets the deadline
                phase = Phase.HEAD;
                headBytes = 0;
                if (trusted) {
                    stillTrusted(ctx);
                } else {
                    nowTrusted(ctx);
                }
                arm(ctx, limits.headerTimeout(), "request head");
            }
            if (phase == Phase.HEAD) {
                headBytes += n;
            }
            return true;
        }

        /**
         * At the start of each later request head: a connection whose certificate the trust bundle no longer trusts
         * (its CA removed or expired) is from now on one without a trusted certificate, with that head budget, body
         * budget and cap on such connections.
         */
        private void stillTrusted(ChannelHandlerContext ctx) {
            if (!authenticator.trusts(peerChain(ctx))) {
                trusted = false;
                addUnauthenticated(ctx.channel());
            }
        }

        /**
         * At the handshake and at the start of each later request head (an /apis request's certificate check does
         * the same when it passes): a connection with a certificate the trust bundle trusts now (at the handshake, or
         * since: its CA or its CN added) is from now on one with a trusted certificate, with those budgets, and no
         * longer among the unauthenticated connections the oldest of which is closed to make room. One without a
         * certificate stays as it is.
         */
        private void nowTrusted(ChannelHandlerContext ctx) {
            X509Certificate[] chain = peerChain(ctx);
            if (chain != null && authenticator.trusts(chain)) {
                trusted = true;
                removeUnauthenticated(ctx.channel());
            }
        }

        /** After the decoder ran on those bytes: a head still incomplete beyond the budget is refused. */
        void afterHeadBytes() {
            if (phase == Phase.HEAD && !trusted && !closing && headBytes > limits.unauthenticatedHeadBytes()) {
                reject(new ApiException(431, "RequestHeaderFieldsTooLarge", "request header fields are larger than "
                        + limits.unauthenticatedHeadBytes() + " bytes " + UNTRUSTED_HEAD_ADVICE));
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            if (closing) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (msg instanceof HttpRequest request) {
                disarm();
                phase = Phase.BODY;
                bodyBytes = 0;
                ApiException refusal = stopping == Stopping.REFUSING ? ConnectionGuard.this.refusal
                        : judge(ctx, request);
                if (refusal != null) {
                    ReferenceCountUtil.release(msg);
                    reject(refusal);
                    return;
                }
                if (!(msg instanceof LastHttpContent) && (HttpUtil.isTransferEncodingChunked(request)
                        || HttpUtil.getContentLength(request, 0L) > 0)) {
                    arm(ctx, limits.bodyTimeout(), "request body");
                }
            }
            if (msg instanceof HttpContent content && content.decoderResult().isFailure()) {
                // a broken chunked body (bad or overflowing chunk size): without this, netty-http answers a bare
                // text/plain 400
                ReferenceCountUtil.release(msg);
                reject(ApiException.badRequest(MALFORMED_BODY));
                return;
            }
            if (msg instanceof HttpContent content && discardBody) {
                boolean last = msg instanceof LastHttpContent;
                ReferenceCountUtil.release(msg);
                if (last) {
                    disarm();
                    phase = Phase.IDLE;
                    discardBody = false;
                    forward(ctx, LastHttpContent.EMPTY_LAST_CONTENT);
                }
                return;
            }
            if (msg instanceof HttpContent content) {
                bodyBytes += content.content().readableBytes();
                if (bodyBytes > bodyLimit) {
                    ReferenceCountUtil.release(msg);
                    reject(tooLarge());
                    return;
                }
                if (msg instanceof LastHttpContent) {
                    disarm();
                    phase = Phase.IDLE;
                }
            }
            forward(ctx, msg);
        }

        /**
         * Passes a request part on to the routes, or holds it while an earlier request waits for its answer (its
         * head and body were judged and timed as they arrived; only their delivery waits).
         */
        private void forward(ChannelHandlerContext ctx, Object msg) {
            if (!ordered || !(msg instanceof HttpObject)) {
                ctx.fireChannelRead(msg);
                return;
            }
            if (answerPending || !held.isEmpty()) {
                held.add(msg);
                if (msg instanceof HttpRequest) {
                    heldRequests++;
                }
                if (msg instanceof HttpContent content) {
                    heldBytes += content.content().readableBytes();
                }
                if (heldRequests > MAX_HELD_REQUESTS || heldBytes > limits.maxBodyBytes()) {
                    // a client that pipelines this much waits for the answers before more is read
                    ctx.channel().config().setAutoRead(false);
                }
                return;
            }
            if (msg instanceof LastHttpContent) {
                answerDue(ctx, true);
            }
            ctx.fireChannelRead(msg);
        }

        /** A request went on to the routes (true) or its answer was written (false); the idle closer reads it too. */
        private void answerDue(ChannelHandlerContext ctx, boolean due) {
            answerPending = due;
            ctx.channel().attr(NettyTls.ANSWER_DUE).set(due ? Boolean.TRUE : null);
        }

        /**
         * An answer went out (AnswerSeen, on the event loop): the next held request goes on, or a deferred refusal
         * is written. Run as a task of its own, not inside the write that reported it.
         */
        void answered() {
            ChannelHandlerContext ctx = ctxRef;
            if (ctx != null) {
                ctx.executor().execute(() -> next(ctx));
            }
        }

        private void next(ChannelHandlerContext ctx) {
            if (!ctx.channel().isActive()) {
                releaseHeld();
                return;
            }
            answerDue(ctx, false);
            if (stopping != Stopping.NO && !closing) {
                // the answer went out with Connection: close; requests pipelined behind it are sent again elsewhere
                closeAfterWrites(ctx);
                return;
            }
            while (!answerPending && !held.isEmpty()) {
                Object msg = held.poll();
                if (msg instanceof HttpRequest) {
                    heldRequests--;
                }
                if (msg instanceof HttpContent content) {
                    heldBytes -= content.content().readableBytes();
                }
                if (msg instanceof LastHttpContent) {
                    answerDue(ctx, true);
                }
                ctx.fireChannelRead(msg);
            }
            if (held.isEmpty() && !ctx.channel().config().isAutoRead()) {
                ctx.channel().config().setAutoRead(true);
            }
            if (!answerPending && held.isEmpty() && deferred != null) {
                ApiException e = deferred;
                deferred = null;
                writeRefusal(e);
            }
        }

        private void releaseHeld() {
            Object msg;
            while ((msg = held.poll()) != null) {
                ReferenceCountUtil.release(msg);
            }
            heldRequests = 0;
            heldBytes = 0;
        }

        private boolean answerOutstanding() {
            return ordered && (answerPending || !held.isEmpty());
        }

        /** Decides on a request from its head alone; null lets it through to the routes. */
        private ApiException judge(ChannelHandlerContext ctx, HttpRequest request) {
            DecoderResult result = request.decoderResult();
            if (result.isFailure()) {
                return badHead(result.cause());
            }
            if (!trusted && result instanceof HttpMessageDecoderResult sized
                    && sized.totalSize() > limits.unauthenticatedHeadBytes()) {
                // a head that came whole in one read, before the head budget could count it past the limit
                return new ApiException(431, "RequestHeaderFieldsTooLarge", "request head is " + sized.totalSize()
                        + " bytes, over the " + limits.unauthenticatedHeadBytes() + " bytes allowed "
                        + UNTRUSTED_HEAD_ADVICE);
            }
            HttpVersion version = request.protocolVersion();
            if (version != HttpVersion.HTTP_1_0 && version != HttpVersion.HTTP_1_1) {
                // Netty upper-cases what it parses ("http/1.1" becomes HTTP/1.1) and takes any major version; Go
                // refuses a misspelt version (400) and answers other majors 505, except the HTTP/2 preface
                boolean preface = version.majorVersion() == 2 && "PRI".equals(request.method().name());
                if (version.majorVersion() != 1 && !preface) {
                    return new ApiException(505, "HTTPVersionNotSupported", "unsupported protocol version HTTP/"
                            + version.majorVersion() + "." + version.minorVersion()
                            + "; send HTTP/1.1 (this server speaks HTTP/1.1 and HTTP/1.0)");
                }
                if (preface || version.equals(HttpVersion.HTTP_1_0) || version.equals(HttpVersion.HTTP_1_1)) {
                    return ApiException.badRequest(MALFORMED_VERSION);
                }
            }
            if (!request.headers().contains(HttpHeaderNames.HOST)) {
                if (version.minorVersion() > 0 || version.majorVersion() > 1) {
                    return ApiException.badRequest("missing Host header; an HTTP/1.1 request names the server it is"
                            + " for: send Host: with the name or address you connected to");
                }
                // HTTP/1.0 needs no Host (Go serves it); netty-http would answer a bare text/plain 400 without one
                request.headers().set(HttpHeaderNames.HOST, "");
            }
            String expect = request.headers().get(HttpHeaderNames.EXPECT);
            if (expect != null && !expect.isEmpty()
                    && !request.headers().containsValue(HttpHeaderNames.EXPECT, HttpHeaderValues.CONTINUE, true)) {
                // Go's server answers any expectation but 100-continue 417 before the handler; netty's aggregator
                // would answer it with an empty text body
                return new ApiException(417, "ExpectationFailed", "expectation failed; the one expectation this server"
                        + " meets is 100-continue: send the request without its Expect header, or with Expect:"
                        + " 100-continue");
            }
            String uri = request.uri();
            if (isProbe(uri) && !ROUTED_METHODS.contains(request.method().name())) {
                // a probe answers any method, as Go's server does; camel-netty-http would answer a method outside the
                // route's httpMethodRestrict with a bare 405 before the routes, so it goes on as the GET it is answered as
                request.setMethod(HttpMethod.GET);
            }
            headRequest = HttpMethod.HEAD.equals(request.method());
            // HEAD goes on to the front door, which answers it without a body (no route takes HEAD: 405/404), with
            // the body budget of the connection as it is
            if (!isProbe(uri) && !headRequest) {
                // the reference's order: method and exact path first (400/404/405 even without a certificate),
                // then the certificate; either verdict is given from the head, before a byte of the body is read.
                ApiPaths.Flow flow;
                try {
                    flow = ApiPaths.route(request.method().name(), uri);
                } catch (ApiException e) {
                    return e;
                }
                // a connection still trusted was checked against the bundle as it is now, at its handshake or at
                // this head's first byte (stillTrusted: a certificate the bundle no longer trusts is untrusted
                // from there on); any other is checked here, and trusted from here on when it passes
                if (!trusted) {
                    try {
                        authenticator.verifyPeer(peerChain(ctx));
                    } catch (ApiException e) {
                        tellRefused(flow, e);
                        return e;
                    }
                    trusted = true;
                    removeUnauthenticated(ctx.channel());
                }
            }
            bodyLimit = trusted ? limits.maxBodyBytes() : limits.unauthenticatedBodyBytes();
            discardBody = trusted && !isProbe(uri) && isDeallocWithHeaderKey(request);
            if (discardBody) {
                // the flow sees an empty body; the bytes are counted against the deadline only, never buffered
                request.headers().remove(HttpHeaderNames.TRANSFER_ENCODING);
                request.headers().set(HttpHeaderNames.CONTENT_LENGTH, 0);
                return null;
            }
            long declared = HttpUtil.getContentLength(request, -1L);
            if (declared > bodyLimit) {
                return tooLarge();
            }
            return null;
        }

        /**
         * The 413 of a body over this request's budget: a HEAD takes none; otherwise without a trusted certificate
         * only a probe gets this far.
         */
        private ApiException tooLarge() {
            return headRequest ? io.unboundedcloud.playpen.api.RequestBodies.headTooLarge(bodyLimit)
                    : io.unboundedcloud.playpen.api.RequestBodies.tooLarge(bodyLimit, !trusted);
        }

        private static boolean isDeallocWithHeaderKey(HttpRequest request) {
            String key = request.headers().get("Idempotency-Key");
            if (io.unboundedcloud.playpen.model.Hashes.headerKeyHash(key) == null
                    || !HttpMethod.POST.equals(request.method())) {
                return false;
            }
            try {
                return ApiPaths.route("POST", request.uri()) == ApiPaths.Flow.DEALLOC;
            } catch (ApiException e) {
                return false;
            }
        }

        /** {@link ConnectionGuard#drain}: closes this connection now when no request on it is under way. */
        void drain() {
            ChannelHandlerContext ctx = ctxRef;
            if (ctx == null) {
                return;
            }
            ctx.executor().execute(() -> {
                if (closing || !ctx.channel().isActive()) {
                    return;
                }
                boolean between = !answerOutstanding() && (phase == Phase.IDLE || (phase == Phase.HEAD && headBytes == 0));
                if (between) {
                    closeAfterWrites(ctx);
                }
            });
        }

        /** Closes the connection once what was written before is on its way. */
        private void closeAfterWrites(ChannelHandlerContext ctx) {
            closing = true;
            disarm();
            releaseHeld();
            ctx.channel().writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }

        boolean stopping() {
            return stopping != Stopping.NO;
        }

        private void reject(ApiException e) {
            if (closing || ctxRef == null) {
                return;
            }
            closing = true;
            disarm();
            rejected.incrementAndGet();
            if (answerOutstanding()) {
                // an earlier request's answer goes first; nothing more is read meanwhile (closing drops it)
                deferred = e;
                return;
            }
            writeRefusal(e);
        }

        private void writeRefusal(ApiException e) {
            FullHttpResponse response = statusResponse(e, false);
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            // from the tail of the pipeline, so the response passes the HTTP encoder. The rest of the request is
            // drained unbuffered (channelRead releases everything once closing) for a short linger before the close:
            // closing with unread bytes makes TCP send a reset, and a client still sending its body would lose the
            // answer (a 413 or 403 given from the head alone)
            Channel ch = ctxRef.channel();
            ch.writeAndFlush(response).addListener(f -> ch.eventLoop().schedule(() -> {
                ch.close();
            }, LINGER_MILLIS, TimeUnit.MILLISECONDS));
        }

        private ChannelHandlerContext ctxRef;

        @Override
        public void handlerRemoved(ChannelHandlerContext ctx) {
            disarm();
            releaseHeld();
        }

        private void arm(ChannelHandlerContext ctx, Duration timeout, String what) {
            disarm();
            deadline = ctx.executor().schedule(() -> {
                if (!closing) {
                    timedOut.incrementAndGet();
                    warn(what + " not received within " + timeout.toMillis() + " ms, closing connections");
                    closing = true;
                    ctx.close();
                }
            }, timeout.toMillis(), TimeUnit.MILLISECONDS);
        }

        private void disarm() {
            if (deadline != null) {
                deadline.cancel(false);
                deadline = null;
            }
        }
    }

    /**
     * Between the encoder and the aggregator: tells the guard when a final answer (not a 1xx) has been written, so
     * the next pipelined request may go on.
     */
    private static final class AnswerSeen extends ChannelOutboundHandlerAdapter {
        private final PerConnection guard;

        AnswerSeen(PerConnection guard) {
            this.guard = guard;
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
            if (guard.stopping() && msg instanceof HttpResponse r
                    && r.status().codeClass() != HttpStatusClass.INFORMATIONAL) {
                // the replica stops: the client opens its next connection elsewhere
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            }
            if (msg instanceof WatchStream.Head head) {
                // a watch's head: its events follow it as chunks, and its last chunk is the answer's end
                ctx.write(msg, promise);
                head.stream().start(ctx.channel(), !HttpUtil.isKeepAlive(head));
                return;
            }
            boolean done = msg instanceof LastHttpContent
                    && !(msg instanceof HttpResponse r && r.status().codeClass() == HttpStatusClass.INFORMATIONAL);
            ctx.write(msg, promise);
            if (done) {
                guard.answered();
            }
        }
    }

    /** Between TLS and the HTTP decoder: reports the size of each request head as it arrives. */
    private static final class HeadBudget extends ChannelInboundHandlerAdapter {
        private final PerConnection guard;

        HeadBudget(PerConnection guard) {
            this.guard = guard;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            if (msg instanceof ByteBuf buf) {
                if (!guard.onHeadBytes(ctx, buf.readableBytes())) {
                    buf.release();
                    return;
                }
                ctx.fireChannelRead(msg);
                guard.afterHeadBytes();
                return;
            }
            ctx.fireChannelRead(msg);
        }
    }

    /** The methods the HTTPS route passes to the routes (its httpMethodRestrict, routes/https-ingress.camel.yaml). */
    private static final java.util.Set<String> ROUTED_METHODS = java.util.Set.of("GET", "HEAD", "POST", "PUT", "DELETE",
            "PATCH", "OPTIONS", "TRACE", "CONNECT");

    /**
     * Before TLS: a connection whose first byte is an upper-case letter sent a plain HTTP request (a TLS record starts
     * with a byte below 0x20, an SSLv2 hello with one above 0x7f). It is answered in plain HTTP with a 400 Status that
     * says to use TLS, as Go's server answers it, rather than closed by the TLS handshake without a word; what it sends
     * meanwhile is dropped, and it is closed after a short linger. Any other connection goes on to TLS untouched.
     */
    private static final class PlainHttp extends ChannelInboundHandlerAdapter {
        private boolean answered;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            if (answered) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (msg instanceof ByteBuf buf && buf.isReadable()) {
                byte first = buf.getByte(buf.readerIndex());
                if (first >= 'A' && first <= 'Z') {
                    answered = true;
                    buf.release();
                    Channel ch = ctx.channel();
                    // Netty's HTTP encoder, between this handler and the socket (no other sits before TLS)
                    ctx.pipeline().addBefore(ctx.name(), "plain-http-encoder", new HttpResponseEncoder());
                    FullHttpResponse response = statusResponse(ApiException.badRequest(PLAIN_HTTP), false);
                    response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                    ctx.writeAndFlush(response).addListener(f -> ch.eventLoop().schedule(() -> {
                        ch.close();
                    }, LINGER_MILLIS, TimeUnit.MILLISECONDS));
                    return;
                }
                ctx.pipeline().remove(this);
            }
            ctx.fireChannelRead(msg);
        }
    }

    private static boolean isProbe(String uri) {
        return uri != null && (uri.startsWith("/healthz") || uri.startsWith("/readyz"));
    }

    private static X509Certificate[] peerChain(ChannelHandlerContext ctx) {
        SslHandler ssl = ctx.pipeline().get(SslHandler.class);
        if (ssl == null) {
            return null;
        }
        try {
            Certificate[] certs = ssl.engine().getSession().getPeerCertificates();
            X509Certificate[] out = new X509Certificate[certs.length];
            for (int i = 0; i < certs.length; i++) {
                out[i] = (X509Certificate) certs[i];
            }
            return out;
        } catch (SSLPeerUnverifiedException | ClassCastException e) {
            return null;
        }
    }
}
