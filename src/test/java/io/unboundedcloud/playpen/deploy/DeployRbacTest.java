package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.api.model.rbac.RoleRef;
import io.fabric8.kubernetes.api.model.rbac.Subject;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The rendered RBAC grants the operator exactly the calls listed in {@link KubeApiCall} (plus the documented
 * extras below), in the right place, and nothing more; runners and users get their small fixed sets.
 */
class DeployRbacTest {
    /** Where a grant applies: a namespace, or {@link #CLUSTER} for a ClusterRoleBinding. */
    static final String CLUSTER = "<cluster>";
    static final String KUBE_SYSTEM = "kube-system";

    /**
     * Rules of built-in roles that deploy/ binds to without rendering them (kube-apiserver bootstrap policy).
     * Key: "Role namespace/name" or "ClusterRole name".
     */
    static final Map<String, List<PolicyRule>> BUILT_IN_ROLES = Map.of(
            "Role kube-system/extension-apiserver-authentication-reader", List.of(
                    rule("", "configmaps", List.of(KubeApiCall.TRUST_CONFIGMAP_NAME), "get", "list", "watch")),
            "ClusterRole system:auth-delegator", List.of(
                    rule("authentication.k8s.io", "tokenreviews", List.of(), "create"),
                    rule("authorization.k8s.io", "subjectaccessreviews", List.of(), "create")));

    /**
     * Grants the operator may hold although no code makes the call, each with the reason. Documented in
     * deploy/README.md ("RBAC").
     */
    static final Map<Grant, String> DOCUMENTED_EXTRAS = Map.of(
            new Grant("authentication.k8s.io", "tokenreviews", "create", CLUSTER, Set.of()),
            "part of system:auth-delegator, which an install may bind instead of the narrower subjectaccessreviews rule");

    /** One (apiGroup, resource, verb) allowed in one place, optionally only for some object names. */
    record Grant(String apiGroup, String resource, String verb, String where, Set<String> resourceNames) {
        String key() {
            return (apiGroup.isEmpty() ? "core" : apiGroup) + "/" + resource + " " + verb + " @" + where;
        }

        boolean sameAction(Grant other) {
            return apiGroup.equals(other.apiGroup) && resource.equals(other.resource) && verb.equals(other.verb)
                    && where.equals(other.where);
        }

        @Override
        public String toString() {
            return key() + (resourceNames.isEmpty() ? "" : " names=" + new TreeSet<>(resourceNames));
        }
    }

    private OperatorConfig config;
    private String operatorNamespace;
    private String operatorAccount;
    private List<ObjectNode> roles;
    private List<ObjectNode> clusterRoles;

    @BeforeEach
    void load() throws Exception {
        Deployment d = DeployManifestsTest.deployment();
        config = DeployManifestsTest.deployedConfig();
        operatorNamespace = d.getMetadata().getNamespace();
        operatorAccount = d.getSpec().getTemplate().getSpec().getServiceAccountName();
        assertThat(operatorAccount).as("serviceAccountName of the Deployment").isNotBlank();
        roles = RenderedDeploy.ofKind("Role");
        clusterRoles = RenderedDeploy.ofKind("ClusterRole");
    }

    static PolicyRule rule(String group, String resource, List<String> names, String... verbs) {
        PolicyRule r = new PolicyRule();
        r.setApiGroups(List.of(group));
        r.setResources(List.of(resource));
        r.setResourceNames(names);
        r.setVerbs(List.of(verbs));
        return r;
    }

    /** Where a KubeApiCall lands for the Deployment's flags. */
    String where(KubeApiCall.Scope scope) {
        switch (scope) {
            case CLUSTER:
                return CLUSTER;
            case RUNNER_NAMESPACE:
                return config.runnerNamespace();
            case OPERATOR_NAMESPACE:
                return config.namespace();
            case LEADER_NAMESPACE:
                return config.leaderElectionNamespace();
            case KUBE_SYSTEM:
                return KUBE_SYSTEM;
            default:
                throw new AssertionError("scope " + scope + " has no place; teach DeployRbacTest.where about it");
        }
    }

