package config

import (
	"strings"

	"syncd.dev/syncd/internal/depends"
)

// DependencyGraph returns the dependsOn graph of apps (package depends),
// in their order.
func DependencyGraph(apps []App) *depends.Graph {
	nodes := make([]depends.Node, len(apps))
	for i, a := range apps {
		nodes[i] = depends.Node{Name: a.Name, DependsOn: a.DependsOn}
	}
	return depends.New(nodes)
}

// DependencyOrder returns the apps so that every app comes after the apps
// it depends on; otherwise they keep their order in the list, so apps
// without dependsOn are applied as written (depends.Graph.Order). Entries
// naming no app of the list are ignored, and apps on a cycle come last in
// list order; a validated config has neither.
func DependencyOrder(apps []App) []App {
	out := make([]App, 0, len(apps))
	for _, i := range DependencyGraph(apps).Order() {
		out = append(out, apps[i])
	}
	return out
}

// dependencies checks every app's dependsOn: each entry names another app
// of the config, once, that is not in drift mode detect, and the
// dependencies form no cycle. A cycle is reported once, at the entry that
// closes it, with every app on it.
func (v *validator) dependencies(c *Config) {
	g := DependencyGraph(c.Apps)
	for i, a := range c.Apps {
		p := index("apps", i) + ".dependsOn"
		seen := map[string]int{}
		for j, dep := range a.DependsOn {
			field := index(p, j)
			if first, dup := seen[dep]; dup {
				v.errorf(field, "%q is already listed at dependsOn[%d]; remove the repeat", dep, first)
				continue
			}
			seen[dep] = j
			v.dependency(field, a, dep, c.Apps, g)
		}
	}
	for _, cyc := range g.Cycles() {
		if cyc.SelfLoop() {
			continue // reported at its entry by dependency
		}
		field := index(index("apps", cyc.Node)+".dependsOn", cyc.Entry)
		v.errorf(field, "dependency cycle %s: none of these apps could ever be applied; remove one of the dependsOn entries on it", strings.Join(cyc.Names, " → "))
	}
}

// dependency checks one dependsOn entry dep of app a.
func (v *validator) dependency(field string, a App, dep string, apps []App, g *depends.Graph) {
	k, known := g.Index(dep)
	switch {
	case dep == "":
		v.errorf(field, "an app name is required; list the names of the apps %q is applied after", a.Name)
	case dep == a.Name:
		v.errorf(field, "app %q depends on itself; remove %q from its own dependsOn", a.Name, dep)
	case !known:
		v.errorf(field, "app %q depends on %q, which is no app of this config; declared apps: %s", a.Name, dep, strings.Join(appNames(apps), ", "))
	case apps[k].DetectOnly():
		v.errorf(field, "app %q depends on %q, which is in drift mode detect: syncd never applies it, so %q would wait for ever; remove the dependency or set drift.mode of %q to correct", a.Name, dep, a.Name, dep)
	}
}

// appNames returns the names of the apps, in order.
func appNames(apps []App) []string {
	names := make([]string, 0, len(apps))
	for _, a := range apps {
		if a.Name != "" {
			names = append(names, a.Name)
		}
	}
	return names
}
