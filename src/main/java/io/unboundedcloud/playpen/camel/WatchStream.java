package io.unboundedcloud.playpen.camel;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.api.Status;

/**
 * The body of a watch's answer: one JSON watch event per line, written as the events come, as kube-apiserver streams
 * a watch. The route answers with the stream as the message's body; the HTTP binding writes the answer's head
 * ({@link Head}, chunked, no length), and once that is on its way the connection guard {@link #start starts} the
 * stream on the connection: events that came before are written then, later ones at once. The stream ends (the
 * answer's last chunk; the connection stays open for the next request) at its deadline, when the source of its
 * events ends, when the client goes, when it falls too far behind a slow reader, or when the operator stops.
 */
public final class WatchStream {
    /** Written events a slow reader may leave unsent before its watch is ended (it lists again and watches anew). */
    static final long MAX_UNSENT_BYTES = 4L << 20;
    /** Events held before the answer's head is written; more end the watch with 410 Expired (list, then watch). */
    static final long MAX_HELD_CHARS = 16L << 20;

    /** The answer's head: what the connection guard starts the stream after. */
    public static final class Head extends DefaultHttpResponse {
        private final WatchStream stream;

        Head(HttpVersion version, HttpResponseStatus status, WatchStream stream) {
            super(version, status);
            this.stream = stream;
        }

        public WatchStream stream() {
            return stream;
        }
    }

    /** The streams open on this replica: a bound on them, and all ended when the operator stops. */
    public static final class Registry implements AutoCloseable {
        private final int max;
        private final int retryAfterSeconds;
        private final Set<WatchStream> open = ConcurrentHashMap.newKeySet();

        public Registry(int max, int retryAfterSeconds) {
            this.max = max;
            this.retryAfterSeconds = retryAfterSeconds;
        }

        /** A new stream ending within {@code timeoutMillis}; 429 when {@code max} are open already. */
        public WatchStream open(long timeoutMillis) {
            WatchStream s = new WatchStream(timeoutMillis, this);
            open.add(s);
            if (open.size() > max) {
                open.remove(s);
                throw new ApiException(429, "TooManyRequests", "too many watches are open on this operator replica ("
                        + max + "); try again later, or list instead (kubectl get allocs)",
                        Map.of("Retry-After", String.valueOf(retryAfterSeconds)));
            }
            return s;
        }

        public int openCount() {
            return open.size();
        }

        /** Ends every open stream (their clients see the watch end and start another, on another replica). */
        @Override
        public void close() {
            for (WatchStream s : List.copyOf(open)) {
                s.end(null);
            }
        }
    }

    private final long timeoutMillis;
    private final Registry registry;
    private final ArrayDeque<String> held = new ArrayDeque<>();
    private long heldChars;
    private final List<Runnable> onEnd = new ArrayList<>();
    private Channel channel;
    private boolean closeAfter;
    private boolean ended;
    private boolean finished;
    private ScheduledFuture<?> deadline;

    private WatchStream(long timeoutMillis, Registry registry) {
        this.timeoutMillis = timeoutMillis;
        this.registry = registry;
    }

    /** Runs {@code action} once when the stream ends (at once if it has): closes the source of its events. */
    public void onEnd(Runnable action) {
        synchronized (this) {
            if (!ended) {
                onEnd.add(action);
                return;
            }
        }
        action.run();
    }

    /** Sends one watch event ({@code type} and {@code object}); nothing once the stream has ended. */
    public void emit(Map<String, Object> event) {
        boolean tooMany = false;
        synchronized (this) {
            if (ended) {
                return;
            }
            String line = Json.write(event) + "\n";
            if (channel == null) {
                held.add(line);
                heldChars += line.length();
                tooMany = heldChars > MAX_HELD_CHARS;
            } else if (channel.bytesBeforeWritable() > MAX_UNSENT_BYTES) {
                tooMany = true;
            } else {
                write(line);
            }
        }
        if (tooMany) {
            end(expired("the watch fell too far behind; list the allocations again and watch from the list's"
                    + " resourceVersion"));
        }
    }

    /**
     * Called by the connection guard right after the answer's head was written, on the connection's event loop:
     * the held events follow it, and the deadline and the client's going end the stream from now on.
     */
    void start(Channel ch, boolean closeConnectionAfter) {
        synchronized (this) {
            channel = ch;
            closeAfter = closeConnectionAfter;
            // a watch is quiet between events, not idle: the idle closer leaves the connection open meanwhile
            ch.attr(NettyTls.WAITING).set(true);
            for (String line : held) {
                write(line);
            }
            held.clear();
            heldChars = 0;
            if (ended) {
                finish();
                return;
            }
            deadline = ch.eventLoop().schedule(() -> end(null), timeoutMillis, TimeUnit.MILLISECONDS);
        }
        ch.closeFuture().addListener(f -> end(null));
    }

    /**
     * Ends the stream once: {@code error} (not null) goes out first as an ERROR event, then the answer's last chunk,
     * and the source of the events is closed.
     */
    public void end(Map<String, Object> error) {
        List<Runnable> actions;
        synchronized (this) {
            if (ended) {
                return;
            }
            ended = true;
            if (error != null) {
                String line = Json.write(error) + "\n";
                if (channel == null) {
                    held.add(line);
                } else {
                    write(line);
                }
            }
            if (channel != null) {
                finish();
            }
            actions = List.copyOf(onEnd);
            onEnd.clear();
        }
        registry.open.remove(this);
        for (Runnable a : actions) {
            try {
                a.run();
            } catch (RuntimeException e) {
                org.slf4j.LoggerFactory.getLogger(WatchStream.class).debug("closing a watch's source: {}", e.toString());
            }
        }
    }

    /** The events held for the answer's head (what a stream not started yet would write first). */
    synchronized List<String> held() {
        return List.copyOf(held);
    }

    /** Whether the stream has ended. */
    public synchronized boolean ended() {
        return ended;
    }

    /** An ERROR event with a 410 Expired Status: the client lists again and watches from the list's version. */
    public static Map<String, Object> expired(String message) {
        return error(new ApiException(410, "Expired", message));
    }

    /** An ERROR event carrying {@code e} as a Status, as kube-apiserver ends a watch that failed. */
    public static Map<String, Object> error(ApiException e) {
        Map<String, Object> event = new java.util.LinkedHashMap<>();
        event.put("type", "ERROR");
        event.put("object", Status.failure(e.code(), e.reason(), e.getMessage()));
        return event;
    }

    private void write(String line) {
        channel.writeAndFlush(new DefaultHttpContent(Unpooled.copiedBuffer(line, StandardCharsets.UTF_8)));
    }

    private void finish() {
        if (finished) {
            return;
        }
        finished = true;
        if (deadline != null) {
            deadline.cancel(false);
        }
        Channel ch = channel;
        ch.attr(NettyTls.WAITING).set(null);
        if (ch.isActive()) {
            var written = ch.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
            if (closeAfter) {
                written.addListener(ChannelFutureListener.CLOSE);
            }
        }
    }

    /** The head of a watch's answer, from the one the binding built for an empty body: chunked, no length. */
    static Head head(io.netty.handler.codec.http.HttpResponse built, WatchStream stream) {
        Head head = new Head(built.protocolVersion(), built.status(), stream);
        head.headers().set(built.headers());
        head.headers().remove(HttpHeaderNames.CONTENT_LENGTH);
        head.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
        return head;
    }
}
