package importer

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
)

// An App whose source, or an App it depends on, is in none of the
// inputs is warned about, naming the object, the field and the missing
// name; with every object among the inputs, nothing is.
func TestDanglingReferencesAreWarned(t *testing.T) {
	const kustomizations = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra, namespace: flux-system}
spec: {interval: 10m, sourceRef: {kind: GitRepository, name: flux-system}, path: ./infrastructure, prune: true}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 10m, dependsOn: [{name: monitoring}], sourceRef: {kind: GitRepository, name: flux-system}, path: ./apps, prune: true}
`
	const gitRepository = `
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1m, url: https://git.example.com/fleet.git, ref: {branch: main}}
`
	const monitoring = `
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: monitoring, namespace: flux-system}
spec: {interval: 10m, sourceRef: {kind: GitRepository, name: flux-system}, path: ./monitoring, prune: true}
`
	const helmRelease = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: loki, namespace: monitoring}
spec:
  interval: 5m
  chart: {spec: {chart: loki, version: "6.x", sourceRef: {kind: HelmRepository, name: grafana}}}
`
	type warned struct{ Object, Field, Missing string }
	for name, tc := range map[string]struct {
		doc  string
		form Form
		want []warned
		// loads is whether the syncd.yaml is to load.
		loads bool
	}{
		"source and dependency missing": {doc: kustomizations, form: ObjectsForm, want: []warned{
			{"Kustomization flux-system/apps", "spec.sourceRef", "GitRepository flux-system/flux-system is in none of the inputs, so no GitSource flux-system/flux-system is printed"},
			{"Kustomization flux-system/apps", "spec.dependsOn", "flux-system/monitoring is in none of the inputs"},
			{"Kustomization flux-system/infra", "spec.sourceRef", "GitRepository flux-system/flux-system is in none of the inputs"},
		}},
		"source and dependency missing, syncd.yaml": {doc: kustomizations, form: ConfigForm, want: []warned{
			{"Kustomization flux-system/apps", "spec.sourceRef", "the syncd.yaml does not load without a source named flux-system"},
			{"Kustomization flux-system/apps", "spec.dependsOn", "remove monitoring from dependsOn"},
			{"Kustomization flux-system/infra", "spec.sourceRef", "declare the source under sources"},
		}},
		"dependency missing":    {doc: kustomizations + gitRepository, form: ConfigForm, want: []warned{{"Kustomization flux-system/apps", "spec.dependsOn", "flux-system/monitoring is in none of the inputs"}}},
		"everything among them": {doc: kustomizations + gitRepository + monitoring, form: ConfigForm, loads: true},
		"chart repository missing": {doc: helmRelease, form: ObjectsForm, want: []warned{
			{"HelmRelease monitoring/loki", "spec.chart.spec.sourceRef", "HelmRepository monitoring/grafana is in none of the inputs, so no HelmSource monitoring/grafana is printed"},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			res := importYAML(t, Flux, Options{Form: tc.form}, tc.doc)
			var got []warned
			for _, w := range res.Warnings {
				if w.Field != "spec.sourceRef" && w.Field != "spec.dependsOn" && w.Field != "spec.chart.spec.sourceRef" {
					continue
				}
				g := warned{Object: w.Object, Field: w.Field, Missing: w.Message}
				for _, want := range tc.want {
					if want.Object == w.Object && want.Field == w.Field && containsAll(w.Message, want.Missing) {
						g.Missing = want.Missing
					}
				}
				got = append(got, g)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings about references (-want +got):\n%s", diff)
			}
			if tc.form != ConfigForm {
				return
			}
			cfg, _ := res.Config()
			var out bytes.Buffer
			if err := WriteConfig(&out, cfg); err != nil {
				t.Fatal(err)
			}
			if _, err := config.Parse(out.Bytes(), "syncd.yaml"); (err == nil) != tc.loads {
				t.Errorf("the syncd.yaml loads: %v, want %v (%v)", err == nil, tc.loads, err)
			}
		})
	}
}

// An app of the file that depends on an App the file leaves out
// (suspended) is warned about: the file would not load.
func TestConfigDependsOnAnAppLeftOut(t *testing.T) {
	res := importYAML(t, Flux, Options{Form: ConfigForm}, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: flux-system}
spec: {interval: 1m, url: https://git.example.com/fleet.git, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra, namespace: flux-system}
spec: {interval: 10m, suspend: true, sourceRef: {kind: GitRepository, name: fleet}, path: ./infra}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 10m, dependsOn: [{name: infra}], sourceRef: {kind: GitRepository, name: fleet}, path: ./apps}`)
	_, warnings := res.Config()
	var got []string
	for _, w := range warnings {
		if containsAll(w.Message, "dependsOn names infra, which is left out of the file") {
			got = append(got, w.Object)
		}
	}
	if diff := cmp.Diff([]string{"apps[0] (apps)"}, got); diff != "" {
		t.Errorf("syncd.yaml apps warned about (-want +got):\n%s", diff)
	}
}
