package io.unboundedcloud.playpen.camel;

import java.util.List;
import java.util.Map;

/** The management guard's parsers, for the property tests outside this package. */
public final class ManagementGuardAccess {
    private ManagementGuardAccess() {
    }

    public static Object checkPost(byte[] body) {
        return ManagementGuard.checkPost(body);
    }

    public static Map<String, List<String>> parameters(String query) {
        return ManagementGuard.jolokiaParameters(query);
    }
}