    /** The one object name the operator touches for a call, or null when it works on any name. */
    String targetName(KubeApiCall call) {
        if (call.apiGroup().equals("apiregistration.k8s.io") && call.resource().equals("apiservices")) {
            return KubeApiCall.API_SERVICE_NAME;
        }
        if (call.apiGroup().isEmpty() && call.resource().equals("configmaps") && call.scope() == KubeApiCall.Scope.KUBE_SYSTEM) {
            return KubeApiCall.TRUST_CONFIGMAP_NAME;
        }
        if (call == KubeApiCall.OWNER_HASH_SECRET_GET) {
            return config.ownerHashSecretName();
        }
        if (call.apiGroup().isEmpty() && call.resource().equals("secrets") && call.scope() == KubeApiCall.Scope.OPERATOR_NAMESPACE) {
            return config.tlsSecretName();
        }
        if (call.apiGroup().equals("coordination.k8s.io") && call.resource().equals("leases")) {
            return config.leaderElectionLeaseName();
        }
        return null;
    }

    // ---------------------------------------------------------------- RBAC evaluation

    /** Whether a binding subject is (or contains) the ServiceAccount ns/name. */
    static boolean matches(Subject s, String ns, String name) {
        String kind = s.getKind();
        if ("ServiceAccount".equals(kind)) {
            return name.equals(s.getName()) && ns.equals(s.getNamespace());
        }
        if ("User".equals(kind)) {
            return ("system:serviceaccount:" + ns + ":" + name).equals(s.getName());
        }
        if ("Group".equals(kind)) {
            return Set.of("system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated")
                    .contains(s.getName());
        }
        throw new AssertionError("unknown subject kind " + kind);
    }

    List<PolicyRule> rulesOf(RoleRef ref, String bindingNamespace, List<ObjectNode> extra) throws Exception {
        assertThat(ref.getApiGroup()).isEqualTo("rbac.authorization.k8s.io");
        if ("Role".equals(ref.getKind())) {
            for (ObjectNode doc : withKind(roles, extra, "Role")) {
                Role r = StrictModel.read(doc, Role.class);
                if (r.getMetadata().getName().equals(ref.getName()) && r.getMetadata().getNamespace().equals(bindingNamespace)) {
                    return nullSafe(r.getRules());
                }
            }
            List<PolicyRule> builtIn = BUILT_IN_ROLES.get("Role " + bindingNamespace + "/" + ref.getName());
            if (builtIn != null) {
                return builtIn;
            }
            throw new AssertionError("RoleBinding in " + bindingNamespace + " refers to Role " + ref.getName()
                    + ", which is neither rendered by deploy/ nor a known built-in role");
        }
        if ("ClusterRole".equals(ref.getKind())) {
            for (ObjectNode doc : withKind(clusterRoles, extra, "ClusterRole")) {
                ClusterRole r = StrictModel.read(doc, ClusterRole.class);
                if (r.getMetadata().getName().equals(ref.getName())) {
                    assertThat(r.getAggregationRule()).as("aggregated ClusterRole %s cannot be checked", ref.getName()).isNull();
                    return nullSafe(r.getRules());
                }
            }
            List<PolicyRule> builtIn = BUILT_IN_ROLES.get("ClusterRole " + ref.getName());
            if (builtIn != null) {
                return builtIn;
            }
            throw new AssertionError("binding refers to ClusterRole " + ref.getName()
                    + ", which is neither rendered by deploy/ nor a known built-in role");
        }
        throw new AssertionError("unknown roleRef kind " + ref.getKind());
    }

    static List<PolicyRule> nullSafe(List<PolicyRule> rules) {
        return rules == null ? List.of() : rules;
    }

    static List<String> nullSafeList(List<String> l) {
        return l == null ? List.of() : l;
    }

    /** The rendered documents of a kind, then those of {@code extra}. */
    static List<ObjectNode> withKind(List<ObjectNode> rendered, List<ObjectNode> extra, String kind) {
        List<ObjectNode> out = new ArrayList<>(rendered);
        extra.stream().filter(d -> kind.equals(d.path("kind").asText())).forEach(out::add);
        return out;
    }

    /** Every grant held by ServiceAccount ns/name through the rendered bindings. */
    List<Grant> grantsOf(String ns, String name) throws Exception {
        return grantsOf(ns, name, List.of());
    }

