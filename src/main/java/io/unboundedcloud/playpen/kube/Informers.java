package io.unboundedcloud.playpen.kube;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.client.informers.ExceptionHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;

/**
 * Watch caches that never give up. fabric8's default stops an informer for good when its first LIST or WATCH
 * fails (API server unreachable or overloaded at start, a 403 before RBAC is applied), which left a replica
 * not ready until restarted; here every failure is retried with the informer's own backoff, and logged.
 */
final class Informers {
    private static final Logger LOG = LoggerFactory.getLogger(Informers.class);
    private static final long LOG_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

    private Informers() {
    }

    /** Sets the retry-always handler; call before {@code start()}. */
    static <T> SharedIndexInformer<T> keepRetrying(SharedIndexInformer<T> informer, String what) {
        return informer.exceptionHandler(handler(what));
    }

    static ExceptionHandler handler(String what) {
        return handler(what, System::nanoTime);
    }

    /** Every failure retried; the first logged, then at most one line a minute by {@code nanos}. */
    static ExceptionHandler handler(String what, LongSupplier nanos) {
        AtomicLong lastLog = new AtomicLong(Long.MIN_VALUE);
        return (started, t) -> {
            long now = nanos.getAsLong();
            long last = lastLog.get();
            // the first failure and then one line a minute: a long outage must not flood the log
            if (last != Long.MIN_VALUE && now - last < LOG_EVERY_NANOS || !lastLog.compareAndSet(last, now)) {
                return true;
            }
            if (ExceptionHandler.isDeserializationException(t)) {
                LOG.warn("{} watch: an object could not be read, retrying: {}", what, t.toString());
            } else {
                LOG.warn("{} {} failed, retrying: {}", what, started ? "watch" : "initial list", t.toString());
            }
            return true;
        };
    }
}
