package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyLargeFirstSyncJudgesConfigMaps: the built binary's first
// sync of 40 new ConfigMaps. While an admission policy refuses one of
// them (cm-37, by its data key), syncd sees the policy, dry-runs every
// ConfigMap and refuses the stage before writing anything, naming the
// refused one; once the policy is gone, the first sync creates all 40
// with 16 dry runs (the rest are judged without one), and with dryRunAll
// with 40. An app running as a tenant's service account that may write
// only its namespace's ConfigMaps (not list the cluster's admission
// objects) is judged as syncd's apps are: syncd reads the cluster's facts,
// the account's own rights are asked as the account. `syncd run` says how
// its apps were validated in syncd_validations_total.
func TestJourneyLargeFirstSyncJudgesConfigMaps(t *testing.T) {
	w := newWorkspace(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "judged")
	files := map[string][]byte{}
	for i := range 40 {
		files[fmt.Sprintf("app/cm-%d.yaml", i)] = fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, labels: {tier: web}}\ndata: {key: v%d}\n", i, i)
	}
	// The key a policy of the test environment refuses (DenyForbiddenKey).
	files["app/cm-37.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-37, labels: {tier: web}}\ndata: {forbidden: x}\n")
	if _, err := repo.Commit("forty maps", files); err != nil {
		t.Fatal(err)
	}
	config := func(ns string, dryRunAll bool, extra string) {
		w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: judged
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: judged-%s
    source: judged
    path: app
    namespace: %s
    dryRunAll: %t
%s`, repo.URL, ns, ns, dryRunAll, extra))
	}

	t.Run("while a policy sees ConfigMaps", func(t *testing.T) {
		ns := "judged-refused"
		ensureNamespace(t, ns)
		env.DenyForbiddenKey(t, ns, "probe", nil)
		config(ns, false, "")
		before := configMapDryRuns(t)
		r := w.must(1, "apply", "--config", w.config, "--cache-dir", w.cache)
		for _, want := range []string{"ConfigMap " + ns + "/cm-37 failed", testenv.DenyMessage, "nothing of stage namespaced or of later stages was applied"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("output lacks %q\n%s", want, r)
			}
		}
		if got := configMapDryRuns(t) - before; got != 40 {
			t.Errorf("%v dry runs of ConfigMaps while a policy sees them, want 40", got)
		}
		list, err := clientset(t).CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "tier=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Errorf("%d ConfigMaps written by a refused stage, want none", len(list.Items))
		}
	})
	// The policy is gone with the subtest.
	for _, tc := range []struct {
		ns        string
		dryRunAll bool
		tenant    bool
		want      float64
	}{{"judged-local", false, false, 16}, {"judged-dry-run-all", true, false, 40}, {"judged-tenant", false, true, 16}} {
		ensureNamespace(t, tc.ns)
		extra := ""
		if tc.tenant {
			tenantMayWriteConfigMaps(t, tc.ns, "deployer")
			extra = "    serviceAccountName: deployer\n"
		}
		config(tc.ns, tc.dryRunAll, extra)
		before := configMapDryRuns(t)
		w.must(0, "apply", "--config", w.config, "--cache-dir", w.cache)
		if got := configMapDryRuns(t) - before; got != tc.want {
			t.Errorf("%s (dryRunAll %v, tenant %v): %v dry runs of ConfigMaps, want %v", tc.ns, tc.dryRunAll, tc.tenant, got, tc.want)
		}
		list, err := clientset(t).CoreV1().ConfigMaps(tc.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "tier=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 40 {
			t.Errorf("%s: %d ConfigMaps created, want 40", tc.ns, len(list.Items))
		}
	}

	t.Run("syncd run counts how it validated", func(t *testing.T) {
		const ns = "judged-daemon"
		ensureNamespace(t, ns)
		config(ns, false, "")
		before := configMapDryRuns(t)
		d := w.startDaemon()
		d.waitApplied("judged-"+ns, func(rev string) bool { return rev != "" })
		families := scrape(t, d.addr)
		for how, want := range map[string]float64{"dry_run": 16, "judged": 24, "known": 0} {
			if got := value(families, "syncd_validations_total", map[string]string{"app": "judged-" + ns, "how": how}); got != want {
				t.Errorf("syncd_validations_total{how=%q} %v, want %v", how, got, want)
			}
		}
		if got := configMapDryRuns(t) - before; got != 16 {
			t.Errorf("the API server counted %v dry runs of ConfigMaps, want 16 as syncd says", got)
		}
	})
}

// tenantMayWriteConfigMaps creates the service account ns/name with the
// rights a team's deployer has on ConfigMaps of its own namespace, and
// nothing cluster-wide.
func tenantMayWriteConfigMaps(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := env.ServiceAccountConfig(ctx, ns, name); err != nil {
		t.Fatal(err)
	}
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch"}}}
	if err := env.Grant(ctx, ns, name, ns, rules); err != nil {
		t.Fatal(err)
	}
}

// configMapDryRuns is the API server's count of dry-run requests on
// ConfigMaps so far (apiserver_request_total).
func configMapDryRuns(t *testing.T) float64 {
	t.Helper()
	body, err := clientset(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("API server /metrics: %v", err)
	}
	return value(families, "apiserver_request_total", map[string]string{"resource": "configmaps", "dry_run": "All"})
}
