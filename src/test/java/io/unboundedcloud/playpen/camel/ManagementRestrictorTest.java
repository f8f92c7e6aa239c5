package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import javax.management.ObjectName;

import org.jolokia.server.core.util.HttpMethod;
import org.jolokia.server.core.util.RequestType;
import org.junit.jupiter.api.Test;

/**
 * The management listener's Jolokia policy, asked directly: what Hawtio needs to look is allowed, nothing that
 * changes state, reveals the command line or dumps memory; notifications are refused and CORS origins are never
 * echoed by Jolokia itself.
 */
class ManagementRestrictorTest {
    final ManagementRestrictor r = new ManagementRestrictor();

    static ObjectName name(String s) throws Exception {
        return new ObjectName(s);
    }

    @Test
    void readOnlyDumpsAreAllowedWithOrWithoutTheirSignatureAndNothingElseIs() throws Exception {
        ObjectName route = name("org.apache.camel:context=playpen,type=routes,name=\"allocs\"");
        ObjectName context = name("org.apache.camel:context=playpen,type=context,name=\"playpen\"");
        assertThat(r.isOperationAllowed(route, "dumpRouteAsXml")).isTrue();
        assertThat(r.isOperationAllowed(route, "dumpRouteAsXml(boolean)")).as("Hawtio's form, signature included")
                .isTrue();
        assertThat(r.isOperationAllowed(context, "dumpRoutesStatsAsXml(boolean,boolean)")).isTrue();
        for (String changes : new String[] {"stop", "stop()", "start()", "suspend()", "remove()", "reset(boolean)"}) {
            assertThat(r.isOperationAllowed(route, changes)).as(changes).isFalse();
        }
        assertThat(r.isOperationAllowed(context, "removeRoute(java.lang.String)")).isFalse();
        // a listed name on an MBean it is not listed for
        assertThat(r.isOperationAllowed(name("java.lang:type=Memory"), "dumpRouteAsXml")).isFalse();
        assertThat(r.isOperationAllowed(name("java.lang:type=Memory"), "gc()")).isFalse();
        assertThat(r.isOperationAllowed(name("com.sun.management:type=DiagnosticCommand"), "gcHeapDump"))
                .isFalse();
        assertThat(r.isOperationAllowed(name("com.sun.management:type=HotSpotDiagnostic"),
                "dumpHeap(java.lang.String,boolean)")).isFalse();
    }

    @Test
    void attributesAreReadableButNeverTheCommandLineOrWritable() throws Exception {
        ObjectName runtime = name("java.lang:type=Runtime");
        assertThat(r.isAttributeReadAllowed(runtime, "Uptime")).isTrue();
        assertThat(r.isAttributeReadAllowed(name("org.apache.camel:context=playpen,type=routes,name=\"allocs\""),
                "ExchangesTotal")).isTrue();
        for (String secret : new String[] {"SystemProperties", "InputArguments", "ClassPath", "BootClassPath",
                "LibraryPath"}) {
            assertThat(r.isAttributeReadAllowed(runtime, secret)).as(secret).isFalse();
        }
        assertThat(r.isAttributeReadAllowed(name("com.sun.management:type=DiagnosticCommand"), "MBeanInfo"))
                .isFalse();
        assertThat(r.isAttributeWriteAllowed(runtime, "Uptime")).isFalse();
        assertThat(r.isAttributeWriteAllowed(name("java.lang:type=Memory"), "Verbose")).isFalse();
    }

    @Test
    void notificationsAreRefusedAndJolokiaNeverEchoesAnOrigin() throws Exception {
        assertThat(r.isTypeAllowed(RequestType.NOTIFICATION)).isFalse();
        assertThat(r.isTypeAllowed(RequestType.READ)).isTrue();
        assertThat(r.isTypeAllowed(RequestType.LIST)).isTrue();
        // strict checking asks whether to refuse: the guard in front has refused unconfigured origins already
        assertThat(r.isOriginAllowed("https://console.example", true)).isTrue();
        // otherwise Jolokia asks whether to echo it in CORS headers: never, the guard writes them
        assertThat(r.isOriginAllowed("https://console.example", false)).isFalse();
        // write is no command of the policy: no attribute is ever set through the listener
        assertThat(r.isTypeAllowed(RequestType.WRITE)).isFalse();
    }

    @Test
    void whoMayAskIsLeftToTheListenerAndItsGuard() throws Exception {
        // the policy restricts no HTTP method, client address or scheme: the listener's bind address, the
        // NetworkPolicy and the guard in front decide who reaches it and from which page
        assertThat(r.isHttpMethodAllowed(HttpMethod.GET)).isTrue();
        assertThat(r.isHttpMethodAllowed(HttpMethod.POST)).isTrue();
        assertThat(r.isRemoteAccessAllowed("10.0.0.1", "pod.playpen.svc")).isTrue();
        assertThat(r.ignoreScheme()).isFalse();
        // nothing is hidden from the JMX tree: what may not be read is denied attribute by attribute
        assertThat(r.isObjectNameHidden(name("java.lang:type=Runtime"))).isFalse();
    }
}
