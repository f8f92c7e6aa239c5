package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.component.netty.http.NettyHttpMessage;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.auth.FrontProxyAuthenticator;
import io.unboundedcloud.playpen.auth.Identity;

/**
 * The front door judges each request on its own, whatever ran before it: the connection guard refuses a
 * connection without a trusted front-proxy certificate from the request's head, and the front door refuses it
 * again (a route whose decoders were re-wired without the guard still authenticates). The method and path are
 * judged first (404/405 without a certificate, like the reference); probes need none.
 */
class FrontDoorTest {
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";

    final FrontDoor door = new FrontDoor(ConnectionGuardTest.withoutCertificates());
    final CamelContext camel = new DefaultCamelContext();

    @AfterEach
    void down() throws Exception {
        camel.close();
    }

    /** A request as netty-http hands it over, on a connection without TLS client certificate (no SSL session). */
    Exchange request(String method, String target, String user) {
        DefaultFullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.valueOf(method), target);
        if (user != null) {
            req.headers().add("X-Remote-User", user).add("X-Remote-Group", "playpen-users");
        }
        Exchange e = new DefaultExchange(camel);
        NettyHttpMessage m = new NettyHttpMessage(camel, req, null);
        m.setHeader(Exchange.HTTP_METHOD, method);
        e.setMessage(m);
        return e;
    }

    @Test
    void anApiRequestWithoutAFrontProxyCertificateIsRefusedHereToo() {
        for (String[] r : new String[][] {{"POST", ALLOCS}, {"GET", ALLOCS}, {"GET", "/apis/playpen.unbounded-cloud.io/v1alpha1"},
                {"POST", "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs"}}) {
            Exchange e = request(r[0], r[1], "mallory");
            ApiException refused = catchThrowableOfType(FrontProxyAuthenticator.Refused.class, () -> door.admit(e));
            assertThat(refused).as(r[0] + " " + r[1]).isNotNull();
            assertThat(refused.code()).isEqualTo(403);
            // the identity headers of an unauthenticated request are never taken up
            assertThat(e.getProperty(FrontDoor.IDENTITY)).as(r[1]).isNull();
        }
    }

    @Test
    void theMethodAndPathAreJudgedBeforeTheCertificateAndProbesNeedNone() {
        ApiException wrongMethod = catchThrowableOfType(ApiException.class,
                () -> door.admit(request("PUT", "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs", null)));
        assertThat(wrongMethod.code()).isEqualTo(405);
        assertThat(catchThrowableOfType(ApiException.class, () -> door.admit(request("GET", "/nope", null))).code())
                .isEqualTo(404);

        Exchange probe = request("GET", "/readyz", "mallory");
        door.admit(probe);
        assertThat(probe.getProperty(FrontDoor.FLOW)).isEqualTo("readyz");
        assertThat(probe.getProperty(FrontDoor.TARGET)).isEqualTo("/readyz");
        assertThat(probe.getProperty(FrontDoor.IDENTITY, Identity.class)).isNull();
    }

    /**
     * The alloc latency runs from the front door to the answer at the clock's resolution: an answer 1.5 ms after
     * the front door is recorded as that, not cut to whole milliseconds (1 ms, in the 1 ms bucket).
     */
    @Test
    void theAllocLatencyKeepsItsFractionOfAMillisecond() {
        OperatorMetrics metrics = new OperatorMetrics();
        ReplyWriter writer = new ReplyWriter(1, metrics);
        Exchange e = request("POST", ALLOCS, "alice");
        Throwable refused = catchThrowableOfType(FrontProxyAuthenticator.Refused.class, () -> door.admit(e));
        assertThat(refused).isNotNull();
        long spun = System.nanoTime();
        while (System.nanoTime() - spun < 1_500_000L) {
            Thread.onSpinWait();
        }
        e.setProperty(Exchange.EXCEPTION_CAUGHT, refused);
        writer.process(e);

        long recorded = (long) metrics.registry().get("playpen_alloc_latency").timer()
                .totalTime(java.util.concurrent.TimeUnit.NANOSECONDS);
        assertThat(recorded).isGreaterThanOrEqualTo(1_500_000L);
        assertThat(recorded % 1_000_000L).as("recorded %d ns", recorded).isNotZero();
    }
}
