package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/testenv"
)

// TestDriftNoFalseFindings: right after `syncd apply` of the stack,
// `syncd drift` exits 0 with no finding and no warning; after an Update by
// another manager and a write under syncd's own manager name it exits 2
// with exactly those two fields and their culprits.
func TestDriftNoFalseFindings(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n", ns))
	dir := writeFiles(t, testenv.MonitoringStack(".", ns))
	if r := syncd(t, "apply", "--config", cfg, "--path", dir); r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := syncd(t, "drift", "-o", "json", "--config", cfg, "--path", dir)
	var clean struct {
		Findings []any    `json:"findings"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &clean); err != nil || r.code != exitOK || len(clean.Findings) > 0 || len(clean.Warnings) > 0 {
		t.Fatalf("drift right after apply: code %d (%v), want 0 with no finding and no warning\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	ctx := context.Background()
	cs := env.Clientset(t)
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "grafana", types.MergePatchType,
		[]byte(`{"spec":{"minReadySeconds":5}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases(ns).Patch(ctx, "grafana-leader", types.MergePatchType,
		[]byte(`{"spec":{"holderIdentity":"intruder"}}`), metav1.PatchOptions{FieldManager: "syncd-web"}); err != nil {
		t.Fatal(err)
	}
	report := driftJSON(t, exitChanges, "--config", cfg, "--path", dir)
	var got []string
	for _, f := range report.Findings {
		var owners []string
		for _, o := range f.Owners {
			owners = append(owners, o.Manager+"/"+o.Operation)
		}
		got = append(got, fmt.Sprintf("%s %s %s %v→%v %s", f.Object["name"], f.Path, f.Class, f.Desired, f.Live, strings.Join(owners, ",")))
	}
	want := []string{
		"grafana .spec.minReadySeconds taken-over 0→5 kubectl-edit/Update",
		"grafana-leader .spec.holderIdentity value-drift grafana-0→intruder syncd-web/Update",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}
