package install

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// TestMonitoringTargetsTheBase: manifests/monitoring builds, its
// ServiceMonitor selects the base's metrics Service in syncd's namespace
// and names a port that Service has, over the scheme syncd serves with
// --secure-status, and the dashboard ConfigMap carries the label Grafana's
// sidecar loads and a dashboard that decodes. (The queries themselves are
// checked in test/monitoring.)
func TestMonitoringTargetsTheBase(t *testing.T) {
	base := kustomizeBuild(t, "manifests")
	mon := kustomizeBuild(t, "manifests/monitoring")
	sm := findObject(t, mon, "ServiceMonitor", "syncd")
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	endpoints := sliceAt(sm, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints: %v, want one", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	var scraped []string
	for _, obj := range base {
		if obj.GetKind() != "Service" || obj.GetNamespace() != sm.GetNamespace() || !labels.SelectorFromSet(selector).Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		ports := sliceAt(obj, "spec", "ports")
		for _, p := range ports {
			if p.(map[string]any)["name"] == ep["port"] {
				scraped = append(scraped, obj.GetName())
			}
		}
	}
	if len(scraped) != 1 || scraped[0] != "syncd" {
		t.Errorf("the ServiceMonitor (selector %v, port %v) scrapes Services %v, want [syncd]", selector, ep["port"], scraped)
	}
	if ep["scheme"] != "https" || ep["path"] != "/metrics" {
		t.Errorf("endpoint scheme %v path %v, want https /metrics (--secure-status)", ep["scheme"], ep["path"])
	}
	args := syncdDeployment(t, base).Spec.Template.Spec.Containers[0].Args
	if !containsString(args, "--secure-status") {
		t.Errorf("the base no longer serves /metrics with --secure-status (args %q): the ServiceMonitor's https and token are wrong", args)
	}
	cm := findObject(t, mon, "ConfigMap", "syncd-grafana-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v: no grafana_dashboard: \"1\"", cm.GetLabels())
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	var dash struct {
		UID    string `json:"uid"`
		Panels []any  `json:"panels"`
	}
	if err := json.Unmarshal([]byte(data["syncd-dashboard.json"]), &dash); err != nil || dash.UID == "" || len(dash.Panels) == 0 {
		t.Errorf("the ConfigMap's syncd-dashboard.json: uid %q, %d panels, %v", dash.UID, len(dash.Panels), err)
	}
	findObject(t, mon, "PrometheusRule", "syncd")
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sliceAt reads a list without copying it (kustomize's maps hold Go ints,
// which the copying helpers refuse).
func sliceAt(obj *unstructured.Unstructured, path ...string) []any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	s, _ := v.([]any)
	return s
}
