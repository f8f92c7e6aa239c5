package io.unboundedcloud.playpen.kube;

import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * Records Kubernetes Events without ever slowing the caller: events go into a bounded queue written by one
 * background thread; when the queue is full (API slow or refusing) new events are dropped and counted. A
 * namespace whose events the API server forbids (403, e.g. the Go operator's RBAC) is warned about once, and
 * after a few refusals its events are dropped without asking, except one probe per interval. Events still queued or
 * aggregated when it closes, and those recorded after, are lost and counted in {@link #lostAtClose()}. A Warning
 * recorded once ({@link #warningOnce}) has a name made from what it reports, so that another leader's create of it
 * meets 409 AlreadyExists: it goes out alone under that name, and when it was held back by the rate limit alone too.
 * One folded with others into a combined Event (written under a name of its own, so that a 409 cannot lose the
 * others) has no Event of its own name: a new leader that reports it again records it.
 *
 * <p>Rate limiting and aggregation, after client-go's EventCorrelator: per namespace, type, reason and kind of the
 * object, a token bucket of {@code burst} Events refilled by one per {@code interval}. An event over the limit is not
 * written but aggregated (counted in {@link #aggregated()}): the next Event that key may write carries it, with the
 * message prefixed "(combined from similar events): " and {@code count} = the events it stands for, written with the
 * next event of that key or on its own once a token is back. Unlike client-go's spam filter the key leaves out the
 * object's name: every allocation's Event is about a different pod, so a per-object filter would never engage, and
 * at high allocation rates the Events would cost the API server as much as the claims. Low rates (up to
 * {@code burst} at once, then one per {@code interval}) still get one Event each.
 */
public final class EventRecorder implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EventRecorder.class);
    private static final String COMPONENT = "playpen-operator";
    private static final long LINGER_MILLIS = 20;
    /** Consecutive 403 answers in a namespace before its events stop being sent. */
    static final int FORBIDDEN_BEFORE_SUSPEND = 3;
    /** While suspended, one event per interval is still sent, so an RBAC fix is noticed. */
    static final Duration FORBIDDEN_PROBE_INTERVAL = Duration.ofMinutes(1);

    /** {@code name}: the Event's name when it is to be recorded once (null: a new name of its own). */
    private record Pending(ObjectReference regarding, String namespace, String type, String reason, String message,
            String name) {
    }

    /** One rate-limited key: its tokens and the events aggregated while it had none (writer thread only). */
    private static final class Bucket {
        double tokens;
        long lastNanos;
        Pending latest;
        int aggregated;
        String firstTimestamp;
    }

    private final KubernetesClient client;
    private final Clock clock;
    private final int burst;
    private final long intervalNanos;
    private final Map<String, Bucket> buckets = new HashMap<>();
    private final LongAdder aggregated = new LongAdder();
    private final ApiCallCounter calls;
    private final BlockingQueue<Pending> queue;
    private final LongAdder written = new LongAdder();
    private final LongAdder dropped = new LongAdder();
    private final LongAdder lostAtClose = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder forbidden = new LongAdder();
    private final LongAdder recordedElsewhere = new LongAdder();
    private final Duration probeInterval;
    /** Per event namespace, written by the writer thread only. */
    private final Map<String, Refusal> refusals = new HashMap<>();
    private final Thread writer;
    private volatile boolean running = true;
    /** The clock by which tokens come back ({@link System#nanoTime}; tests move it by hand). */
    private volatile java.util.function.LongSupplier tokenNanos = System::nanoTime;

    /** How one namespace's events are being refused: consecutive 403s, and until when nothing is sent. */
    private static final class Refusal {
        int consecutive;
        boolean suspended;
        long suspendedUntilNanos;
    }

    /**
     * Rate-limited: per namespace, type, reason and kind, {@code burst} Events at once, then one per
     * {@code interval}, the others aggregated into those ({@code burst} 0: no limit).
     */
    public EventRecorder(KubernetesClient client, Clock clock, ApiCallCounter calls, int capacity, int burst,
            Duration interval) {
        this(client, clock, calls, capacity, FORBIDDEN_PROBE_INTERVAL, burst, interval);
    }

    /** With an explicit probe interval for forbidden namespaces (tests). */
    EventRecorder(KubernetesClient client, Clock clock, ApiCallCounter calls, int capacity, Duration probeInterval) {
        this(client, clock, calls, capacity, probeInterval, 0, Duration.ofSeconds(1));
    }

    EventRecorder(KubernetesClient client, Clock clock, ApiCallCounter calls, int capacity, Duration probeInterval,
            int burst, Duration interval) {
        this.client = client;
        this.clock = clock;
        this.burst = burst;
        this.intervalNanos = Math.max(1, interval.toNanos());
        this.calls = calls;
        this.probeInterval = probeInterval;
        this.queue = new ArrayBlockingQueue<>(capacity);
        this.writer = DaemonThreads.named("event-recorder").newThread(this::drain);
        this.writer.start();
    }

    public void normal(HasMetadata about, String reason, String message) {
        offer(ref(about), about.getMetadata().getNamespace(), "Normal", reason, message);
    }

    public void warning(HasMetadata about, String reason, String message) {
        offer(ref(about), about.getMetadata().getNamespace(), "Warning", reason, message);
    }

    /** An event about an object given by reference (e.g. the operator's own pod or the APIService). */
    public void warning(ObjectReference about, String eventNamespace, String reason, String message) {
        offer(about, eventNamespace, "Warning", reason, message);
    }

    /**
     * A Warning recorded once for {@code once} (what it reports, the same for every replica: a pod's uid, its problem
     * and when that began), whichever replica records it: its name is made from {@code once}, so that a create
     * another leader made already is answered 409 AlreadyExists, which counts as recorded (in
     * {@link #recordedElsewhere()}), not as a failure. Only {@code create} on events is needed.
     */
    public void warningOnce(HasMetadata about, String reason, String message, String once) {
        ObjectReference regarding = ref(about);
        offer(regarding, about.getMetadata().getNamespace(), "Warning", reason, message,
                onceName(regarding.getName(), "Warning", reason, once));
    }

    /**
     * The same about an object given by reference whose name differs by replica (the operator's own pod): named
     * {@code playpen-operator.<16 hex digits>}, after the operator rather than the replica, so that every replica
     * gives it the same name.
     */
    public void warningOnce(ObjectReference about, String eventNamespace, String reason, String message,
            String once) {
        offer(about, eventNamespace, "Warning", reason, message, onceName(COMPONENT, "Warning", reason, once));
    }

    /** {@code <object>.<16 hex digits>}, as kube-apiserver's Events are named, the digits from what is reported. */
    static String onceName(String object, String type, String reason, String once) {
        try {
            byte[] digest = java.security.MessageDigest.getInstance("SHA-256").digest(
                    (type + "\u0000" + reason + "\u0000" + once).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return object + "." + java.util.HexFormat.of().formatHex(digest, 0, 8);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private void offer(ObjectReference regarding, String namespace, String type, String reason, String message) {
        offer(regarding, namespace, type, reason, message, null);
    }

    private void offer(ObjectReference regarding, String namespace, String type, String reason, String message,
            String name) {
        if (!running) {
            lostAtClose.increment();
            return;
        }
        if (!queue.offer(new Pending(regarding, namespace, type, reason, message, name))) {
            dropped.increment();
            return;
        }
        if (!running) {
            // closed meanwhile: the writer may have gone before this one was queued
            discardQueued();
        }
    }

    private static ObjectReference ref(HasMetadata o) {
        return new ObjectReferenceBuilder().withApiVersion(o.getApiVersion()).withKind(o.getKind())
                .withNamespace(o.getMetadata().getNamespace()).withName(o.getMetadata().getName())
                .withUid(o.getMetadata().getUid()).withResourceVersion(o.getMetadata().getResourceVersion()).build();
    }

    private void drain() {
        Pending held = null;
        try {
            while (running) {
                Pending p;
                try {
                    // with nothing rate-limited left to flush, sleep until the next event: an idle replica's writer
                    // does not wake five times a second for nothing
                    p = buckets.isEmpty() ? queue.take() : queue.poll(200, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    return;
                }
                if (p == null) {
                    flushAggregates();
                    continue;
                }
                // let the request that produced the event finish its answer first: events are not urgent, and
                // on a busy API server (or a small machine) an immediate write competes with the hot path
                held = p;
                try {
                    Thread.sleep(LINGER_MILLIS);
                } catch (InterruptedException e) {
                    return;
                }
                held = null;
                admit(p);
                Pending more;
                while (running && (more = queue.poll()) != null) {
                    admit(more);
                }
                flushAggregates();
            }
        } finally {
            // closed: what is still queued, taken but not written, or aggregated waiting for a token is lost
            if (held != null) {
                lostAtClose.increment();
            }
            for (Bucket b : buckets.values()) {
                lostAtClose.add(b.aggregated);
            }
            buckets.clear();
            discardQueued();
        }
    }

    private void discardQueued() {
        while (queue.poll() != null) {
            lostAtClose.increment();
        }
    }

    /** Writes the event if its key has a token (carrying what was aggregated meanwhile), else aggregates it. */
    private void admit(Pending p) {
        if (burst <= 0) {
            write(p, 0, null);
            return;
        }
        String key = p.namespace() + "\u0000" + p.type() + "\u0000" + p.reason() + "\u0000" + p.regarding().getKind();
        Bucket b = buckets.get(key);
        long now = tokenNanos.getAsLong();
        if (b == null) {
            b = new Bucket();
            b.tokens = burst;
            b.lastNanos = now;
            buckets.put(key, b);
        }
        refill(b, now);
        if (b.tokens >= 1 && p.name() != null && b.aggregated > 0) {
            // recorded once: it goes out alone under its name (a 409 then means only it was recorded elsewhere); what
            // was aggregated waits for the next token
            b.tokens -= 1;
            write(p, 0, null);
            return;
        }
        if (b.tokens >= 1) {
            b.tokens -= 1;
            int carried = b.aggregated;
            String first = b.firstTimestamp;
            b.latest = null;
            b.aggregated = 0;
            b.firstTimestamp = null;
            write(p, carried, first);
            return;
        }
        if (b.aggregated == 0) {
            b.firstTimestamp = clock.instant().toString();
        }
        b.latest = p;
        b.aggregated++;
        aggregated.increment();
    }

    private void refill(Bucket b, long now) {
        long elapsed = now - b.lastNanos;
        if (elapsed > 0) {
            b.tokens = Math.min(burst, b.tokens + (double) elapsed / intervalNanos);
            b.lastNanos = now;
        }
    }

    /** Tests: the clock by which tokens come back, set before the first event. */
    void refillTokensWith(java.util.function.LongSupplier nanos) {
        this.tokenNanos = nanos;
    }

    /** Aggregated events whose key has a token again are written as one combined Event; full idle buckets go. */
    private void flushAggregates() {
        if (buckets.isEmpty()) {
            return;
        }
        long now = tokenNanos.getAsLong();
        var it = buckets.values().iterator();
        while (it.hasNext()) {
            Bucket b = it.next();
            refill(b, now);
            if (b.aggregated > 0 && b.tokens >= 1) {
                b.tokens -= 1;
                // the latest aggregated event stands for itself and the others before it
                Pending latest = b.latest;
                int others = b.aggregated - 1;
                String first = b.firstTimestamp;
                b.latest = null;
                b.aggregated = 0;
                b.firstTimestamp = null;
                write(latest, others, first, true);
            } else if (b.aggregated == 0 && b.tokens >= burst) {
                it.remove();
            }
        }
    }

    private void write(Pending p, int carried, String firstTimestamp) {
        write(p, carried, firstTimestamp, false);
    }

    /**
     * One Event; {@code carried} earlier events of its key are combined into it (client-go's aggregate form).
     * {@code flushed}: p is itself an aggregated event, written on its own once its key had a token again.
     */
    private void write(Pending p, int carried, String firstTimestamp, boolean flushed) {
        Refusal refusal = refusals.get(p.namespace());
        if (refusal != null && refusal.suspended && System.nanoTime() - refusal.suspendedUntilNanos < 0) {
            forbidden.increment(); // RBAC refuses this namespace's events: do not ask again before the probe
            return;
        }
        String now = clock.instant().toString();
        boolean combined = carried > 0 || flushed;
        // an Event that stands for others too has a name of its own: under the name of one recorded once, a 409
        // (that one recorded elsewhere) would lose the others with it
        String once = carried == 0 ? p.name() : null;
        Event e = new EventBuilder().withNewMetadata()
                .withName(once != null ? once
                        : p.regarding().getName() + "." + UUID.randomUUID().toString().substring(0, 8))
                .withNamespace(p.namespace()).endMetadata()
                .withInvolvedObject(p.regarding()).withType(p.type()).withReason(p.reason())
                .withMessage(combined ? "(combined from similar events): " + p.message() : p.message())
                .withFirstTimestamp(firstTimestamp != null ? firstTimestamp : now).withLastTimestamp(now)
                .withCount(1 + carried)
                .withNewSource().withComponent(COMPONENT).endSource()
                .withReportingComponent(COMPONENT).build();
        try {
            calls.count(KubeApiCall.EVENTS_CREATE);
            client.v1().events().inNamespace(p.namespace()).resource(e).create();
            written.increment();
            if (refusals.remove(p.namespace()) != null) {
                LOG.info("events in namespace {} are accepted again", p.namespace());
            }
        } catch (KubernetesClientException ex) {
            if (ex.getCode() == 403) {
                refused(p, ex);
            } else if (ex.getCode() == 409 && once != null) {
                // recorded once, and it was: another leader (or this one before a restart) wrote it
                recordedElsewhere.increment();
                if (refusals.remove(p.namespace()) != null) {
                    LOG.info("events in namespace {} are accepted again", p.namespace());
                }
            } else {
                failed(p, ex);
            }
        } catch (RuntimeException ex) {
            failed(p, ex);
        }
    }

    private void failed(Pending p, RuntimeException ex) {
        failed.increment();
        LOG.debug("event {} for {} not recorded: {}", p.reason(), p.regarding().getName(), ex.toString());
    }

    private void refused(Pending p, KubernetesClientException ex) {
        forbidden.increment();
        Refusal r = refusals.get(p.namespace());
        if (r == null) {
            r = new Refusal();
            refusals.put(p.namespace(), r);
            LOG.warn("events in namespace {} are forbidden ({}): they are dropped and counted in "
                    + "playpen_events_dropped_total{reason=\"forbidden\"}; grant create on events in {} "
                    + "to the operator's ServiceAccount to record them", p.namespace(),
                    ex.getStatus() != null && ex.getStatus().getMessage() != null ? ex.getStatus().getMessage()
                            : ex.getMessage(), p.namespace());
        }
        r.consecutive++;
        if (r.consecutive >= FORBIDDEN_BEFORE_SUSPEND) {
            r.suspended = true;
            r.suspendedUntilNanos = System.nanoTime() + probeInterval.toNanos();
        }
    }

    /** Event objects created (a combined one counts once). */
    public long written() {
        return written.sum();
    }

    /** Events not written on their own because their key was over its rate: combined into a later Event. */
    public long aggregated() {
        return aggregated.sum();
    }

    /** Events dropped because the queue was full. */
    public long dropped() {
        return dropped.sum();
    }

    /**
     * Events lost because the recorder closed: still queued, aggregated and waiting for a token, or recorded after
     * the close.
     */
    public long lostAtClose() {
        return lostAtClose.sum();
    }

    /**
     * Events recorded once ({@link #warningOnce}) that were there already, written by another leader: the API server
     * answered their create with 409 AlreadyExists. Neither written nor failed.
     */
    public long recordedElsewhere() {
        return recordedElsewhere.sum();
    }

    /** Events the API server refused for another reason than RBAC (5xx, invalid, unreachable). */
    public long failed() {
        return failed.sum();
    }

    /** Events not recorded because RBAC forbids them: 403 answers plus those dropped unsent while suspended. */
    public long forbidden() {
        return forbidden.sum();
    }

    /** The writer thread's state (tests: an idle writer waits for the next event without waking on a timer). */
    Thread.State writerState() {
        return writer.getState();
    }

    @Override
    public void close() {
        running = false;
        writer.interrupt();
    }
}