    /** Every grant held by ServiceAccount ns/name through the rendered bindings and those of {@code extra}. */
    List<Grant> grantsOf(String ns, String name, List<ObjectNode> extra) throws Exception {
        List<Grant> out = new ArrayList<>();
        for (ObjectNode doc : withKind(RenderedDeploy.ofKind("RoleBinding"), extra, "RoleBinding")) {
            RoleBinding b = StrictModel.read(doc, RoleBinding.class);
            if (nullSafeSubjects(b.getSubjects()).stream().anyMatch(s -> matches(s, ns, name))) {
                String where = b.getMetadata().getNamespace();
                for (PolicyRule r : rulesOf(b.getRoleRef(), where, extra)) {
                    expand(r, where, out);
                }
            }
        }
        for (ObjectNode doc : withKind(RenderedDeploy.ofKind("ClusterRoleBinding"), extra, "ClusterRoleBinding")) {
            ClusterRoleBinding b = StrictModel.read(doc, ClusterRoleBinding.class);
            assertThat(b.getRoleRef().getKind()).as("roleRef of ClusterRoleBinding %s", b.getMetadata().getName())
                    .isEqualTo("ClusterRole");
            if (nullSafeSubjects(b.getSubjects()).stream().anyMatch(s -> matches(s, ns, name))) {
                for (PolicyRule r : rulesOf(b.getRoleRef(), null, extra)) {
                    expand(r, CLUSTER, out);
                }
            }
        }
        return out;
    }

    static List<Subject> nullSafeSubjects(List<Subject> l) {
        return l == null ? List.of() : l;
    }

    static void expand(PolicyRule r, String where, List<Grant> out) {
        assertThat(nullSafeList(r.getNonResourceURLs())).as("nonResourceURLs in %s", r).isEmpty();
        Set<String> names = new LinkedHashSet<>(nullSafeList(r.getResourceNames()));
        for (String g : nullSafeList(r.getApiGroups())) {
            for (String res : nullSafeList(r.getResources())) {
                for (String v : nullSafeList(r.getVerbs())) {
                    out.add(new Grant(g, res, v, where, names));
                }
            }
        }
    }

    /** A grant allows a call when action and place match (a cluster-wide grant also covers every namespace). */
    boolean allows(Grant g, KubeApiCall call) {
        String where = where(call.scope());
        boolean place = g.where().equals(where) || (g.where().equals(CLUSTER) && !where.equals(CLUSTER));
        if (!place || !g.apiGroup().equals(call.apiGroup()) || !g.resource().equals(call.resource())
                || !g.verb().equals(call.verb())) {
            return false;
        }
        if (g.resourceNames().isEmpty()) {
            return true;
        }
        // RBAC cannot match a create by name: the object has no name in the request path yet
        if (call.verb().equals("create")) {
            return false;
        }
        String target = targetName(call);
        return target != null && g.resourceNames().contains(target);
    }

    // ---------------------------------------------------------------- the tests

    /**
     * The calls the Go operator makes (its ServiceAccount, its reconcile, claims, replays and start-up), each as
     * group/resource verb, where, and the one name it touches (null: any).
     */
    record GoCall(String apiGroup, String resource, String verb, String where, String name) {
        @Override
        public String toString() {
            return (apiGroup.isEmpty() ? "core" : apiGroup) + "/" + resource + " " + verb + " @" + where
                    + (name == null ? "" : " name " + name);
        }
    }

    static boolean allows(Grant g, GoCall c) {
        boolean place = g.where().equals(c.where()) || (g.where().equals(CLUSTER) && !c.where().equals(CLUSTER));
        return place && g.apiGroup().equals(c.apiGroup()) && g.resource().equals(c.resource())
                && g.verb().equals(c.verb()) && (g.resourceNames().isEmpty()
                        || !c.verb().equals("create") && c.name() != null && g.resourceNames().contains(c.name()));
    }

    /** The YAML block of deploy/README.md's rollback to the Go operator: the grants its binary needs beyond ours. */
    static List<ObjectNode> rollbackGrantsFromReadme() throws Exception {
        String readme = java.nio.file.Files.readString(RenderedDeploy.deployDir().resolve("README.md"));
        int section = readme.indexOf("### Ours → Go (rollback)");
        assertThat(section).as("deploy/README.md has the rollback section").isNotNegative();
        int start = readme.indexOf("```yaml\n", section);
        int next = readme.indexOf("\n## ", section);
        assertThat(start).as("a YAML block in the rollback section").isBetween(section, next);
        int end = readme.indexOf("```\n", start + 8);
        // the block is indented under its numbered step
        return RenderedDeploy.parse(readme.substring(start + 8, end).stripIndent());
    }

