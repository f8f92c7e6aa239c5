package io.unboundedcloud.playpen.camel;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

import javax.management.ObjectName;

import org.jolokia.server.core.restrictor.policy.PolicyRestrictor;
import org.jolokia.server.core.service.api.Restrictor;
import org.jolokia.server.core.util.HttpMethod;
import org.jolokia.server.core.util.RequestType;

/**
 * The management listener's Jolokia policy: {@code jolokia-access.xml} (reads, and the read-only dump
 * operations Hawtio needs; never the JVM's command line, system properties or class paths), plus two rules the
 * policy file cannot express: notification registrations are refused (each one would hold a client and its
 * notification store in memory until it expires), and Jolokia never echoes a CORS origin itself:
 * {@link ManagementGuard} refuses every origin that is not configured and answers CORS for those that are.
 */
public final class ManagementRestrictor implements Restrictor {
    static final String POLICY = "/jolokia-access.xml";

    private final PolicyRestrictor policy;

    public ManagementRestrictor() {
        try (InputStream in = ManagementRestrictor.class.getResourceAsStream(POLICY)) {
            if (in == null) {
                throw new IllegalStateException("missing " + POLICY + " on the classpath");
            }
            policy = new PolicyRestrictor(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public boolean isHttpMethodAllowed(HttpMethod method) {
        return policy.isHttpMethodAllowed(method);
    }

    @Override
    public boolean isTypeAllowed(RequestType type) {
        return type != RequestType.NOTIFICATION && policy.isTypeAllowed(type);
    }

    @Override
    public boolean isAttributeReadAllowed(ObjectName name, String attribute) {
        return policy.isAttributeReadAllowed(name, attribute);
    }

    @Override
    public boolean isAttributeWriteAllowed(ObjectName name, String attribute) {
        return false;
    }

    @Override
    public boolean isOperationAllowed(ObjectName name, String operation) {
        // Jolokia hands over the operation as the client wrote it, signature included
        // ("dumpRouteStatsAsXml(boolean,boolean)"); the policy names operations (every overload of a
        // listed dump operation is read-only)
        int paren = operation.indexOf('(');
        return policy.isOperationAllowed(name, paren < 0 ? operation : operation.substring(0, paren));
    }

    @Override
    public boolean isRemoteAccessAllowed(String... hostOrAddress) {
        return policy.isRemoteAccessAllowed(hostOrAddress);
    }

    @Override
    public boolean isOriginAllowed(String origin, boolean onlyWhenStrictCheckingIsEnabled) {
        // Strict mode asks "refuse this request?" (with the Origin, or else the Referer): the guard in front has
        // refused every Origin that is not configured already. Non-strict mode asks "echo this origin in CORS
        // headers?": never here; the guard writes them for configured origins.
        return onlyWhenStrictCheckingIsEnabled;
    }

    @Override
    public boolean isObjectNameHidden(ObjectName name) {
        return policy.isObjectNameHidden(name);
    }

    @Override
    public boolean ignoreScheme() {
        return policy.ignoreScheme();
    }
}
