package controller

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/testenv/helmserver"
	"syncd.dev/syncd/internal/testenv/ociregistry"
)

// newSourceRig starts a Controller over a team namespace with no source
// in it yet.
func newSourceRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, dyn: installCRDs(t), ns: env.Namespace(t)}
	r.c = r.start(Options{})
	return r
}

// basicAuthSecret creates the Secret name holding username and password.
func (r *rig) basicAuthSecret(name, user, password string) {
	r.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{
		v1alpha1.SecretKeyUsername: []byte(user), v1alpha1.SecretKeyPassword: []byte(password),
	}}
	if _, err := env.Clientset(r.t).CoreV1().Secrets(r.ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// written is what a write would change: an object's resourceVersion
// and managedFields.
type written struct {
	ResourceVersion string
	ManagedFields   []metav1.ManagedFieldsEntry
}

// configMapWritten reads ConfigMap name's written state.
func (r *rig) configMapWritten(name string) written {
	r.t.Helper()
	cm, err := env.Clientset(r.t).CoreV1().ConfigMaps(r.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return written{cm.ResourceVersion, cm.ManagedFields}
}

// sourceWritten reads the source's written state.
func (r *rig) sourceWritten(kind, name string) written {
	r.t.Helper()
	u, err := r.dyn.Resource(sourceResource(kind)).Namespace(r.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return written{u.GetResourceVersion(), u.GetManagedFields()}
}

// reconcileAgain sets the App's requestedAt annotation and waits until
// a reconcile handled it, Ready.
func (r *rig) reconcileAgain(name string) {
	r.t.Helper()
	at := time.Now().Format(time.RFC3339Nano)
	r.patchApp(name, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.RequestedAtAnnotation, at))
	r.waitApp(name, "reconciled for "+at, func(a *v1alpha1.App) bool {
		c := ready(a)
		return a.Status.LastHandledReconcileAt == at && c != nil && c.Status == metav1.ConditionTrue
	})
}

// checkNoWrite reconciles the App again and checks that neither its
// ConfigMap nor its source was written.
func (r *rig) checkNoWrite(app, configMap, kind, source string) {
	r.t.Helper()
	cm, src := r.configMapWritten(configMap), r.sourceWritten(kind, source)
	r.reconcileAgain(app)
	if got := r.configMapWritten(configMap); got.ResourceVersion != cm.ResourceVersion {
		r.t.Errorf("a reconcile of the unchanged %s wrote ConfigMap %s: resourceVersion %s -> %s, managedFields %+v -> %+v", kind, configMap, cm.ResourceVersion, got.ResourceVersion, cm.ManagedFields, got.ManagedFields)
	}
	if got := r.sourceWritten(kind, source); got.ResourceVersion != src.ResourceVersion {
		r.t.Errorf("a reconcile of the unchanged %s wrote the %s: resourceVersion %s -> %s, managedFields %+v -> %+v", kind, kind, src.ResourceVersion, got.ResourceVersion, src.ManagedFields, got.ManagedFields)
	}
}

// checkFetched checks a HelmSource's or an OCISource's status: Ready,
// with the revision and digest the App fetched and when.
func (r *rig) checkFetched(kind, name string, want fetched) {
	r.t.Helper()
	var st *v1alpha1.SourceStatus
	eventually(r.t, kind+" "+name+" status.revision "+want.Revision, func() (bool, string) {
		st = r.waitSourceOf(kind, name, "True "+string(v1alpha1.ReasonValid)).artifactStatus()
		return st.Revision == want.Revision, fmt.Sprintf("%+v", st)
	})
	if st.ArtifactDigest != want.Digest || st.LastFetchTime == nil {
		r.t.Errorf("%s %s: artifactDigest %q, lastFetchTime %v; want %q and a time", kind, name, st.ArtifactDigest, st.LastFetchTime, want.Digest)
	}
	r.waitEvent(name, "NewArtifact", want.Revision)
}

// TestAppOfHelmSource: an App renders a chart of a HelmSource (a
// loopback chart repository requiring basic auth, the credentials in
// the HelmSource's Secret) with the App's values, is Ready, the
// HelmSource's status shows the chart fetched, and a second reconcile
// of the unchanged repository writes nothing.
func TestAppOfHelmSource(t *testing.T) {
	r := newSourceRig(t)
	srv := helmserver.Start()
	t.Cleanup(srv.Close)
	srv.RequireAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("robot:s3cret")))
	digest, err := srv.Publish(helmserver.Chart{Name: "web", Version: "1.2.0", Files: map[string]string{
		"values.yaml":       "value: from-chart\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chart-web\ndata:\n  value: {{ .Values.value | quote }}\n",
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.basicAuthSecret("charts-auth", "robot", "s3cret")
	r.create("helmsources", fmt.Sprintf(`
kind: HelmSource
metadata: {name: charts}
spec: {url: %q, interval: 1h, secretRef: {name: charts-auth}}`, srv.URL))
	r.create("apps", `
kind: App
metadata: {name: web}
spec: {sourceRef: {kind: HelmSource, name: charts}, helm: {chart: web, version: "1.x", values: {value: from-app}}}`)
	r.waitApp("web", "Ready", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if v, err := r.configMapValue("chart-web"); err != nil || v != "from-app" {
		t.Errorf("ConfigMap chart-web: value %q, %v; want from-app (the App's values over the chart's)", v, err)
	}
	r.checkFetched(v1alpha1.KindHelmSource, "charts", fetched{Revision: "web-1.2.0", Digest: "sha256:" + digest})
	r.checkNoWrite("web", "chart-web", v1alpha1.KindHelmSource, "charts")
}

// TestAppOfOCISource: an App renders a directory of an OCISource (a
// loopback registry requiring basic auth, the credentials in the
// OCISource's Secret), is Ready, the OCISource's status shows the tag
// and digest fetched, and a second reconcile of the unchanged tag
// writes nothing.
func TestAppOfOCISource(t *testing.T) {
	r := newSourceRig(t)
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	reg.RequireBasic("robot", "s3cret")
	digest, err := reg.PushFiles("team/bundle", "v1", map[string]string{"deploy/cm.yaml": configMap("bundle", "1")})
	if err != nil {
		t.Fatal(err)
	}
	r.basicAuthSecret("registry", "robot", "s3cret")
	r.create("ocisources", fmt.Sprintf(`
kind: OCISource
metadata: {name: bundle}
spec: {url: %q, tag: v1, interval: 1h, secretRef: {name: registry}}`, reg.URL("team/bundle")))
	r.create("apps", `
kind: App
metadata: {name: bundle}
spec: {sourceRef: {kind: OCISource, name: bundle}, path: deploy}`)
	r.waitApp("bundle", "Ready", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if v, err := r.configMapValue("bundle"); err != nil || v != "1" {
		t.Errorf("ConfigMap bundle: value %q, %v; want 1", v, err)
	}
	r.checkFetched(v1alpha1.KindOCISource, "bundle", fetched{Revision: "v1@" + digest, Digest: digest})
	r.checkNoWrite("bundle", "bundle", v1alpha1.KindOCISource, "bundle")
}