    /**
     * A rollback to the Go operator that keeps this repository's deploy/ (its ServiceAccount and RBAC) and adds
     * the grant deploy/README.md gives for it: every call the Go operator's binary makes is allowed (it reads a
     * pod's node by name, writes claims with a full update and may update the APIService's caBundle, none of which
     * this operator's least-privilege RBAC grants).
     */
    @Test
    void theRollbackToTheGoOperatorIsGrantedEveryCallItMakes() throws Exception {
        List<Grant> grants = grantsOf(operatorNamespace, operatorAccount, rollbackGrantsFromReadme());
        String runners = config.runnerNamespace();
        List<GoCall> calls = new ArrayList<>();
        for (String verb : List.of("get", "list", "watch")) {
            calls.add(new GoCall("", "nodes", verb, CLUSTER, null));
        }
        for (String verb : List.of("get", "list", "watch", "create", "patch", "update", "delete")) {
            calls.add(new GoCall("", "pods", verb, runners, null));
        }
        calls.add(new GoCall("authorization.k8s.io", "subjectaccessreviews", "create", CLUSTER, null));
        calls.add(new GoCall("apiregistration.k8s.io", "apiservices", "get", CLUSTER, KubeApiCall.API_SERVICE_NAME));
        calls.add(new GoCall("apiregistration.k8s.io", "apiservices", "update", CLUSTER, KubeApiCall.API_SERVICE_NAME));
        calls.add(new GoCall("", "configmaps", "get", KUBE_SYSTEM, KubeApiCall.TRUST_CONFIGMAP_NAME));
        calls.add(new GoCall("", "secrets", "get", config.namespace(), config.tlsSecretName()));
        List<GoCall> refused = calls.stream().filter(c -> grants.stream().noneMatch(g -> allows(g, c))).toList();
        assertThat(refused).as("calls of the Go operator that %s/%s may not make after the rollback",
                operatorNamespace, operatorAccount).isEmpty();
    }

    @Test
    void everyCallTheCodeMakesIsGranted() throws Exception {
        List<Grant> grants = grantsOf(operatorNamespace, operatorAccount);
        List<String> missing = new ArrayList<>();
        for (KubeApiCall call : KubeApiCall.all()) {
            KubeApiCall preferred = ONLY_WHEN_REFUSED.get(call);
            if (preferred != null && grants.stream().anyMatch(g -> allows(g, preferred))) {
                continue; // made only when the preferred call is refused, which it is not here
            }
            if (grants.stream().noneMatch(g -> allows(g, call))) {
                String target = targetName(call);
                missing.add(call + " (" + (call.apiGroup().isEmpty() ? "core" : call.apiGroup()) + "/" + call.resource()
                        + " " + call.verb() + " @" + where(call.scope()) + (target == null ? "" : " name " + target) + ")");
            }
        }
        assertThat(missing).as("KubeApiCall entries that the rendered RBAC does not grant to %s/%s",
                operatorNamespace, operatorAccount).isEmpty();
    }

    /**
     * Calls no line of the operator's code names because a library makes them: the informers list and watch, and
     * fabric8's LeaseLock gets, creates and patches the Lease. The EventRecorder counts every Event it creates as
     * EVENTS_CREATE, whichever namespace it lands in.
     */
    static final Map<KubeApiCall, String> MADE_BY_LIBRARIES = Map.of(
            KubeApiCall.PODS_WATCH, "the pod cache's informer",
            KubeApiCall.NODES_LIST, "the node cache's informer",
            KubeApiCall.NODES_WATCH, "the node cache's informer",
            KubeApiCall.CONFIGMAPS_LIST, "the trust bundle's informer",
            KubeApiCall.CONFIGMAPS_WATCH, "the trust bundle's informer",
            KubeApiCall.LEASES_GET, "fabric8's LeaseLock",
            KubeApiCall.LEASES_CREATE, "fabric8's LeaseLock",
            KubeApiCall.LEASES_PATCH, "fabric8's LeaseLock",
            KubeApiCall.OPERATOR_EVENTS_CREATE, "EventRecorder, counted as EVENTS_CREATE");

