package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// storefrontRepo is a plain directory of manifests in the shape of a Flux
// repository with postBuild substitution: per-cluster values come from a
// ConfigMap and a Secret on the cluster, defaults sit in the manifests.
// settings is the ConfigMap's extra data lines (the change adds one).
func storefrontRepo(settings string) map[string][]byte {
	return map[string][]byte{
		"deploy/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: storefront}\n"),
		"deploy/settings.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: storefront-settings, namespace: storefront}
data:
  cluster: ${CLUSTER_NAME}
  region: ${REGION}
  log_level: ${LOG_LEVEL:=info}
` + settings),
		"deploy/database.yaml": []byte(`apiVersion: v1
kind: Secret
metadata: {name: storefront-db, namespace: storefront}
stringData:
  url: postgres://storefront:${DB_PASSWORD}@db.${REGION}.internal:5432/storefront
`),
		"deploy/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: storefront, namespace: storefront}
spec:
  replicas: ${REPLICAS:=2}
  selector: {matchLabels: {app: storefront}}
  template:
    metadata: {labels: {app: storefront}}
    spec:
      containers:
        - name: storefront
          image: ghcr.io/example/storefront:${IMAGE_TAG}
          envFrom: [{configMapRef: {name: storefront-settings}}]
`),
	}
}

// putVariables creates (or replaces) the ConfigMap and the Secret holding
// the app's variables in syncd's namespace, removed when the test ends.
func putVariables(t *testing.T, vars, secretVars map[string]string) {
	t.Helper()
	ctx := context.Background()
	cs := clientset(t).CoreV1()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "storefront-vars", Namespace: inventoryNamespace}, Data: vars}
	if _, err := cs.ConfigMaps(inventoryNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "storefront-secrets", Namespace: inventoryNamespace}, StringData: secretVars}
	if _, err := cs.Secrets(inventoryNamespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, err := range []error{
			cs.ConfigMaps(inventoryNamespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{}),
			cs.Secrets(inventoryNamespace).Delete(context.Background(), sec.Name, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	})
}

// TestJourneySubstitution: an app whose manifests use ${VAR} and
// ${VAR:=default}, with variables from the config (substitute), a
// ConfigMap and a Secret in syncd's namespace (substituteFrom). Render,
// which never talks to the cluster, refuses the app naming the ConfigMap;
// apply and plan read both; the Secret's value is never printed; a commit
// using another variable is planned and applied.
func TestJourneySubstitution(t *testing.T) {
	w := newWorkspace(t)
	const password = "db-Pw-e2e-7Hs2Qx9L"
	putVariables(t, map[string]string{"REGION": "eu-west-1", "IMAGE_TAG": "2.3.1", "FEATURES": "checkout-v2"},
		map[string]string{"DB_PASSWORD": password + "\n"})
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "storefront")
	if _, err := repo.Commit("storefront", storefrontRepo("")); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: storefront
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: storefront-subst
    source: storefront
    path: deploy
    namespace: storefront
    substitute:
      CLUSTER_NAME: e2e-eu
    substituteFrom:
      - kind: ConfigMap
        name: storefront-vars
      - kind: Secret
        name: storefront-secrets
