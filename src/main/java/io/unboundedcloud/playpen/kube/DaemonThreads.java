package io.unboundedcloud.playpen.kube;

import java.util.concurrent.ThreadFactory;

/** Named daemon threads for the operator's background executors (they must never keep the JVM alive). */
public final class DaemonThreads {
    private DaemonThreads() {
    }

    public static ThreadFactory named(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