    /**
     * Calls the code makes only when the call beside them is refused. The caBundle is written with a merge patch;
     * only a patch answered 403 (the Go operator's RBAC grants get and update on the APIService, not patch) is
     * followed by an update of the object read. Where the patch is granted the update is never made, so granting it
     * too would give the operator a write it does not use.
     */
    static final Map<KubeApiCall, KubeApiCall> ONLY_WHEN_REFUSED = Map.of(
            KubeApiCall.API_SERVICES_UPDATE, KubeApiCall.API_SERVICES_PATCH);

    @Test
    void aCallMadeOnlyWhenAnotherIsRefusedIsNotGrantedBesideIt() throws Exception {
        List<Grant> grants = grantsOf(operatorNamespace, operatorAccount);
        List<String> unused = new ArrayList<>();
        ONLY_WHEN_REFUSED.forEach((fallback, preferred) -> {
            if (grants.stream().anyMatch(g -> allows(g, preferred)) && grants.stream().anyMatch(g -> allows(g, fallback))) {
                unused.add(fallback + " beside " + preferred);
            }
        });
        assertThat(unused).as("grants the operator uses only where the call beside them is refused").isEmpty();
    }

    /**
     * The list the RBAC is checked against holds only calls the code makes: each one is counted where it is made
     * ({@code calls.count(KubeApiCall.X)}) or made by a library; a line nothing makes would be granted for nothing.
     */
    @Test
    void everyListedCallIsMadeByTheCode() throws Exception {
        java.nio.file.Path main = java.nio.file.Path.of("src/main/java");
        StringBuilder code = new StringBuilder();
        try (var files = java.nio.file.Files.walk(main)) {
            for (java.nio.file.Path f : files.filter(p -> p.toString().endsWith(".java")
                    && !p.getFileName().toString().equals("KubeApiCall.java")).toList()) {
                code.append(java.nio.file.Files.readString(f)).append('\n');
            }
        }
        List<String> unused = new ArrayList<>();
        for (KubeApiCall call : KubeApiCall.all()) {
            boolean named = java.util.regex.Pattern.compile("\\bKubeApiCall\\." + call.name() + "\\b").matcher(code).find();
            if (!named && !MADE_BY_LIBRARIES.containsKey(call)) {
                unused.add(call.name());
            }
        }
        assertThat(unused).as("KubeApiCall entries no code makes (and RBAC grants for nothing)").isEmpty();
    }

    @Test
    void nothingIsGrantedBeyondTheCallsAndTheDocumentedExtras() throws Exception {
        List<Grant> grants = grantsOf(operatorNamespace, operatorAccount);
        assertThat(grants).as("grants of the operator").isNotEmpty();
        List<String> extra = new ArrayList<>();
        for (Grant g : grants) {
            boolean used = KubeApiCall.all().stream().anyMatch(call -> g.sameAction(
                    new Grant(call.apiGroup(), call.resource(), call.verb(), where(call.scope()), Set.of())));
            boolean documented = DOCUMENTED_EXTRAS.keySet().stream().anyMatch(g::sameAction);
            if (!used && !documented) {
                extra.add(g.toString());
            }
        }
        assertThat(extra).as("grants no KubeApiCall needs and no documented extra explains").isEmpty();
    }

    @Test
    void namedObjectsAreOnlyGrantedByName() throws Exception {
        List<Grant> grants = grantsOf(operatorNamespace, operatorAccount);
        for (KubeApiCall call : KubeApiCall.all()) {
            String target = targetName(call);
            if (target == null || call.verb().equals("create")) {
                continue;
            }
            // every name a call with this action touches (one Secret for the certificate, one for the owner-hash key)
            Set<String> targets = KubeApiCall.all().stream().filter(c -> c.apiGroup().equals(call.apiGroup())
                    && c.resource().equals(call.resource()) && c.verb().equals(call.verb()) && c.scope() == call.scope())
                    .map(this::targetName).filter(java.util.Objects::nonNull).collect(Collectors.toSet());
            for (Grant g : grants) {
                if (g.apiGroup().equals(call.apiGroup()) && g.resource().equals(call.resource()) && g.verb().equals(call.verb())) {
                    assertThat(g.resourceNames()).as("resourceNames of %s", g).isNotEmpty().isSubsetOf(targets);
                }
            }
        }
        // the APIService rules in particular, wherever they are bound
        for (ObjectNode doc : clusterRoles) {
            for (PolicyRule r : nullSafe(StrictModel.read(doc, ClusterRole.class).getRules())) {
                if (nullSafeList(r.getResources()).contains("apiservices")) {
                    assertThat(r.getResourceNames()).as("apiservices rule of %s", RenderedDeploy.describe(doc))
                            .containsExactly(KubeApiCall.API_SERVICE_NAME);
                    assertThat(r.getVerbs()).as("apiservices verbs").isSubsetOf("get", "update", "patch");
                }
            }
        }
    }

