package drift

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/config"
)

// TestReportExample builds the report shown in docs/drift.md: several
// out-of-band writes on one app at once. Run it with -v to print the three
// renderings.
func TestReportExample(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := mustPlan(t, config.App{Name: "web", Namespace: ns}, deployment, service, secret, `
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {color: blue, mode: fast}
`)
	c.applyPlan(t, plan, false)
	cs := env.Clientset(t)

	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "example.com/web:v1.5-hotfix"
	if _, err := cs.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{FieldManager: "hpa-controller"}); err != nil {
		t.Fatal(err)
	}
	c.apply(t, obj(t, fmt.Sprintf(`{apiVersion: v1, kind: Service, metadata: {name: web, namespace: %s}, spec: {selector: {app: web}}}`, ns)), "mesh-injector", false)
	c.mergePatch(t, obj(t, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: %s}}`, ns)),
		"rotator", `{"data":{"token":"bGl2ZS1zZWNyZXQtdG9rZW4="}}`)
	c.mergePatch(t, obj(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: web-config, namespace: %s}}`, ns)),
		"operator", `{"data":{"color":"green"}}`)

	cm := plan.Objects[len(plan.Objects)-1]
	for _, o := range plan.Objects {
		if o.Ref.Kind == "ConfigMap" {
			cm = o
		}
	}
	r := Detect(plan, c.live(t, plan), Options{Yielded: []FieldRef{{Object: cm.Ref, Manager: "operator", Path: ".data.color"}}})
	var classes []string
	for _, f := range r.Findings {
		classes = append(classes, f.Path+" "+string(f.Class))
	}
	want := []string{
		`.data.color yielded`,
		`.spec.replicas taken-over`,
		`.spec.template.spec.containers[name="app"].image taken-over`,
		`.data.token taken-over`,
		`.spec.selector shared`,
	}
	if !sameSet(want, classes) {
		t.Errorf("findings %q, want %q", classes, want)
	}
	var text, md, js bytes.Buffer
	for _, err := range []error{r.WriteText(&text), r.WriteMarkdown(&md), r.WriteJSON(&js)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("text:\n%s\nmarkdown:\n%s\njson:\n%s", text.String(), md.String(), js.String())
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}
