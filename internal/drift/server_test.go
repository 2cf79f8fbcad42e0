package drift

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/redact"
)

// TestSeed is the seed: syncd-app applies .data.color: blue,
// "other" applies its own .data.owner, "operator" merge-patches
// .data.color to green. Exactly .data.color is reported, taken over by
// operator by Update; .data.owner is not.
func TestSeed(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := mustPlan(t, config.App{Name: "app", Namespace: ns}, `
apiVersion: v1
kind: ConfigMap
metadata: {name: seed}
data: {color: blue}
`)
	c.applyPlan(t, plan, false)
	c.apply(t, obj(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: seed, namespace: %s}, data: {owner: team-a}}`, ns)), "other", false)
	c.mergePatch(t, plan.Objects[0].Desired, "operator", `{"data":{"color":"green"}}`)

	r := Detect(plan, c.live(t, plan), Options{})
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	// The time is the server's; check it parses, then pin it.
	findings, _ := got["findings"].([]any)
	for _, f := range findings {
		for _, o := range f.(map[string]any)["owners"].([]any) {
			o := o.(map[string]any)
			if _, err := time.Parse(time.RFC3339, fmt.Sprint(o["time"])); err != nil {
				t.Errorf("owner time %v: %v", o["time"], err)
			}
			o["time"] = "TIME"
		}
	}
	want := map[string]any{"findings": []any{map[string]any{
		"app":        "app",
		"object":     map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": ns, "name": "seed"},
		"path":       ".data.color",
		"class":      "taken-over",
		"declaredBy": "syncd-app",
		"desired":    "blue",
		"live":       "green",
		"owners":     []any{map[string]any{"manager": "operator", "operation": "Update", "subresource": "", "time": "TIME"}},
	}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON report (-want +got):\n%s\n%s", diff, buf.String())
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), ".data.color was changed from blue to green by operator (Update) at ") || strings.Contains(text.String(), "owner") {
		t.Errorf("text report:\n%s", text.String())
	}
	if !r.HasDrift() {
		t.Error("HasDrift = false")
	}
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: example.com/web:v1.4
        ports: [{containerPort: 8080}]
        resources: {limits: {cpu: "0.5", memory: 128Mi}}
`

const service = `
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`

const secret = `
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: hunter2-from-git}
data: {token: c2VjcmV0LXRva2VuLWZyb20tZ2l0}
`

// found is the part of a finding the server tests compare.
type found struct {
	Object, Path, Class, Culprit, Operation, Subresource string
	Desired, Live                                        any
}

func summarize(r *Report) []found {
	var out []found
	for _, f := range r.Findings {
		g := found{Object: f.Object.Kind + "/" + f.Object.Name, Path: f.Path, Class: string(f.Class), Culprit: f.Culprit, Desired: f.Desired, Live: f.Live}
		for _, o := range f.Owners {
			if o.Manager == f.Culprit {
				g.Operation, g.Subresource = o.Operation, o.Subresource
			}
		}
		out = append(out, g)
	}
	return out
}

// TestDetectServer drives a real API server into each situation and checks
// the findings.
func TestDetectServer(t *testing.T) {
	ctx := context.Background()
	image := `.spec.template.spec.containers[name="app"].image`
	tests := map[string]struct {
		docs []string
		// change runs after syncd applied the plan.
		change func(t *testing.T, c *cluster, ns string)
		want   []found
	}{
		"server defaults and normalised values are not drift": {
			docs: []string{deployment, service, secret},
		},
		"kubectl edit of an image": {
			docs: []string{deployment},
			change: func(t *testing.T, c *cluster, ns string) {
				d, err := env.Clientset(t).AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				d.Spec.Template.Spec.Containers[0].Image = "example.com/web:v1.5-hotfix"
				if _, err := env.Clientset(t).AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
					t.Fatal(err)
				}
			},
			want: []found{{Object: "Deployment/web", Path: image, Class: "taken-over", Culprit: "kubectl-edit", Operation: "Update",
				Desired: "example.com/web:v1.4", Live: "example.com/web:v1.5-hotfix"}},
		},
		"scale subresource write on replicas": {
			docs: []string{deployment},
			change: func(t *testing.T, c *cluster, ns string) {
				s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
				if _, err := env.Clientset(t).AppsV1().Deployments(ns).UpdateScale(ctx, "web", s, metav1.UpdateOptions{FieldManager: "autoscaler"}); err != nil {
					t.Fatal(err)
				}
			},
			want: []found{{Object: "Deployment/web", Path: ".spec.replicas", Class: "taken-over", Culprit: "autoscaler", Operation: "Update", Subresource: "scale",
				Desired: int64(2), Live: int64(5)}},
		},
		"another manager applies the same value": {
			docs: []string{deployment},
			change: func(t *testing.T, c *cluster, ns string) {
				c.apply(t, obj(t, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s}
spec:
  template:
    spec:
      containers: [{name: app, image: "example.com/web:v1.4"}]
`, ns)), "image-bot", false)
			},
			want: []found{{Object: "Deployment/web", Path: image, Class: "shared", Culprit: "image-bot", Operation: "Apply",
				Desired: "example.com/web:v1.4", Live: "example.com/web:v1.4"}},
		},
		"another syncd app applies the same value: an overlap": {
			docs: []string{deployment},
			change: func(t *testing.T, c *cluster, ns string) {
				c.apply(t, obj(t, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s, annotations: {managers.syncd.dev/other: syncd-other}}
spec:
  template:
    spec:
      containers: [{name: app, image: "example.com/web:v1.4"}]
`, ns)), "syncd-other", false)
			},
			want: []found{{Object: "Deployment/web", Path: image, Class: "overlap", Culprit: "syncd-other", Operation: "Apply",
				Desired: "example.com/web:v1.4", Live: "example.com/web:v1.4"}},
		},
		"a manager no app's annotation lists applies the same value: shared, not an overlap": {
			docs: []string{deployment},
			change: func(t *testing.T, c *cluster, ns string) {
				c.apply(t, obj(t, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s, annotations: {managers.syncd.dev/other: syncd-other}}
spec:
  template:
    spec:
      containers: [{name: app, image: "example.com/web:v1.4"}]
`, ns)), "image-bot", false)
			},
			want: []found{{Object: "Deployment/web", Path: image, Class: "shared", Culprit: "image-bot", Operation: "Apply",
				Desired: "example.com/web:v1.4", Live: "example.com/web:v1.4"}},
		},
		"secret value changed out of band is redacted": {
			docs: []string{secret},
			change: func(t *testing.T, c *cluster, ns string) {
				c.mergePatch(t, obj(t, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: %s}}`, ns)),
					"rotator", `{"data":{"token":"bGl2ZS1zZWNyZXQtdG9rZW4="}}`)
			},
			want: []found{{Object: "Secret/creds", Path: ".data.token", Class: "taken-over", Culprit: "rotator", Operation: "Update",
				Desired: redact.Marker, Live: redact.Marker}},
		},
		"a write under syncd's own manager name is value drift": {
			docs: []string{deployment},
			change: func(t *testing.T, c *cluster, ns string) {
				// Stands in for a writer syncd cannot name: the field
				// stays with a syncd manager, only the value moved.
				_, err := env.Clientset(t).AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType,
					[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"example.com/web:mutated"}]}}}}`),
					metav1.PatchOptions{FieldManager: "syncd-web"})
				if err != nil {
					t.Fatal(err)
				}
			},
			want: []found{{Object: "Deployment/web", Path: image, Class: "value-drift",
				Desired: "example.com/web:v1.4", Live: "example.com/web:mutated"}},
		},
		// The image keeps its value, so syncd keeps it (an Update takes
		// only what it changed); the fields the patch dropped are owned
		// by nobody: the server does not record who removed them.
		"a JSON merge patch replacing the containers removes declared fields": {
			docs: []string{deployment},
			change: func(t *testing.T, c *cluster, ns string) {
				c.mergePatch(t, obj(t, fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: %s}}`, ns)),
					"patcher", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"example.com/web:v1.4"}]}}}}`)
			},
			want: []found{
				{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].ports[containerPort=8080,protocol="TCP"].containerPort`, Class: "taken-over", Desired: int64(8080)},
				{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].resources.limits.cpu`, Class: "taken-over", Desired: "0.5"},
				{Object: "Deployment/web", Path: `.spec.template.spec.containers[name="app"].resources.limits.memory`, Class: "taken-over", Desired: "128Mi"},
			},
		},
		"deleted out of band": {
			docs: []string{service},
			change: func(t *testing.T, c *cluster, ns string) {
				if err := env.Clientset(t).CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			want: []found{{Object: "Service/web", Class: "deleted"}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t)
			ns := env.Namespace(t)
			plan := mustPlan(t, config.App{Name: "web", Namespace: ns}, tt.docs...)
			c.applyPlan(t, plan, false)
			if tt.change != nil {
				tt.change(t, c, ns)
			}
			r := Detect(plan, c.live(t, plan), Options{})
			if diff := cmp.Diff(tt.want, summarize(r), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
				_ = r.WriteText(testWriter{t})
			}
			if len(r.Warnings) > 0 {
				t.Errorf("warnings: %v", r.Warnings)
			}
			// No secret value may appear in any rendering.
			var all bytes.Buffer
			for _, write := range []func(*bytes.Buffer) error{
				func(b *bytes.Buffer) error { return r.WriteText(b) },
				func(b *bytes.Buffer) error { return r.WriteMarkdown(b) },
				func(b *bytes.Buffer) error { return r.WriteJSON(b) },
			} {
				if err := write(&all); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range []string{"hunter2", "c2VjcmV0LXRva2VuLWZyb20tZ2l0", "secret-token-from-git", "bGl2ZS1zZWNyZXQtdG9rZW4", "live-secret-token"} {
				if strings.Contains(all.String(), s) {
					t.Errorf("output holds secret value %q:\n%s", s, all.String())
				}
			}
		})
	}
}

// testWriter writes to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// TestHandoffPendingServer runs the handoff hold of SSA_SEQUENCES.md: the
// replicas field leaves Git, syncd-web-handoff holds it, and the report
// says so as information, not drift.
func TestHandoffPendingServer(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	app := config.App{Name: "web", Namespace: ns}
	before := mustPlan(t, app, deployment)
	c.applyPlan(t, before, false)
	c.apply(t, obj(t, fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: %s}, spec: {replicas: 2}}`, ns)), ownership.HandoffManager("syncd-web"), false)
	after := mustPlan(t, app, strings.Replace(deployment, "  replicas: 2\n", "", 1))
	c.applyPlan(t, after, false)

	r := Detect(after, c.live(t, after), Options{})
	want := []found{{Object: "Deployment/web", Path: ".spec.replicas", Class: "handoff-pending", Live: int64(2)}}
	if diff := cmp.Diff(want, summarize(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if r.HasDrift() {
		t.Error("HasDrift = true for a pending handoff")
	}
}
