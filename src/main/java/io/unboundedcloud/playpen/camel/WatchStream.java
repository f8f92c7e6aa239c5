package io.unboundedcloud.playpen.camel;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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

    /**
     * The streams open on this replica: bounds on them (all users', one user's), and all ended when the operator
     * stops; none is opened after that.
     */
    public static final class Registry implements AutoCloseable {
        private final int max;
        private final int maxPerUser;
        private final int retryAfterSeconds;
        private final Map<WatchStream, String> open = new ConcurrentHashMap<>();
        private final Map<String, Integer> perUser = new java.util.HashMap<>();
        private boolean closed;

        public Registry(int max, int maxPerUser, int retryAfterSeconds) {
            this.max = max;
            this.maxPerUser = maxPerUser;
            this.retryAfterSeconds = retryAfterSeconds;
        }

        /**
         * A new stream of {@code user}'s ending within {@code timeoutMillis}; 429 when {@code max} are open already,
         * or {@code maxPerUser} of that user's; 503 once the replica stops.
         */
        public synchronized WatchStream open(String user, long timeoutMillis) {
            if (closed) {
                throw ApiException.unavailable("this operator replica is stopping; watch again, which another"
                        + " replica answers", retryAfterSeconds);
            }
            int users = perUser.getOrDefault(user, 0);
            if (open.size() >= max || users >= maxPerUser) {
                String which = open.size() >= max ? "on this operator replica (" + max + ")"
                        : "of yours on this operator replica (" + maxPerUser + ")";
                throw new ApiException(429, "TooManyRequests", "too many watches are open " + which + "; end one"
                        + " or try again later, or list instead (kubectl get allocs)",
                        Map.of("Retry-After", String.valueOf(retryAfterSeconds)));
            }
            WatchStream s = new WatchStream(timeoutMillis, this);
            open.put(s, user);
            perUser.put(user, users + 1);
            return s;
        }

        private synchronized void ended(WatchStream s) {
            String user = open.remove(s);
            if (user != null) {
                perUser.computeIfPresent(user, (u, n) -> n <= 1 ? null : n - 1);
            }
        }

        public int openCount() {
            return open.size();
        }

        /** Ends every open stream (their clients see the watch end and start another, on another replica). */
        @Override
        public void close() {
            synchronized (this) {
                closed = true;
            }
            for (WatchStream s : List.copyOf(open.keySet())) {
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
    /** Ends the stream when its connection closes; taken off the connection when the stream ends before that. */
    private final io.netty.util.concurrent.GenericFutureListener<io.netty.util.concurrent.Future<? super Void>> gone =
            f -> end(null);

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
        ch.closeFuture().addListener(gone);
        synchronized (this) {
            if (finished) {
                // ended between the two: finish() looked for the listener before it was there
                ch.closeFuture().removeListener(gone);
            }
        }
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
        registry.ended(this);
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

    /**
     * The 410 Expired of a watch from a version the API server no longer keeps ({@code version}, when known, named):
     * the client lists again and watches from the list's version.
     */
    static ApiException tooOld(String version) {
        return new ApiException(410, "Expired", "too old resource version"
                + (version == null ? "" : ": " + io.unboundedcloud.playpen.model.AllocViews.quoteShort(version))
                + ": the API server no longer keeps the changes since it; list the allocations again and watch from"
                + " the list's resourceVersion");
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
        // a connection kept alive for the next request would otherwise hold every stream it ever carried
        ch.closeFuture().removeListener(gone);
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
