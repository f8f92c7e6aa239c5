package io.unboundedcloud.playpen.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A loopback TCP proxy in front of the mock API server that makes one replica lag, in order, as a slow network or
 * a busy API server would: every byte arrives, late. {@link #holdWatches()} holds what watch streams send (the
 * replica's cache stops moving while its API calls still go through) until {@link #releaseWatches()};
 * {@link #delay} holds every chunk in both directions of every connection for a fixed time. Nothing is dropped or
 * reordered within a connection.
 */
public final class LagProxy implements AutoCloseable {
    private final URI upstream;
    private final ServerSocket server;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "lag-proxy");
        t.setDaemon(true);
        return t;
    });
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private volatile long delayNanos;
    private volatile long jitterNanos;
    private final java.util.Random random = new java.util.Random(20261125);

    public LagProxy(URI upstream) throws IOException {
        this.upstream = upstream;
        this.server = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
        threads.execute(this::accept);
    }

    public URI url() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort() + "/");
    }

    /** A Kubernetes client of the test cluster's namespace that reaches the API server through this proxy. */
    public io.fabric8.kubernetes.client.KubernetesClient newClient() {
        return io.unboundedcloud.playpen.kube.KubeClients.create(new io.fabric8.kubernetes.client.ConfigBuilder()
                .withMasterUrl(url().toString()).withNamespace(TestCluster.NS).withTrustCerts(true).build());
    }

    /**
     * From now on, what the watch streams open now send waits here (in order) until {@link #releaseWatches()}.
     * Watches opened later are not held: a held opening handshake makes fabric8 fall back to plain HTTP watches,
     * which the simulated API server does not serve.
     */
    public void holdWatches() {
        synchronized (gate) {
            for (Connection c : connections) {
                if (c.watch) {
                    c.held = true;
                }
            }
        }
    }

    /** Closes every watch connection now (the client reconnects from the last version it got). */
    public void dropWatches() {
        for (Connection c : connections) {
            if (c.watch) {
                c.close();
            }
        }
    }

    public void releaseWatches() {
        synchronized (gate) {
            for (Connection c : connections) {
                c.held = false;
            }
            gate.notifyAll();
        }
    }

    /** Every chunk, both ways, on every connection, arrives this much later than it was sent (zero: no delay). */
    public void delay(Duration d) {
        delay(d, d);
    }

    /**
     * Every chunk is held for a time drawn from [min, max] (uniformly); a connection's chunks still arrive in
     * order, so a chunk may wait longer behind an earlier one.
     */
    public void delay(Duration min, Duration max) {
        delayNanos = min.toNanos();
        jitterNanos = Math.max(0, max.toNanos() - min.toNanos());
    }

    private long holdNanos() {
        long jitter = jitterNanos;
        if (jitter == 0) {
            return delayNanos;
        }
        synchronized (random) {
            return delayNanos + (long) (random.nextDouble() * jitter);
        }
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket api = new Socket(upstream.getHost(), upstream.getPort());
                client.setTcpNoDelay(true);
                api.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(api);
                Connection c = new Connection(client, api);
                connections.add(c);
                threads.execute(() -> pump(client, api, c, true));
                threads.execute(() -> pump(api, client, c, false));
            } catch (IOException e) {
                return;
            }
        }
    }

    /** Whether a connection carries a watch (seen in its first request line), and its two sockets. */
    private static final class Connection {
        volatile boolean watch;
        volatile boolean classified;
        volatile boolean held;
        final Socket client;
        final Socket api;

        Connection(Socket client, Socket api) {
            this.client = client;
            this.api = api;
        }

        void close() {
            try {
                client.close();
                api.close();
            } catch (IOException e) {
                // closed anyway
            }
        }
    }

    private final List<Connection> connections = new CopyOnWriteArrayList<>();

    private record Chunk(byte[] bytes, long dueNanos) {
    }

    private void pump(Socket from, Socket to, Connection c, boolean request) {
        BlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
        threads.execute(() -> deliver(queue, to, c, request));
        byte[] buf = new byte[16384];
        try (InputStream in = from.getInputStream()) {
            int n;
            while ((n = in.read(buf)) > 0) {
                byte[] copy = java.util.Arrays.copyOf(buf, n);
                if (request && !c.classified) {
                    String head = new String(copy, 0, Math.min(n, 2048), StandardCharsets.ISO_8859_1);
                    int eol = head.indexOf('\n');
                    c.watch = (eol < 0 ? head : head.substring(0, eol)).contains("watch=true");
                    c.classified = true;
                }
                queue.put(new Chunk(copy, System.nanoTime() + holdNanos()));
            }
        } catch (IOException | InterruptedException e) {
            // closed
        }
        queue.add(new Chunk(null, System.nanoTime() + holdNanos()));
    }

    private void deliver(BlockingQueue<Chunk> queue, Socket to, Connection c, boolean request) {
        try (OutputStream out = to.getOutputStream()) {
            while (true) {
                Chunk chunk = queue.take();
                long wait = chunk.dueNanos() - System.nanoTime();
                if (wait > 0) {
                    TimeUnit.NANOSECONDS.sleep(wait);
                }
                if (!request && c.watch) {
                    synchronized (gate) {
                        while (c.held) {
                            gate.wait();
                        }
                    }
                }
                if (chunk.bytes() == null) {
                    to.shutdownOutput();
                    return;
                }
                out.write(chunk.bytes());
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // closed
        }
    }

    @Override
    public void close() {
        releaseWatches();
        try {
            server.close();
        } catch (IOException e) {
            // closing anyway
        }
        for (Socket s : sockets) {
            try {
                s.close();
            } catch (IOException e) {
                // closing anyway
            }
        }
        threads.shutdownNow();
    }
}
