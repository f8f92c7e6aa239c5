package io.unboundedcloud.playpen.kube;

import java.time.Clock;
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

/**
 * Records Kubernetes Events without ever slowing the caller: events go into a bounded queue written by one
 * background thread; when the queue is full (API slow or refusing) new events are dropped and counted.
 */
public final class EventRecorder implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EventRecorder.class);
    private static final String COMPONENT = "playpen-operator";
    private static final long LINGER_MILLIS = 20;

    private record Pending(ObjectReference regarding, String namespace, String type, String reason, String message) {
    }

    private final KubernetesClient client;
    private final Clock clock;
    private final ApiCallCounter calls;
    private final BlockingQueue<Pending> queue;
    private final LongAdder written = new LongAdder();
    private final LongAdder dropped = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final Thread writer;
    private volatile boolean running = true;

    public EventRecorder(KubernetesClient client, Clock clock, ApiCallCounter calls, int capacity) {
        this.client = client;
        this.clock = clock;
        this.calls = calls;
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

    private void offer(ObjectReference regarding, String namespace, String type, String reason, String message) {
        if (!queue.offer(new Pending(regarding, namespace, type, reason, message))) {
            dropped.increment();
        }
    }

    private static ObjectReference ref(HasMetadata o) {
        return new ObjectReferenceBuilder().withApiVersion(o.getApiVersion()).withKind(o.getKind())
                .withNamespace(o.getMetadata().getNamespace()).withName(o.getMetadata().getName())
                .withUid(o.getMetadata().getUid()).withResourceVersion(o.getMetadata().getResourceVersion()).build();
    }

    private void drain() {
        while (running) {
            Pending p;
            try {
                p = queue.poll(200, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (p == null) {
                continue;
            }
            // let the request that produced the event finish its answer first: events are not urgent, and
            // on a busy API server (or a small machine) an immediate write competes with the hot path
            try {
                Thread.sleep(LINGER_MILLIS);
            } catch (InterruptedException e) {
                return;
            }
            write(p);
            Pending more;
            while ((more = queue.poll()) != null) {
                write(more);
            }
        }
    }

    private void write(Pending p) {
        String now = clock.instant().toString();
        Event e = new EventBuilder().withNewMetadata()
                .withName(p.regarding().getName() + "." + UUID.randomUUID().toString().substring(0, 8))
                .withNamespace(p.namespace()).endMetadata()
                .withInvolvedObject(p.regarding()).withType(p.type()).withReason(p.reason()).withMessage(p.message())
                .withFirstTimestamp(now).withLastTimestamp(now).withCount(1)
                .withNewSource().withComponent(COMPONENT).endSource()
                .withReportingComponent(COMPONENT).build();
        try {
            calls.count(KubeApiCall.EVENTS_CREATE);
            client.v1().events().inNamespace(p.namespace()).resource(e).create();
            written.increment();
        } catch (RuntimeException ex) {
            failed.increment();
            LOG.debug("event {} for {} not recorded: {}", p.reason(), p.regarding().getName(), ex.toString());
        }
    }

    public long written() {
        return written.sum();
    }

    public long dropped() {
        return dropped.sum();
    }

    public long failed() {
        return failed.sum();
    }

    @Override
    public void close() {
        running = false;
        writer.interrupt();
    }
}
