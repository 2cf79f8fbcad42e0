package applier

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/planner"
)

// realisticDeployment is shaped like the Deployments of public install
// manifests: several containers, probes, security contexts, volumes, env
// from the downward API and a ConfigMap, an empty resources map, args, no
// strategy and no imagePullPolicy.
func realisticDeployment(image string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: notifications
  labels: {app.kubernetes.io/name: notifications, app.kubernetes.io/part-of: demo}
spec:
  selector:
    matchLabels: {app.kubernetes.io/name: notifications}
  template:
    metadata:
      labels: {app.kubernetes.io/name: notifications}
    spec:
      serviceAccountName: default
      securityContext:
        runAsNonRoot: true
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: controller
        image: ` + image + `
        args: [--metrics-port=9001, --loglevel=info]
        workingDir: /app
        ports:
        - {containerPort: 9001, name: metrics}
        env:
        - name: NAMESPACE
          valueFrom:
            fieldRef: {fieldPath: metadata.namespace}
        - name: LEVEL
          valueFrom:
            configMapKeyRef: {name: settings, key: level, optional: true}
        livenessProbe:
          tcpSocket: {port: 9001}
        readinessProbe:
          httpGet: {path: /healthz, port: metrics}
          initialDelaySeconds: 5
        resources: {}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        volumeMounts:
        - {name: tls, mountPath: /app/config/tls, readOnly: false}
        - {name: tmp, mountPath: /tmp}
      - name: sidecar
        image: busybox:1.36
        command: [sleep]
        args: [infinity]
        resources:
          requests: {cpu: 10m, memory: 16Mi}
          limits: {memory: 64Mi}
      volumes:
      - name: tls
        secret: {secretName: notifications-tls, optional: true}
      - name: tmp
        emptyDir: {}
`
}

// staleReader answers the applier's read with a metadata-only copy of an
// object read earlier, as the inventory's read at the start of a run or a
// watch cache that has not caught up does.
type staleReader struct{ u *unstructured.Unstructured }

func (s staleReader) Live(context.Context, planner.ObjectRef) (*unstructured.Unstructured, error) {
	md, _ := s.u.Object["metadata"].(map[string]any)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": s.u.GetAPIVersion(), "kind": s.u.GetKind(), "metadata": md,
	}}, nil
}

// TestTruthfulOutcome: a Deployment applied again after its controller
// wrote status and its revision annotation, read before that write, is
// unchanged; an actual change is configured and names the field.
func TestTruthfulOutcome(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	app := appOf("app", ns)
	plan := c.plan(t, app, realisticDeployment("registry.example/notifications:v2.9.0"))
	wantChanges(t, c.apply(t, plan, ApplyOptions{}), "Deployment notifications syncd-app created")

	// The Deployment controller writes its revision annotation and status.
	var read *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctxT(t), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		read = c.get(t, deployments, ns, "notifications")
		g, _, _ := unstructured.NestedInt64(read.Object, "status", "observedGeneration")
		return read.GetAnnotations()["deployment.kubernetes.io/revision"] != "" && g == read.GetGeneration(), nil
	})
	if err != nil {
		t.Fatalf("the Deployment controller never wrote status: %v", err)
	}

	tests := []struct {
		name   string
		dryRun bool
		ao     func() ApplyOptions
	}{
		{"read by GET", false, func() ApplyOptions { return ApplyOptions{} }},
		{"read before a status write, metadata only", false, func() ApplyOptions {
			stale := c.get(t, deployments, ns, "notifications")
			// A controller writes status after the read.
			patch := `{"status":{"conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"written by a test"}]}}`
			if _, err := c.resource(t, deployments, ns).Patch(context.Background(), "notifications", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "status-writer"}, "status"); err != nil {
				t.Fatal(err)
			}
			return ApplyOptions{Live: staleReader{stale}}
		}},
		{"dry run, read metadata only", true, func() ApplyOptions {
			return ApplyOptions{Live: staleReader{c.get(t, deployments, ns, "notifications")}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ao := tc.ao()
			before := c.get(t, deployments, ns, "notifications")
			cs, err := c.applier(t, Options{DryRun: tc.dryRun}).Apply(ctxT(t), plan, ao)
			if err != nil {
				t.Fatal(err)
			}
			wantChanges(t, cs, "Deployment notifications syncd-app unchanged")
			if ch := cs.Changes[0]; len(ch.Changed) > 0 {
				t.Errorf("unchanged with changed fields %v", ch.Changed)
			}
			after := c.get(t, deployments, ns, "notifications")
			if after.GetGeneration() != before.GetGeneration() {
				t.Errorf("generation %d -> %d", before.GetGeneration(), after.GetGeneration())
			}
			wantUnwritten(t, "re-apply", before, after)
		})
	}

	// An actual change is configured and says which field.
	before := c.get(t, deployments, ns, "notifications")
	changed := c.plan(t, app, realisticDeployment("registry.example/notifications:v2.9.1"))
	cs := c.apply(t, changed, ApplyOptions{Live: staleReader{read}})
	wantChanges(t, cs, "Deployment notifications syncd-app configured")
	want := []string{`.spec.template.spec.containers[name="controller"].image`}
	if diff := cmp.Diff(want, cs.Changes[0].Changed); diff != "" {
		t.Errorf("changed fields (-want +got):\n%s", diff)
	}
	after := c.get(t, deployments, ns, "notifications")
	if after.GetGeneration() != before.GetGeneration()+1 {
		t.Errorf("generation %d -> %d, want one more", before.GetGeneration(), after.GetGeneration())
	}
}

