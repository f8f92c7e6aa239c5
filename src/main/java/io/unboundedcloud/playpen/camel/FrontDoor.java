package io.unboundedcloud.playpen.camel;

import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Locale;

import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.component.netty.NettyConstants;
import org.apache.camel.component.netty.http.NettyHttpMessage;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.ApiPaths;
import io.unboundedcloud.playpen.auth.FrontProxyAuthenticator;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.auth.IdentityHeaders;
import io.unboundedcloud.playpen.auth.TrustBundle;

/**
 * First step of every HTTPS request: picks the flow from the method and the exact raw path (404/405, before any
 * authentication, like the reference), authenticates the front proxy on API paths (403) and requires a user on
 * alloc and dealloc (403). Leaves the flow name and identity on the exchange; bodies are checked by the flows.
 */
public final class FrontDoor {
    public static final String FLOW = "playpenFlow";
    public static final String IDENTITY = "playpenIdentity";
    /** The request target as sent (path and query), for flows that read their own parameters. */
    public static final String TARGET = "playpenTarget";
    /** {@link System#nanoTime} when the front door took the request: where the alloc latency starts. */
    public static final String ADMITTED_NANOS = "playpenAdmittedNanos";

    private final FrontProxyAuthenticator authenticator;

    public FrontDoor(FrontProxyAuthenticator authenticator) {
        this.authenticator = authenticator;
    }

    public void admit(Exchange exchange) {
        exchange.setProperty(ADMITTED_NANOS, System.nanoTime());
        Message in = exchange.getMessage();
        String method = in.getHeader(Exchange.HTTP_METHOD, String.class);
        String target = rawTarget(in);
        ApiPaths.Flow flow = ApiPaths.route(method, target);
        exchange.setProperty(FLOW, flow.name().toLowerCase(Locale.ROOT));
        exchange.setProperty(TARGET, target);
        TrustBundle trust = null;
        if (flow.authenticated()) {
            try {
                trust = authenticator.verifyPeer(peerChain(in));
            } catch (FrontProxyAuthenticator.Refused e) {
                // audited by the errors configuration: nobody was authenticated, the reason is the log's
                AuditLog.refusedAtTheDoor(exchange, flow, e.why());
                throw e;
            }
        }
        if (flow.forUser()) {
            // every flow for a user is authenticated; the uid only where kube-apiserver vouches for it
            try {
                exchange.setProperty(IDENTITY, identity(in, trust != null && trust.sendsUid()));
            } catch (ApiException e) {
                // no user, or identity headers that cannot be read: the front proxy vouched for nobody usable
                AuditLog.refusedAtTheDoor(exchange, flow, e.getMessage());
                throw e;
            }
        }
    }

    /**
     * The request target exactly as sent: Camel's HTTP_URI header is already percent-decoded, which would turn
     * {@code v1alpha1%2Fallocs} into the allocs path.
     */
    private static String rawTarget(Message in) {
        if (in instanceof NettyHttpMessage netty && netty.getHttpRequest() != null) {
            return netty.getHttpRequest().uri();
        }
        throw new IllegalStateException("not a netty-http request: the front door needs the raw request target");
    }

    private static X509Certificate[] peerChain(Message in) {
        SSLSession session = in.getHeader(NettyConstants.NETTY_SSL_SESSION, SSLSession.class);
        if (session == null) {
            return null;
        }
        try {
            Certificate[] certs = session.getPeerCertificates();
            X509Certificate[] out = new X509Certificate[certs.length];
            for (int i = 0; i < certs.length; i++) {
                out[i] = (X509Certificate) certs[i];
            }
            return out;
        } catch (SSLPeerUnverifiedException e) {
            return null;
        }
    }

    /**
     * The identity from the request's own header lines (not Camel's header map, which mixes in query parameters
     * and may split or merge values), in arrival order, as kube-apiserver's authenticator reads them.
     */
    private static Identity identity(Message in, boolean readUid) {
        if (in instanceof NettyHttpMessage netty && netty.getHttpRequest() != null) {
            return IdentityHeaders.parse(() -> netty.getHttpRequest().headers().iteratorAsString(), readUid);
        }
        throw new IllegalStateException("not a netty-http request: the front door needs the request's header lines");
    }
}
