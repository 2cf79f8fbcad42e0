package controller

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// TestAdmissionOfAlerts checks the CEL rules of the Alert and
// AlertProvider CRDs at admission: each invalid object is refused with a
// message that says what to write instead.
func TestAdmissionOfAlerts(t *testing.T) {
	dyn := installCRDs(t)
	ns := env.Namespace(t)
	tests := map[string]struct {
		resource string
		manifest string
		want     string // "" accepts
	}{
		"valid provider": {resource: "alertproviders", manifest: `
kind: AlertProvider
metadata: {name: chat}
spec: {type: slack, secretRef: {name: chat}}`},
		"provider type": {resource: "alertproviders", manifest: `
kind: AlertProvider
metadata: {name: pager}
spec: {type: pagerduty, secretRef: {name: pager}}`,
			want: `"pagerduty" is not a provider type; use slack, msteams, discord or webhook`},
		"valid alert": {resource: "alerts", manifest: `
kind: Alert
metadata: {name: oncall}
spec: {providerRef: {name: chat}, eventSources: [{name: "*", matchLabels: {team: a}}], events: [drift, error]}`},
		"unknown event": {resource: "alerts", manifest: `
kind: Alert
metadata: {name: event}
spec: {providerRef: {name: chat}, eventSources: [{name: web}], events: [recovered]}`,
			want: `"recovered" is not an event; use drift, overlap, conflict, handoff, prune, error or sync`},
		"empty source": {resource: "alerts", manifest: `
kind: Alert
metadata: {name: empty}
spec: {providerRef: {name: chat}, eventSources: [{kind: App}]}`,
			want: `the event source selects nothing; set name (an App's name, or * for every App of the namespace) or matchLabels`},
		"name and labels": {resource: "alerts", manifest: `
kind: Alert
metadata: {name: both}
spec: {providerRef: {name: chat}, eventSources: [{name: web, matchLabels: {team: a}}]}`,
			want: `name and matchLabels are both set`},
		"other kind": {resource: "alerts", manifest: `
kind: Alert
metadata: {name: kustomization}
spec: {providerRef: {name: chat}, eventSources: [{kind: Kustomization, name: web}]}`,
			want: `"Kustomization" is not a kind that sends events; use App`},
		"no sources": {resource: "alerts", manifest: `
kind: Alert
metadata: {name: none}
spec: {providerRef: {name: chat}, eventSources: []}`,
			want: `spec.eventSources: Invalid value`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := object(t, tc.manifest)
			u.SetAPIVersion(v1alpha1.GroupVersion.String())
			_, err := dyn.Resource(v1alpha1.GroupVersion.WithResource(tc.resource)).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid object refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("invalid object accepted; want a refusal with %q", tc.want)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("refusal = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
