package io.unboundedcloud.playpen.camel;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.model.Model;
import org.apache.camel.model.RouteConfigurationDefinition;
import org.apache.camel.model.RouteDefinition;
import org.apache.camel.spi.Resource;
import org.apache.camel.support.PatternHelper;
import org.apache.camel.support.RouteWatcherReloadStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reloads an edited route file (--routes-reload) and replaces only that file's routes, like Camel's own watcher with
 * {@code removeAllRoutes=false}, and removes the routes the file no longer defines (all of a deleted file's); an edit
 * that cannot be loaded leaves the routes running as they were. Camel removes a route before it builds the new one,
 * so an edit that parses but cannot be built (a bean or an endpoint that does not exist) would otherwise leave the
 * flow without a route: every request to it would wait for a consumer and fail.
 * The requests waiting for capacity in the routes a reload replaces are answered first ({@link RouteWaits}). An
 * edited route configuration (errors.camel.yaml) also loads again the files of the routes that use it.
 */
final class KeepingRouteReload extends RouteWatcherReloadStrategy {
    private static final Logger LOG = LoggerFactory.getLogger(KeepingRouteReload.class);

    private final RouteWaits waits;

    KeepingRouteReload(String directory, String pattern, RouteWaits waits) {
        super(directory, false);
        this.waits = waits;
        setPattern(pattern);
        setRemoveAllRoutes(false);
    }

    @Override
    protected void onRouteReload(Collection<Resource> resources, boolean removeEverything) {
        Model model = getCamelContext().getCamelContextExtension().getContextPlugin(Model.class);
        java.util.Set<RouteConfigurationDefinition> configurations =
                java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        configurations.addAll(model.getRouteConfigurationDefinitions());
        reload(resources, removeEverything);
        // a route takes its route configuration (the error handling the HTTP flows share) as it is built: an edited
        // one reaches the routes built before it once they are built again, so their files are loaded again too
        if (resources != null) {
            List<Resource> users = usersOfNewConfigurations(model, configurations, resources);
            if (!users.isEmpty()) {
                LOG.info("route configuration of {} reloaded; loading again the route files that use it: {}",
                        locations(resources), locations(users));
                reload(users, removeEverything);
            }
        }
    }

    private void reload(Collection<Resource> resources, boolean removeEverything) {
        CamelContext context = getCamelContext();
        Model model = context.getCamelContextExtension().getContextPlugin(Model.class);
        // every route, not only the edited file's: after a failed reload Camel loads the failed file again with
        // the next edited one
        List<RouteDefinition> before = new ArrayList<>(model.getRouteDefinitions());
        // the requests waiting for capacity in the routes replaced are answered while those still run
        List<Route> replaced = replaced(context, resources);
        waits.replacing(replaced);
        try {
            super.onRouteReload(resources, removeEverything);
            if (resources != null) {
                removeLeftOver(context, model, replaced);
            }
        } catch (RuntimeException e) {
            List<RouteDefinition> lost = before.stream().filter(d -> context.getRoute(d.getRouteId()) == null).toList();
            try {
                model.addRouteDefinitions(lost);
                LOG.warn("route file {} not loaded, its routes run as before; fix the file and save it again: {}",
                        locations(resources), e.getMessage());
            } catch (Exception restore) {
                LOG.error("route file {} not loaded, and routes {} could not be put back; restart the operator: {}",
                        locations(resources), lost.stream().map(RouteDefinition::getRouteId).toList(),
                        restore.toString());
            }
            throw e;
        } finally {
            waits.replaced(replaced);
        }
    }

    /**
     * Stops and removes the routes of the reloaded files that the files no longer define (every route of a deleted
     * file): Camel replaces only the route ids the file it loads defines, so a route taken out of its file, renamed,
     * or left by a deleted file would otherwise run on (its timer firing) until a restart.
     */
    private static void removeLeftOver(CamelContext context, Model model, List<Route> replaced) {
        for (Route route : replaced) {
            if (context.getRoute(route.getId()) != route) {
                continue; // built again from its file
            }
            String file = route.getSourceResource().getLocation();
            RouteDefinition definition = model.getRouteDefinition(route.getId());
            try {
                if (definition != null) {
                    model.removeRouteDefinition(definition);
                } else {
                    context.getRouteController().stopRoute(route.getId());
                    context.removeRoute(route.getId());
                }
                LOG.info("route {} stopped and removed: {} {}", route.getId(), file,
                        route.getSourceResource().exists() ? "no longer defines it" : "was deleted");
            } catch (Exception e) {
                LOG.error("route {} of {} is no longer in the file but could not be removed; it runs until a restart:"
                        + " {}", route.getId(), file, e.toString());
            }
        }
    }

    /**
     * The files of the routes that use a route configuration loaded since {@code before} (by its id in their
     * {@code routeConfigurationId}), each once, but those of {@code reloaded}.
     */
    private static List<Resource> usersOfNewConfigurations(Model model,
            java.util.Set<RouteConfigurationDefinition> before, Collection<Resource> reloaded) {
        List<String> ids = model.getRouteConfigurationDefinitions().stream()
                .filter(c -> !before.contains(c) && c.getId() != null)
                .map(RouteConfigurationDefinition::getId).toList();
        List<String> done = reloaded.stream().map(KeepingRouteReload::fileName).toList();
        java.util.Map<String, Resource> users = new java.util.LinkedHashMap<>();
        for (RouteDefinition d : model.getRouteDefinitions()) {
            if (d.getResource() != null && d.getRouteConfigurationId() != null && ids.stream().anyMatch(id ->
                    java.util.Arrays.stream(d.getRouteConfigurationId().split(","))
                            .anyMatch(p -> PatternHelper.matchPattern(id, p.trim())))
                    && !done.contains(fileName(d.getResource()))) {
                users.putIfAbsent(fileName(d.getResource()), d.getResource());
            }
        }
        return List.copyOf(users.values());
    }

    /**
     * The running routes a reload of {@code resources} replaces: those loaded from the same files (every route
     * folder file has its own name); every route when no file is named.
     */
    private List<Route> replaced(CamelContext context, Collection<Resource> resources) {
        if (resources == null) {
            return List.copyOf(context.getRoutes());
        }
        List<String> files = resources.stream().map(KeepingRouteReload::fileName).toList();
        return context.getRoutes().stream()
                .filter(r -> r.getSourceResource() != null && files.contains(fileName(r.getSourceResource())))
                .toList();
    }

    private static String fileName(Resource resource) {
        String location = String.valueOf(resource.getLocation());
        return location.substring(location.lastIndexOf('/') + 1);
    }

    private static String locations(Collection<Resource> resources) {
        return resources == null ? "" : String.join(", ", resources.stream().map(Resource::getLocation).toList());
    }
}
