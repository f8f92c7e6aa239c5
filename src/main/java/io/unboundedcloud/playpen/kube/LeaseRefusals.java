package io.unboundedcloud.playpen.kube;

import java.time.Instant;
import java.time.ZonedDateTime;
import java.util.LinkedHashMap;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.fasterxml.jackson.databind.JsonNode;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseSpec;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * The leader's refused pod creates, as it publishes them on the leader Lease so that every replica's answer for a
 * pool shows them. The leader writes the annotation {@link #ANNOTATION} in each of its Lease writes (a renewal every
 * --leader-election-retry-period, no write of its own), naming itself; a replica that does not lead reads the Lease
 * (one GET per read of the pools) and takes the refusals only while the Lease names that same holder and has not
 * expired: a leader that stopped, or a writer of the Lease that does not write the annotation, leaves nothing shown.
 */
public final class LeaseRefusals {
    private static final Logger LOG = LoggerFactory.getLogger(LeaseRefusals.class);
    /** The annotation on the leader Lease: JSON, the holder that wrote it and its pools whose creates are refused. */
    public static final String ANNOTATION = PlaypenKeys.GROUP + "/create-refusals";

    /**
     * A pool's refused creates: {@code refusals} in a row, the last one's HTTP {@code code} and the API server's
     * message, trimmed; the pool creates nothing before {@code until}.
     */
    public record Refusal(int refusals, int code, String serverMessage, Instant until) {
        /** The message of the pool's Degraded condition CreateRefused at {@code now}. */
        public String condition(String pool, String runnerNamespace, Instant now) {
            long seconds = Math.max(0, (java.time.Duration.between(now, until).toMillis() + 999) / 1000);
            return "the API server " + answered(code, (refusals == 1 ? "the last pod create"
                    : "the last " + refusals + " pod creates in a row") + " of pool " + pool)
                    + " (" + serverMessage + "); the pool creates no pod until one succeeds, trying again "
                    + (seconds > 0 ? "in " + seconds + " s" : "at its next pass")
                    + "; " + whatToCheck(code, "namespace " + runnerNamespace)
                    + " (each one is a Warning Event CreateRefused on the operator)";
        }
    }

    /**
     * "refused {@code what} with HTTP 403" for a refusal; for a create that failed without a clear answer (a 5xx, a
     * 429, no answer at all), "failed {@code what} with HTTP 500" or "gave no answer to {@code what}".
     */
    static String answered(int code, String what) {
        if (code <= 0) {
            return "gave no answer to " + what;
        }
        return (code == 429 || code >= 500 ? "failed " : "refused ") + what + " with HTTP " + code;
    }

    /** What to look at for a create answered {@code code} in {@code where} ("namespace playpen"). */
    static String whatToCheck(int code, String where) {
        if (code <= 0 || code == 429 || code >= 500) {
            return "check the API server and the admission webhooks pod creates in " + where + " call (a 500 "
                    + "'failed calling webhook' names one: its Service, endpoints and failurePolicy)";
        }
        return "check ResourceQuota and admission webhooks in " + where + ", and the pod template flags";
    }

    /** What a Lease shows: its holder and, by pool name, the refusals that holder published (empty: none). */
    public record Published(String holder, Map<String, Refusal> pools) {
        static final Published NONE = new Published("", Map.of());
    }

    private final KubernetesClient client;
    private final String namespace;
    private final String leaseName;
    private final ApiCallCounter calls;
    private final String runnerNamespace;

    /** Reads Lease {@code namespace}/{@code leaseName}; the pools' pods are created in {@code runnerNamespace}. */
    public LeaseRefusals(KubernetesClient client, String namespace, String leaseName, String runnerNamespace,
            ApiCallCounter calls) {
        this.client = client;
        this.namespace = namespace;
        this.leaseName = leaseName;
        this.runnerNamespace = runnerNamespace;
        this.calls = calls;
    }

