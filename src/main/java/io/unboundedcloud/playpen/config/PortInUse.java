package io.unboundedcloud.playpen.config;

import java.io.IOException;
import java.net.BindException;

/**
 * A listener whose port another process already holds: the JDK and Netty say only "Address already in use", so the
 * failure is told again with the address, the flag that chose it and what to do.
 */
public final class PortInUse {
    private PortInUse() {
    }

    /** What opens a listener: a bind that may find its port taken. */
    @FunctionalInterface
    public interface Listen<T, E extends Exception> {
        T open() throws E;
    }

    /**
     * {@code listen}, a taken port reported as {@link #of} names it (the address {@code host}:{@code port}, chosen by
     * {@code flag}); any other failure as it is.
     */
    public static <T, E extends Exception> T listening(String flag, String host, int port, boolean freeWhenLeftOut,
            Listen<T, E> listen) throws E, IOException {
        try {
            return listen.open();
        } catch (Exception e) {
            if (is(e)) {
                throw of(flag, host, port, freeWhenLeftOut, e);
            }
            throw e;
        }
    }

    /** Whether {@code t}, or a cause of it, is a failed bind. */
    public static boolean is(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof BindException) {
                return true;
            }
        }
        return false;
    }

    /**
     * The failure to report for a listener on {@code host}:{@code port} chosen by {@code flag} that could not bind;
     * {@code freeWhenLeftOut}: leaving the flag out gives a free port (the playground's ports).
     */
    public static IOException of(String flag, String host, int port, boolean freeWhenLeftOut, Throwable cause) {
        String where = (host == null || host.isEmpty() ? "*" : host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":"
                + port;
        return new IOException("cannot listen on " + where + " (" + flag + "): another process already listens on that "
                + "port" + (freeWhenLeftOut ? " (another playground?)" : "") + "; stop it, or give " + flag
                + " another port" + (freeWhenLeftOut ? ", or leave " + flag + " out for a free one" : ""), cause);
    }
}