    @Test
    void renderedRulesHaveNoWildcardsAndNoDeadResourceNames() throws Exception {
        List<PolicyRule> all = new ArrayList<>();
        Map<PolicyRule, String> owner = new HashMap<>();
        for (ObjectNode doc : roles) {
            for (PolicyRule r : nullSafe(StrictModel.read(doc, Role.class).getRules())) {
                all.add(r);
                owner.put(r, RenderedDeploy.describe(doc));
            }
        }
        for (ObjectNode doc : clusterRoles) {
            for (PolicyRule r : nullSafe(StrictModel.read(doc, ClusterRole.class).getRules())) {
                all.add(r);
                owner.put(r, RenderedDeploy.describe(doc));
            }
        }
        assertThat(all).isNotEmpty();
        for (PolicyRule r : all) {
            String who = owner.get(r);
            assertThat(nullSafeList(r.getApiGroups())).as("apiGroups in %s", who).isNotEmpty().doesNotContain("*");
            assertThat(nullSafeList(r.getResources())).as("resources in %s", who).isNotEmpty()
                    .allSatisfy(res -> assertThat(res).doesNotContain("*"));
            assertThat(nullSafeList(r.getVerbs())).as("verbs in %s", who).isNotEmpty().doesNotContain("*");
            if (!nullSafeList(r.getResourceNames()).isEmpty()) {
                assertThat(r.getVerbs()).as("%s: create cannot be restricted by resourceNames", who).doesNotContain("create");
            }
        }
    }

    @Test
    void runnerAndControlPlanePodsMayOnlyGetAndPatchPodsOfTheirNamespace() throws Exception {
        // what the reference runner and its control-plane helper call: GET and merge-PATCH their own pod
        // (uncached client: no list, no watch); which pod and which fields is the admission policy's job
        Set<String> expected = Set.of("core/pods get @" + config.runnerNamespace(),
                "core/pods patch @" + config.runnerNamespace());
        for (String account : List.of(config.runnerServiceAccountName(), config.controlPlaneServiceAccountName())) {
            List<Grant> grants = grantsOf(config.runnerNamespace(), account);
            assertThat(grants.stream().map(Grant::key).collect(Collectors.toSet())).as("grants of %s", account)
                    .isEqualTo(expected);
            assertThat(grants).allSatisfy(g -> assertThat(g.resourceNames()).isEmpty());
        }
    }

    Set<String> clusterRoleGrants(String name) throws Exception {
        ClusterRole role = null;
        for (ObjectNode doc : clusterRoles) {
            ClusterRole r = StrictModel.read(doc, ClusterRole.class);
            if (r.getMetadata().getName().equals(name)) {
                role = r;
            }
        }
        assertThat(role).as("ClusterRole " + name).isNotNull();
        List<Grant> grants = new ArrayList<>();
        for (PolicyRule r : nullSafe(role.getRules())) {
            expand(r, CLUSTER, grants);
        }
        return grants.stream().map(Grant::toString).collect(Collectors.toSet());
    }

    /**
     * playpen-user: create allocs and deallocs (the reference's) and renewals (kube-apiserver checks create on
     * renewals before it proxies a renewal), get/list/delete allocs (kubectl get/delete, the operator scopes them to
     * the caller's own), watch on allocs and pools (the operator's 405 for kubectl get -w, instead of kube-apiserver's
     * 403); never allocs/all, which would show everyone's.
     */
    @Test
    void playpenUserMayCreateAllocsDeallocsAndRenewalsAndReadAndDeleteAllocs() throws Exception {
        assertThat(clusterRoleGrants("playpen-user")).containsExactlyInAnyOrder(
                "playpen.unbounded-cloud.io/allocs create @" + CLUSTER,
                "playpen.unbounded-cloud.io/deallocs create @" + CLUSTER,
                "playpen.unbounded-cloud.io/renewals create @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs get @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs list @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs watch @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs delete @" + CLUSTER,
                "playpen.unbounded-cloud.io/pools get @" + CLUSTER,
                "playpen.unbounded-cloud.io/pools list @" + CLUSTER,
                "playpen.unbounded-cloud.io/pools watch @" + CLUSTER);
        // deploy/ does not decide who the users are
        for (String kind : List.of("RoleBinding", "ClusterRoleBinding")) {
            for (ObjectNode doc : RenderedDeploy.ofKind(kind)) {
                assertThat(doc.path("roleRef").path("name").asText()).as("roleRef of %s", RenderedDeploy.describe(doc))
                        .isNotIn("playpen-user", "playpen-admin");
            }
        }
    }

