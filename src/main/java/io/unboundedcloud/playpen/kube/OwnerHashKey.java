package io.unboundedcloud.playpen.kube;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.model.OwnerHashes;

/**
 * The installation's owner-hash key: the Secret --owner-hash-secret-name in --namespace, key {@value #KEY}. The
 * first replica that finds no Secret creates it with 32 random bytes; every replica then reads the same key. A
 * Secret without a usable key stops the start (a key made up per replica would split owners between replicas).
 * The key is never logged.
 */
public final class OwnerHashKey {
    public static final String KEY = "key";
    private static final Logger LOG = LoggerFactory.getLogger(OwnerHashKey.class);

    private OwnerHashKey() {
    }

    /** The key bytes, creating the Secret when it does not exist. */
    public static byte[] ensure(KubernetesClient client, String namespace, String name, ApiCallCounter calls) {
        Secret existing = get(client, namespace, name, calls);
        if (existing != null) {
            return keyOf(existing, namespace, name);
        }
        byte[] key = new byte[OwnerHashes.MIN_KEY_BYTES];
        new SecureRandom().nextBytes(key);
        Secret secret = new SecretBuilder().withNewMetadata().withName(name).withNamespace(namespace)
                .addToLabels("app.kubernetes.io/name", "playpen-operator").endMetadata()
                .withType("Opaque").withData(Map.of(KEY, Base64.getEncoder().encodeToString(key))).build();
        try {
            calls.count(KubeApiCall.SECRETS_CREATE);
            client.secrets().inNamespace(namespace).resource(secret).create();
            LOG.info("created the owner-hash key secret={}/{}", namespace, name);
            return key;
        } catch (KubernetesClientException e) {
            if (e.getCode() != 409) {
                throw e;
            }
            // another replica created it first: use theirs, so every replica writes the same hashes
            Secret theirs = get(client, namespace, name, calls);
            if (theirs == null) {
                throw new IllegalStateException("Secret " + namespace + "/" + name + " exists and cannot be read");
            }
            return keyOf(theirs, namespace, name);
        }
    }

    private static Secret get(KubernetesClient client, String namespace, String name, ApiCallCounter calls) {
        calls.count(KubeApiCall.OWNER_HASH_SECRET_GET);
        return client.secrets().inNamespace(namespace).withName(name).get();
    }

    static byte[] keyOf(Secret s, String namespace, String name) {
        String b64 = s.getData() == null ? null : s.getData().get(KEY);
        byte[] key;
        try {
            key = b64 == null ? new byte[0] : Base64.getDecoder().decode(b64.trim());
        } catch (IllegalArgumentException e) {
            key = new byte[0];
        }
        if (key.length < OwnerHashes.MIN_KEY_BYTES) {
            throw new IllegalStateException("Secret " + namespace + "/" + name + " has no usable owner-hash key: its data."
                    + KEY + " must hold at least " + OwnerHashes.MIN_KEY_BYTES + " random bytes (delete the Secret to"
                    + " have a new key made; owners of existing claims then no longer see them until they end)");
        }
        return key;
    }
}