`, repo.URL))

	cl := newCluster(t)
	settings := objectRef{kind: "ConfigMap", namespace: "storefront", name: "storefront-settings"}
	j := &journey{
		w: w, app: "storefront-subst",
		render:    []string{"--path", repo.Work + "/deploy"},
		renderErr: "app storefront-subst: substituteFrom[0] (ConfigMap storefront-vars): syncd render does not read the cluster",
		planned:   []string{"ConfigMap storefront/storefront-settings", "features"},
		secrets:   []string{password},
		change: func() func(*testing.T) {
			if _, err := repo.Commit("storefront: feature flags and the log level from the cluster", storefrontRepo("  features: ${FEATURES}\n  tier: ${TIER:=frontend}\n")); err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) {
				checkData(t, cl, settings, map[string]string{
					"cluster": "e2e-eu", "region": "eu-west-1", "log_level": "info",
					"features": "checkout-v2", "tier": "frontend",
				})
			}
		},
	}
	j.run(t)
	checkSubstituted(t, cl, password)
}

// checkSubstituted fails unless the Deployment and the Secret hold the
// values of the ConfigMap, the default and the Secret variable.
func checkSubstituted(t *testing.T, cl *cluster, password string) {
	t.Helper()
	d, err := cl.get(objectRef{group: "apps", kind: "Deployment", namespace: "storefront", name: "storefront"})
	if err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 || replicas != 2 || containers[0].(map[string]any)["image"] != "ghcr.io/example/storefront:2.3.1" {
		t.Errorf("Deployment storefront: replicas %d, containers %v; want 2 (the default) and image tag 2.3.1 (the ConfigMap's)", replicas, containers)
	}
	checkSecretValue(t, cl, objectRef{kind: "Secret", namespace: "storefront", name: "storefront-db"}, "url",
		"postgres://storefront:"+password+"@db.eu-west-1.internal:5432/storefront")
}

// checkData fails unless the live ConfigMap's data is want.
func checkData(t *testing.T, cl *cluster, ref objectRef, want map[string]string) {
	t.Helper()
	obj, err := cl.get(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s .data (-want +got):\n%s", ref, diff)
	}
}

// intactValues are values YAML reads as something else when they are
// written unquoted (a comment, a tag, a mapping, a flow mapping, leading
// space, a block), keyed by the variable that carries them.
var intactValues = map[string]string{
	"PASSWORD":  "Tr0ub4dor #3 horse",
	"IMPORTANT": "!important",
	"COLON":     "a: b",
	"BRACES":    "{x}",
	"LEADING":   " leading",
	"MULTILINE": "line one\n  line two",
	"PSS":       "p@ss #1!",
}

// TestJourneySubstitutedValuesIntact: variables whose values YAML would
// misread, from the config and from a Secret, used unquoted, quoted and
// inside longer strings, arrive byte for byte in the live objects, and a
// plan afterwards finds nothing to change.
func TestJourneySubstitutedValuesIntact(t *testing.T) {
	w := newWorkspace(t)
	ctx := context.Background()
	cs := clientset(t).CoreV1()
	const password = "Corr3ct #horse !battery: {e2e}"
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "intact-secrets", Namespace: inventoryNamespace}, StringData: map[string]string{"DB_PASSWORD": password + "\n"}}
	if _, err := cs.Secrets(inventoryNamespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Secrets(inventoryNamespace).Delete(context.Background(), sec.Name, metav1.DeleteOptions{})
	})

	var data, substitute strings.Builder
	want := map[string]string{}
	for name, v := range intactValues {
		key := strings.ToLower(name)
		fmt.Fprintf(&data, "  %s-plain: ${%s}\n  %s-quoted: \"${%s}\"\n  %s-inside: x-${%s}-y\n", key, name, key, name, key, name)
		fmt.Fprintf(&substitute, "      %s: %q\n", name, v)
		want[key+"-plain"], want[key+"-quoted"], want[key+"-inside"] = v, v, "x-"+v+"-y"
	}
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "intact")
	if _, err := repo.Commit("values that YAML misreads", map[string][]byte{
		"deploy/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: intact}\n"),
		"deploy/values.yaml":    []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: values, namespace: intact}\ndata:\n" + data.String()),
		"deploy/db.yaml":        []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: intact}\nstringData:\n  password: ${DB_PASSWORD}\n  url: \"postgres://app:${DB_PASSWORD}@db/app\"\n"),
	}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: intact
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: intact-values
    source: intact
    path: deploy
    namespace: intact
    substituteFrom:
      - kind: Secret
        name: intact-secrets
    substitute:
%s`, repo.URL, substitute.String()))

	app := []string{"--config", w.config, "--app", "intact-values", "--cache-dir", w.cache}
	w.must(exitOK, append([]string{"apply"}, app...)...)
	cl := newCluster(t)
	checkData(t, cl, objectRef{kind: "ConfigMap", namespace: "intact", name: "values"}, want)
	db := objectRef{kind: "Secret", namespace: "intact", name: "db"}
	checkSecretValue(t, cl, db, "password", password)
	checkSecretValue(t, cl, db, "url", "postgres://app:"+password+"@db/app")
	w.must(exitOK, append([]string{"plan"}, app...)...)
	w.checkNoSecrets(password)
}