    /**
     * What the leader's Lease writes carry ({@link LeaderElection#annotateLeaseWith}): {@code holder} and, on a write
     * that goes on with its term, the refusals {@code refused} gives (that term's own); none on a write that begins a
     * term or gives the Lease up.
     */
    public static LeaderElection.LeaseAnnotations annotations(String holder,
            java.util.function.Supplier<Map<String, Refusal>> refused) {
        return inTerm -> Map.of(ANNOTATION, encode(holder, inTerm ? refused.get() : Map.of()));
    }

    /** The annotation's value: {@code holder} and its pools whose creates are refused now. */
    public static String encode(String holder, Map<String, Refusal> pools) {
        Map<String, Object> byPool = new LinkedHashMap<>();
        pools.forEach((pool, r) -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("refusals", r.refusals());
            m.put("code", r.code());
            m.put("message", r.serverMessage());
            m.put("until", r.until().toString());
            byPool.put(pool, m);
        });
        Map<String, Object> value = new LinkedHashMap<>();
        value.put("holder", holder);
        value.put("pools", byPool);
        return Json.write(value);
    }

    /**
     * The refusals {@code lease} carries, when they were written by the replica that holds it now and its hold has
     * not run out at {@code now} (renewTime plus leaseDurationSeconds); none otherwise, nor when the annotation
     * cannot be read.
     */
    public static Published decode(Lease lease, Instant now) {
        LeaseSpec spec = lease == null ? null : lease.getSpec();
        Map<String, String> annotations = lease == null || lease.getMetadata() == null ? null
                : lease.getMetadata().getAnnotations();
        String value = annotations == null ? null : annotations.get(ANNOTATION);
        if (spec == null || value == null || spec.getHolderIdentity() == null || spec.getRenewTime() == null
                || spec.getLeaseDurationSeconds() == null) {
            return Published.NONE;
        }
        ZonedDateTime expires = spec.getRenewTime().plusSeconds(spec.getLeaseDurationSeconds());
        if (!expires.toInstant().isAfter(now)) {
            return Published.NONE; // its holder stopped renewing: what it published is no one's any more
        }
        try {
            JsonNode root = Json.MAPPER.readTree(value);
            if (!spec.getHolderIdentity().equals(root.path("holder").asText())) {
                return Published.NONE; // written by an earlier holder: the one now leading never wrote it
            }
            Map<String, Refusal> pools = new LinkedHashMap<>();
            root.path("pools").fields().forEachRemaining(e -> pools.put(e.getKey(), new Refusal(
                    e.getValue().path("refusals").asInt(), e.getValue().path("code").asInt(),
                    e.getValue().path("message").asText(), Instant.parse(e.getValue().path("until").asText()))));
            return new Published(spec.getHolderIdentity(), pools);
        } catch (Exception e) {
            LOG.debug("annotation {} on Lease {}/{} not readable: {}", ANNOTATION, lease.getMetadata().getNamespace(),
                    lease.getMetadata().getName(), e.toString());
            return Published.NONE;
        }
    }

    /** The refusals the current leader publishes, read from the Lease now (none when the read fails). */
    public Published read(Instant now) {
        try {
            calls.count(KubeApiCall.LEASES_GET);
            return decode(client.leases().inNamespace(namespace).withName(leaseName).get(), now);
        } catch (RuntimeException e) {
            LOG.debug("Lease {}/{} not read for the leader's refused creates: {}", namespace, leaseName, e.toString());
            return Published.NONE;
        }
    }

    /**
     * The message of {@code pool}'s Degraded condition CreateRefused on a replica that does not lead, from what
     * {@code published} shows at {@code now} (null: its creates are not refused).
     */
    public String condition(Published published, String pool, Instant now) {
        Refusal r = published.pools().get(pool);
        return r == null ? null : r.condition(pool, runnerNamespace, now) + "; the leader " + published.holder()
                + " publishes this on Lease " + namespace + "/" + leaseName;
    }
}
