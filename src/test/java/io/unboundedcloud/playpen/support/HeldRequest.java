package io.unboundedcloud.playpen.support;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.http.BasicBuilder;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.Interceptor;
import io.unboundedcloud.playpen.kube.KubeClients;

/**
 * One API call made slow on the caller's side: the first request of a {@link #client} that matches waits, on the
 * thread that sends it, until {@link #release} (a slow API server for that caller alone; the simulated API server
 * answers one request at a time, so holding it there would hold every other caller too). Closing releases it.
 */
public final class HeldRequest implements Interceptor, AutoCloseable {
    private final Predicate<HttpRequest> which;
    private final AtomicBoolean taken = new AtomicBoolean();
    private final CountDownLatch reached = new CountDownLatch(1);
    private final CountDownLatch released = new CountDownLatch(1);

    public HeldRequest(Predicate<HttpRequest> which) {
        this.which = which;
    }

    /** A client of {@code cluster}'s API server (the operator's JSON) whose first request that matches is held. */
    public KubernetesClient client(TestCluster cluster) {
        return new KubernetesClientBuilder().withConfig(cluster.client.getConfiguration())
                .withKubernetesSerialization(KubeClients.serialization())
                .withHttpClientBuilderConsumer(b -> b.addOrReplaceInterceptor("held-request", this)).build();
    }

    @Override
    public void before(BasicBuilder builder, HttpRequest request, RequestTags tags) {
        if (!which.test(request) || !taken.compareAndSet(false, true)) {
            return;
        }
        reached.countDown();
        try {
            released.await(2, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits until the request that matches is held; false if none came in {@code seconds}. */
    public boolean awaitHeld(long seconds) throws InterruptedException {
        return reached.await(seconds, TimeUnit.SECONDS);
    }

    /** The request held goes on (and one that comes later is not held). */
    public void release() {
        released.countDown();
    }

    @Override
    public void close() {
        release();
    }
}