// TestWrittenFields names what a write changed, without values.
func TestWrittenFields(t *testing.T) {
	cm := func(data map[string]any, fields string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}, "data": data}}
		if fields != "" {
			u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}})
		}
		return u
	}
	tests := map[string]struct {
		before, after *unstructured.Unstructured
		want          []string
	}{
		"a value changed": {
			before: cm(map[string]any{"a": "1", "b": "2"}, `{"f:data":{"f:a":{},"f:b":{}}}`),
			after:  cm(map[string]any{"a": "1", "b": "3"}, `{"f:data":{"f:a":{},"f:b":{}}}`),
			want:   []string{".data.b"},
		},
		"a field added and one removed": {
			before: cm(map[string]any{"a": "1"}, `{"f:data":{"f:a":{}}}`),
			after:  cm(map[string]any{"b": "2"}, `{"f:data":{"f:b":{}}}`),
			want:   []string{".data.a", ".data.b"},
		},
		"ownership only": {
			before: cm(map[string]any{"a": "1", "b": "2"}, `{"f:data":{"f:a":{}}}`),
			after:  cm(map[string]any{"a": "1", "b": "2"}, `{"f:data":{"f:b":{}}}`),
			want:   []string{".data.a (released)", ".data.b (now owned)"},
		},
		"nothing of the manager's": {
			before: cm(map[string]any{"a": "1"}, `{"f:data":{"f:a":{}}}`),
			after:  cm(map[string]any{"a": "1"}, `{"f:data":{"f:a":{}}}`),
			want:   []string{"metadata"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, writtenFields("m", tc.before, tc.after)); diff != "" {
				t.Errorf("writtenFields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSecretStringDataOutcome: the API server stores a Secret's
// .stringData.K in .data.K and never returns stringData, so a changed
// stringData value is found where it is stored: the apply names the
// field, and a dry run of the change is configured, not unchanged.
func TestSecretStringDataOutcome(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	app := appOf("app", ns)
	secret := func(password string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  username: shop\n  password: " + password + "\n"
	}
	wantChanges(t, c.apply(t, c.plan(t, app, secret("first-pw")), ApplyOptions{}), "Secret db syncd-app created")

	rotated := c.plan(t, app, secret("rotated-pw"))
	dry, err := c.applier(t, Options{DryRun: true}).Apply(ctxT(t), rotated, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantChanges(t, dry, "Secret db syncd-app configured")
	cs := c.apply(t, rotated, ApplyOptions{})
	wantChanges(t, cs, "Secret db syncd-app configured")
	for name, got := range map[string][]string{"dry run": dry.Changes[0].Changed, "apply": cs.Changes[0].Changed} {
		if diff := cmp.Diff([]string{".stringData.password"}, got); diff != "" {
			t.Errorf("%s: changed fields (-want +got):\n%s", name, diff)
		}
	}
	wantChanges(t, c.apply(t, rotated, ApplyOptions{}), "Secret db syncd-app unchanged")
}

// TestSecretStringDataConflict: another manager applied a Secret's
// stringData.password with its own value; syncd's different value is a
// conflict its policy decides (fail: nothing written), not a "same value"
// taken over, although the server returns neither side's stringData.
func TestSecretStringDataConflict(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	c.applyAs(t, secrets, ns, "vault-injector", "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: "+ns+"}\nstringData:\n  password: theirs-pw\n")
	before := c.get(t, secrets, ns, "db")
	ours := c.plan(t, appOf("app", ns), "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  password: ours-pw\n")
	cs := c.apply(t, ours, ApplyOptions{Policy: policyOf(t, ConflictFail)})
	wantChanges(t, cs, "Secret db syncd-app conflict")
	if got := cs.Changes[0].Conflicts; len(got) != 1 || got[0].Path != ".stringData.password" || got[0].Manager != "vault-injector" {
		t.Errorf("conflicts %v, want .stringData.password owned by vault-injector", got)
	}
	if diff := cmp.Diff(data(before), data(c.get(t, secrets, ns, "db"))); diff != "" {
		t.Errorf("the other manager's password was overwritten (-before +after):\n%s", diff)
	}
	// The same value is no disagreement: taken without changing it.
	same := c.plan(t, appOf("app", ns), "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  password: theirs-pw\n")
	cs = c.apply(t, same, ApplyOptions{Policy: policyOf(t, ConflictFail)})
	if got := cs.Changes[0]; got.Action == Conflicted || len(got.Resolution().SameValue) != 1 {
		t.Errorf("the same stringData value: %s, same value %v; want it taken without changing it", got.Action, got.Resolution().SameValue)
	}
}
