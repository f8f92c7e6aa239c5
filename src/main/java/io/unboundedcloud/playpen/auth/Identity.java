package io.unboundedcloud.playpen.auth;

import java.util.List;
import java.util.Map;

/** The user kube-apiserver vouched for through the front-proxy headers. */
public record Identity(String user, String uid, List<String> groups, Map<String, List<String>> extra) {
    public Identity {
        groups = List.copyOf(groups);
        extra = Map.copyOf(extra);
    }
}