    /** playpen-admin: get/list/delete on allocs (kube-apiserver's check) and allocs/all (the operator's: everyone's). */
    @Test
    void playpenAdminMayGetListAndDeleteEveryonesAllocs() throws Exception {
        assertThat(clusterRoleGrants("playpen-admin")).containsExactlyInAnyOrder(
                "playpen.unbounded-cloud.io/allocs get @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs list @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs watch @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs delete @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs/all get @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs/all list @" + CLUSTER,
                "playpen.unbounded-cloud.io/allocs/all delete @" + CLUSTER,
                "playpen.unbounded-cloud.io/pools get @" + CLUSTER,
                "playpen.unbounded-cloud.io/pools list @" + CLUSTER,
                "playpen.unbounded-cloud.io/pools watch @" + CLUSTER);
        assertThat(clusterRoleGrants("playpen-admin")).noneMatch(g -> g.contains(" create "));
    }

    /**
     * playpen-pool-reader: get, list and watch (answered 405) pools, nothing else, aggregated into the built-in view ClusterRole (pools
     * show counts and conditions, nothing about users), and bound to nobody by deploy/.
     */
    @Test
    void poolReaderMayOnlyReadPoolsAndIsAggregatedIntoView() throws Exception {
        assertThat(clusterRoleGrants("playpen-pool-reader")).containsExactlyInAnyOrder(
                "playpen.unbounded-cloud.io/pools get @" + CLUSTER,
                "playpen.unbounded-cloud.io/pools list @" + CLUSTER,
                "playpen.unbounded-cloud.io/pools watch @" + CLUSTER);
        ObjectNode role = RenderedDeploy.ofKind("ClusterRole").stream()
                .filter(d -> "playpen-pool-reader".equals(d.path("metadata").path("name").asText())).findFirst()
                .orElseThrow();
        assertThat(role.path("metadata").path("labels").path("rbac.authorization.k8s.io/aggregate-to-view").asText())
                .isEqualTo("true");
        for (String kind : List.of("RoleBinding", "ClusterRoleBinding")) {
            for (ObjectNode doc : RenderedDeploy.ofKind(kind)) {
                assertThat(doc.path("roleRef").path("name").asText()).isNotEqualTo("playpen-pool-reader");
            }
        }
    }

    @Test
    void theEvaluatorNoticesMissingAndSurplusGrants() throws Exception {
        // a grant in the wrong namespace does not allow the call, and a cluster-wide pod grant is surplus
        Grant podsElsewhere = new Grant("", "pods", "get", "default", Set.of());
        assertThat(allows(podsElsewhere, KubeApiCall.PODS_GET)).isFalse();
        Grant apiServiceOtherName = new Grant("apiregistration.k8s.io", "apiservices", "patch", CLUSTER, Set.of("v1.other.io"));
        assertThat(allows(apiServiceOtherName, KubeApiCall.API_SERVICES_PATCH)).isFalse();
        Grant secretCreateByName = new Grant("", "secrets", "create", config.namespace(), Set.of(config.tlsSecretName()));
        assertThat(allows(secretCreateByName, KubeApiCall.SECRETS_CREATE)).isFalse();
        Grant podsEverywhere = new Grant("", "pods", "get", CLUSTER, Set.of());
        assertThat(allows(podsEverywhere, KubeApiCall.PODS_GET)).isTrue();
        assertThat(KubeApiCall.all().stream().anyMatch(call -> podsEverywhere.sameAction(
                new Grant(call.apiGroup(), call.resource(), call.verb(), where(call.scope()), Set.of()))))
                .as("cluster-wide pods get matches no KubeApiCall").isFalse();
    }
}
