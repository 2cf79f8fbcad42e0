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
)

// monitoringFiles is an app written the way public manifests are: zero
// values spelled out (minReadySeconds: 0, readOnly: false, hostNetwork:
// false, annotations: {}), quantities in another unit than the server's
// (1000m, 1024Mi), ports without protocol, targetPort by number and by
// name, an env fieldRef without apiVersion, and a Lease whose acquireTime
// has a UTC offset (the server stores it in UTC).
func monitoringFiles(ns string) map[string]string {
	return map[string]string{
		"grafana.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: grafana, namespace: %[1]s, labels: {app: grafana}, annotations: {}}
spec:
  replicas: 1
  minReadySeconds: 0
  selector: {matchLabels: {app: grafana}}
  template:
    metadata: {labels: {app: grafana}}
    spec:
      hostNetwork: false
      containers:
      - name: grafana
        image: grafana/grafana:11.0.0
        ports: [{name: http, containerPort: 3000}]
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        resources:
          limits: {cpu: 1000m, memory: 1024Mi}
        volumeMounts:
        - {name: config, mountPath: /etc/grafana, readOnly: false}
      volumes:
      - name: config
        configMap: {name: grafana}
---
apiVersion: v1
kind: Service
metadata: {name: grafana, namespace: %[1]s}
spec:
  selector: {app: grafana}
  ports:
  - {name: http, port: 80, targetPort: http}
  - {name: metrics, port: 9090, targetPort: 3000}
`, ns),
		"lease.yaml": fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: grafana-leader, namespace: %s}
spec:
  holderIdentity: grafana-0
  leaseDurationSeconds: 15
  acquireTime: "2026-12-01T18:00:00.000000+01:00"
`, ns),
	}
}

// TestDriftNoFalseFindings: right after `syncd apply` of the stack,
// `syncd drift` exits 0 with no finding and no warning; after an Update by
// another manager and a write under syncd's own manager name it exits 2
// with exactly those two fields and their culprits.
func TestDriftNoFalseFindings(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n", ns))
	dir := writeFiles(t, monitoringFiles(ns))
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
