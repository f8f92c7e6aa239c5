package io.unboundedcloud.playpen.support;

import java.util.List;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;

/**
 * The log lines one class (or one named logger, such as the audit log's) writes during each test:
 * {@code @RegisterExtension final CapturedLogs logs = CapturedLogs.of(X.class);} attaches before every test and
 * detaches after it.
 */
public final class CapturedLogs implements BeforeEachCallback, AfterEachCallback {
    private final Logger logger;
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    private CapturedLogs(Logger logger) {
        this.logger = logger;
    }

    public static CapturedLogs of(Class<?> of) {
        return new CapturedLogs((Logger) LoggerFactory.getLogger(of));
    }

    /** The lines of the logger named {@code name} ({@code playpen.audit}: the audit log). */
    public static CapturedLogs named(String name) {
        return new CapturedLogs((Logger) LoggerFactory.getLogger(name));
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        appender.list.clear();
        appender.start();
        logger.addAppender(appender);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        logger.detachAppender(appender);
        appender.stop();
    }

    /**
     * The lines so far, in the order written: a copy, taken under the appender's lock (the one its appends hold), so
     * a line written by another thread meanwhile never breaks a walk of it; call again for later lines.
     */
    public List<ILoggingEvent> lines() {
        return snapshot(appender);
    }

    /**
     * A copy of the events a list appender holds, taken under the appender's lock (the one its appends hold): a walk
     * of its live list while another thread logs can fail with a ConcurrentModificationException.
     */
    public static List<ILoggingEvent> snapshot(ListAppender<ILoggingEvent> appender) {
        synchronized (appender) {
            return List.copyOf(appender.list);
        }
    }
}
