package config

import (
	"slices"
	"strings"
)

// dependencies checks every app's dependsOn: each entry names another app
// of the config, once, that is not in drift mode detect, and the
// dependencies form no cycle. A cycle is reported once, at the entry that
// closes it, with every app on it.
func (v *validator) dependencies(c *Config) {
	byName := appIndex(c.Apps)
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
			v.dependency(field, a, dep, c.Apps, byName)
		}
	}
	for _, cyc := range dependencyCycles(c.Apps, byName) {
		v.errorf(cyc.field, "dependency cycle %s: none of these apps could ever be applied; remove one of the dependsOn entries on it", strings.Join(cyc.names, " → "))
	}
}

// dependency checks one dependsOn entry dep of app a.
func (v *validator) dependency(field string, a App, dep string, apps []App, byName map[string]int) {
	k, known := byName[dep]
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

// appIndex maps each app name to the index of the first app with it.
func appIndex(apps []App) map[string]int {
	byName := make(map[string]int, len(apps))
	for i, a := range apps {
		if _, dup := byName[a.Name]; !dup && a.Name != "" {
			byName[a.Name] = i
		}
	}
	return byName
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

// cycle is one dependency cycle: the dependsOn entry that closes it and
// the apps on it, the first repeated at the end ("a", "b", "a").
type cycle struct {
	field string
	names []string
}

// visitState is where a depth-first search stands with one app.
type visitState int

const (
	unvisited visitState = iota
	onPath
	finished
)

// cycleFinder finds dependency cycles by depth-first search: an entry
// pointing back at an app still on the search path closes a cycle.
// Entries that name no app, or the app itself, are left out (they are
// reported on their own).
type cycleFinder struct {
	apps   []App
	byName map[string]int
	state  []visitState
	path   []int
	cycles []cycle
}

// dependencyCycles returns every cycle of the apps' dependencies, each
// once, in the order a search in config order meets them.
func dependencyCycles(apps []App, byName map[string]int) []cycle {
	f := &cycleFinder{apps: apps, byName: byName, state: make([]visitState, len(apps))}
	for i := range apps {
		f.visit(i)
	}
	return f.cycles
}

func (f *cycleFinder) visit(i int) {
	if f.state[i] != unvisited {
		return
	}
	f.state[i] = onPath
	f.path = append(f.path, i)
	for j, dep := range f.apps[i].DependsOn {
		k, ok := f.byName[dep]
		if !ok || k == i {
			continue
		}
		switch f.state[k] {
		case unvisited:
			f.visit(k)
		case onPath:
			f.record(i, j, k)
		}
	}
	f.path = f.path[:len(f.path)-1]
	f.state[i] = finished
}

// record notes the cycle closed by entry j of app i, which points back at
// app k on the search path.
func (f *cycleFinder) record(i, j, k int) {
	from := slices.Index(f.path, k)
	names := make([]string, 0, len(f.path)-from+1)
	for _, n := range f.path[from:] {
		names = append(names, f.apps[n].Name)
	}
	names = append(names, f.apps[k].Name)
	f.cycles = append(f.cycles, cycle{field: index(index("apps", i)+".dependsOn", j), names: names})
}

// DependencyOrder returns the apps so that every app comes after the apps
// it depends on; otherwise they keep their order in the list, so apps
// without dependsOn are applied as written. Of the apps whose
// dependencies are all placed, the first in the list goes next. Entries
// naming no app of the list are ignored, and apps on a cycle come last in
// list order; a validated config has neither.
func DependencyOrder(apps []App) []App {
	byName := appIndex(apps)
	placed := make([]bool, len(apps))
	out := make([]App, 0, len(apps))
	for len(out) < len(apps) {
		next := firstReady(apps, byName, placed)
		if next < 0 {
			break
		}
		placed[next] = true
		out = append(out, apps[next])
	}
	for i, a := range apps {
		if !placed[i] {
			out = append(out, a)
		}
	}
	return out
}

// firstReady returns the first app not yet placed whose dependencies are
// all placed, or -1.
func firstReady(apps []App, byName map[string]int, placed []bool) int {
	for i, a := range apps {
		if placed[i] {
			continue
		}
		ready := true
		for _, dep := range a.DependsOn {
			if k, ok := byName[dep]; ok && k != i && !placed[k] {
				ready = false
				break
			}
		}
		if ready {
			return i
		}
	}
	return -1
}
