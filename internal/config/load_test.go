package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/alertevent"
)

// wantErr is an expected problem: its exact line and field, and a fragment
// of its message.
type wantErr struct {
	Line  int
	Field string
	Msg   string
}

// problems returns the FieldErrors in err, failing the test when err is
// not an Errors value.
func problems(t *testing.T, err error) Errors {
	t.Helper()
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T (%v), want config.Errors", err, err)
	}
	return errs
}

// checkErrors compares got with want: lines and fields exactly, messages by
// fragment. A message that contains its fragment is shown as the fragment
// so the diff only shows real differences.
func checkErrors(t *testing.T, file string, got Errors, want []wantErr) {
	t.Helper()
	gotW := make([]wantErr, len(got))
	for i, fe := range got {
		if fe.File != file {
			t.Errorf("problem %d names file %q, want %q", i, fe.File, file)
		}
		msg := fe.Message
		if i < len(want) && strings.Contains(msg, want[i].Msg) {
			msg = want[i].Msg
		}
		gotW[i] = wantErr{Line: fe.Line, Field: fe.Field, Msg: msg}
	}
	if diff := cmp.Diff(want, gotW); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func ptr[T any](v T) *T { return &v }

func TestLoadValidFull(t *testing.T) {
	got, err := Load("testdata/valid-full.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	in := func(name string) string { return filepath.Join(dir, name) }
	want := &Config{
		APIVersion: APIVersion,
		Kind:       Kind,
		File:       "testdata/valid-full.yaml",
		Sources: []Source{
			{Name: "platform", Git: GitSource{
				URL:    "https://git.example.com/ops/platform.git",
				GitRef: GitRef{Branch: "main", Interval: &metav1.Duration{Duration: 2 * time.Minute}},
				Auth:   &GitAuth{Username: "syncd", TokenFile: in("secrets/platform-token")},
				Verify: &GitVerify{Mode: VerifyHead, KeysFile: in("keys/release-signers.asc")},
			}},
			{Name: "shop", Git: GitSource{
				URL:    "git@git.example.com:shop/deploy.git",
				GitRef: GitRef{Semver: ">=1.4.0 <2.0.0", Schedule: "*/5 * * * *"},
				Auth:   &GitAuth{SSHKeyFile: in("secrets/id_ed25519"), KnownHostsFile: in("secrets/known_hosts")},
				Verify: &GitVerify{Mode: VerifyTag, KeysFile: in("keys/release-signers.asc")},
			}},
			{Name: "fixtures", Git: GitSource{
				URL:    "file:///srv/git/fixtures.git",
				GitRef: GitRef{Commit: "0123456789abcdef0123456789abcdef01234567", Schedule: "@hourly"},
			}},
			{Name: "addons", Git: GitSource{
				URL:    "https://git.example.com/ops/addons.git",
				GitRef: GitRef{Tag: "v2.3.1", Interval: &metav1.Duration{Duration: 10 * time.Minute}},
			}},
			{Name: "bundles", OCI: &OCISource{
				URL:    "oci://registry.example.com/ops/bundles",
				OCIRef: OCIRef{Semver: ">=1.0.0 <2.0.0", Interval: &metav1.Duration{Duration: 5 * time.Minute}},
				Auth:   &OCIAuth{DockerConfigFile: in("secrets/docker-config.json")},
				CAFile: in("keys/registry-ca.pem"),
			}},
			{Name: "charts", Helm: &HelmSource{
				URL:      "https://charts.example.com/stable",
				Interval: &metav1.Duration{Duration: 10 * time.Minute},
				Auth:     &HelmAuth{Username: "robot", PasswordFile: in("secrets/charts-password"), CAFile: in("keys/charts-ca.pem")},
			}},
			{Name: "registry-charts", Helm: &HelmSource{
				URL:      "oci://registry.example.com/ops/charts",
				Interval: &metav1.Duration{Duration: 10 * time.Minute},
				Auth:     &HelmAuth{DockerConfigFile: in("secrets/docker-config.json")},
			}},
		},
		Apps: []App{
			{Name: "platform", Source: "platform", Namespace: "platform", AppSpec: AppSpec{Path: "deploy/prod", Prune: ptr(true), PruneBudget: ptr(50), Adopted: AdoptedOrphan}},
			{
				Name: "shop", Source: "shop", Namespace: "shop",
				AppSpec: AppSpec{
					Path: "overlays/production", Manager: "syncd-shop",
					DependsOn: []string{"platform"},
					Split: []SplitRule{
						{Manager: "syncd-shop-replicas", Kinds: []string{"apps/Deployment", "apps/StatefulSet"}, Paths: []string{".spec.replicas"}},
						{Manager: "syncd-shop-images", Kinds: []string{"apps/Deployment"}, Paths: []string{
							`.spec.template.spec.containers[name="app"].image`,
							".spec.template.spec.initContainers[*].image",
						}},
						{Manager: "syncd-shop-settings", Kinds: []string{"ConfigMap"}, Paths: []string{".data.color", ".metadata.labels.*"}},
					},
					Conflicts: ConflictPolicy{Default: ActionFail, Rules: []ConflictRule{
						{Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.replicas"}, Managers: []string{"kube-controller-manager"}, Action: ActionYield},
						{Managers: []string{"kubectl", "kubectl-*"}, Action: ActionForce},
						{Kinds: []string{"ConfigMap"}, Names: []string{"shop-*"}, Action: ActionForce},
					}},
					Ignore: []IgnoreRule{
						{Kinds: []string{"apps/Deployment"}, Paths: []string{`.spec.template.spec.containers[name="istio-proxy"].image`}},
						{Kinds: []string{"apps/Deployment"}, Names: []string{"shop-*"}, Namespaces: []string{"shop"}, Paths: []string{".spec.template.spec.containers[*].image"}, Managers: []string{"image-updater*"}},
					},
				},
			},
			{Name: "fixtures", Source: "fixtures", AppSpec: AppSpec{Prune: ptr(false), Validate: ptr(false), Migrate: &Migrate{From: []string{"kustomize-controller", "kubectl-client-side-apply"}, Mode: MigrateSameValue}}},
			{
				Name: "addons", Source: "addons", Namespace: "addons",
				SubstituteFrom: []SubstituteSource{
					{File: in("vars/cluster.yaml")},
					{Kind: SubstituteConfigMap, Name: "cluster-vars", Optional: true},
					{Kind: SubstituteSecret, Name: "cluster-secrets"},
				},
				Decryption: &Decryption{Provider: DecryptionSOPS, KeysFile: in("secrets/sops-age.agekey")},
				AppSpec: AppSpec{
					Drift: DriftPolicy{Mode: DriftDetect}, Sensitive: []SensitiveRule{
						{Kinds: []string{"ConfigMap"}, Paths: []string{".data.password"}},
						{Paths: []string{".spec.template.spec.containers[*].env"}},
					},
					Substitute:       map[string]SubstituteValue{"CLUSTER": "prod-eu"},
					SubstituteStrict: ptr(true),
				},
			},
			{
				Name: "ingress", Source: "platform", Namespace: "ingress",
				AppSpec: AppSpec{
					Path: "charts/ingress", Helm: &HelmSpec{
						ReleaseName: "edge",
						ValuesFiles: []string{"charts/ingress/values-prod.yaml"},
						Values:      HelmValues{"controller": map[string]any{"replicaCount": int64(2)}},
						IncludeCRDs: ptr(true),
					},
				},
			},
			{
				Name: "podinfo", Source: "charts", Namespace: "podinfo",
				AppSpec: AppSpec{
					Helm: &HelmSpec{
						Chart: "podinfo", Version: "~6.5", Values: HelmValues{"replicaCount": int64(2)},
					},
				},
			},
			{Name: "shop-chart", Source: "registry-charts", Namespace: "shop", AppSpec: AppSpec{Helm: &HelmSpec{Chart: "shop", Version: ">=0.2.0 <1.0.0"}}},
			{Name: "edge-eu", Source: "platform", Cluster: &ClusterSpec{Name: "edge-eu", KubeconfigFile: in("clusters/edge-eu.kubeconfig"), Context: "edge-eu-admin"}, AppSpec: AppSpec{Path: "edge"}},
			{Name: "edge-us", Source: "platform", Cluster: &ClusterSpec{SecretRef: &SecretKeyRef{Name: "edge-us-kubeconfig", Key: "value"}, InventoryNamespace: "syncd"}, AppSpec: AppSpec{Path: "edge"}},
			{Name: "syncd", Source: "platform", InstallsSyncd: true, AppSpec: AppSpec{Path: "deploy/syncd"}},
		},
		Alerts: []Alert{
			{Name: "ops-chat", Type: AlertSlack, URLFile: in("secrets/slack-url"), Events: []string{alertevent.Conflict, alertevent.Handoff, alertevent.Error}},
			{Name: "teams", Type: AlertMSTeams, URLFile: in("secrets/teams-url")},
			{Name: "discord", Type: AlertDiscord, URLFile: in("secrets/discord-url"), Events: []string{alertevent.Drift}},
			{Name: "audit", Type: AlertWebhook, URLFile: in("secrets/audit-url"), HMACKeyFile: in("secrets/audit-hmac"),
				Events: []string{alertevent.Drift, alertevent.Overlap, alertevent.Conflict, alertevent.Handoff, alertevent.Prune, alertevent.Error, alertevent.Sync}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}
}

func TestParseKeepsRelativeFiles(t *testing.T) {
	data, err := os.ReadFile("testdata/valid-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data, "syncd.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	got := []string{cfg.Sources[0].Git.Auth.TokenFile, cfg.Alerts[3].HMACKeyFile, cfg.File}
	want := []string{"secrets/platform-token", "secrets/audit-hmac", "syncd.yaml"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse resolved files (-want +got):\n%s", diff)
	}
}

func TestLoadResolvesAgainstConfigDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "conf", "syncd.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git:
      url: https://git.example.com/org/repo.git
      branch: main
      interval: 1m
      auth:
        tokenFile: ../secrets/token
alerts:
  - name: hook
    type: webhook
    urlFile: /etc/syncd/hook-url
    hmacKeyFile: hmac
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	got := []string{cfg.Sources[0].Git.Auth.TokenFile, cfg.Alerts[0].URLFile, cfg.Alerts[0].HMACKeyFile}
	want := []string{filepath.Join(dir, "secrets", "token"), "/etc/syncd/hook-url", filepath.Join(dir, "conf", "hmac")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved files (-want +got):\n%s", diff)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load of a missing file = %v, want an error wrapping os.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestLoadInvalid(t *testing.T) {
	tests := map[string]struct {
		file string
		want []wantErr
	}{
		"wrong apiVersion and kind": {"bad-apiversion.yaml", []wantErr{
			{1, "apiVersion", `"syncd/v1" is not supported; set apiVersion: syncd/v1alpha1`},
			{2, "kind", `"Settings" is not supported; set kind: Config`},
		}},
		"missing apiVersion and kind": {"missing-header.yaml", []wantErr{
			{1, "apiVersion", "apiVersion is required"},
			{1, "kind", "kind is required"},
		}},
		"unknown fields": {"unknown-fields.yaml", []wantErr{
			{9, "sources[0].git.auth", "auth sets no credentials"},
			{10, "sources[0].git.auth.tokenfile", `unknown field "tokenfile"; did you mean "tokenFile"?`},
			{14, "apps[0].namespaces", `did you mean "namespace"?`},
			{15, "apps[0].colour", "known fields here: adopted, allowEmpty, allowRewinds, cluster, conflicts, decryption, dependsOn, drift, dryRunAll, handoff, helm, ignore, installsSyncd, manager, migrate, name, namespace, path, prune, pruneBudget, recreate, sensitive, serviceAccountName, source, split, substitute, substituteFrom, substituteStrict, timeout, validate, wait"},
		}},
		"field set twice": {"duplicate-field.yaml", []wantErr{
			{9, "sources[0].git.branch", "set twice (first at line 7)"},
		}},
		"wrong types": {"wrong-types.yaml", []wantErr{
			{5, "sources[0].git", "no revision to follow"},
			{7, "sources[0].git.tag", `got the number 1.10; put it in quotes: "1.10"`},
			{12, "apps[0].prune", `expected true or false, got "yes"`},
			{15, "apps[0].split[0].kinds", "expected a list"},
			{17, "apps[0].conflicts", "expected a mapping of fields (default, rules)"},
		}},
		"durations": {"bad-duration.yaml", []wantErr{
			{5, "sources[0].git", "no polling schedule"},
			{8, "sources[0].git.interval", `"1d" is not a duration`},
			{13, "sources[1].git.interval", "interval must be positive"},
		}},
		"refs": {"refs.yaml", []wantErr{
			{5, "sources[0].git", "set one of branch, tag, semver or commit"},
			{12, "sources[1].git.tag", "branch and tag are both set"},
			{17, "sources[2].git.semver", `">=1.0 <<2" is not a semver constraint`},
			{22, "sources[3].git.commit", "is not a full commit hash"},
			{27, "sources[4].git.branch", `without "refs/heads/": "main"`},
			{32, "sources[5].git.tag", `"v1..0" is not a valid Git tag name`},
		}},
		"schedules": {"schedules.yaml", []wantErr{
			{5, "sources[0].git", "set interval (e.g. 5m) or schedule"},
			{13, "sources[1].git.schedule", "interval and schedule are both set"},
			{18, "sources[2].git.schedule", "expected exactly 5 fields"},
			{23, "sources[3].git.schedule", "unrecognized descriptor"},
			{28, "sources[4].git.schedule", "has a time zone but no schedule"},
		}},
		"urls": {"urls.yaml", []wantErr{
			{5, "sources[0].git.url", "url is required"},
			{10, "sources[1].git.url", "git:// protocol"},
			{15, "sources[2].git.url", "embeds a password or token"},
			{20, "sources[3].git.url", "file:///srv/git/repo.git"},
			{25, "sources[4].git.url", `scheme "ftp" is not supported`},
		}},
		"auth": {"auth.yaml", []wantErr{
			{9, "sources[0].git.auth.knownHostsFile", "knownHostsFile is required with sshKeyFile"},
			{17, "sources[1].git.auth.tokenFile", "only with https:// URLs, but this source has an ssh URL"},
			{24, "sources[2].git.auth.sshKeyFile", "SSH keys work only with ssh URLs"},
			{31, "sources[3].git.auth", "are both set"},
			{40, "sources[4].git.auth.tokenFile", "sent unencrypted over http://"},
			{42, "sources[5].git.auth", "ssh URLs need auth.sshKeyFile and auth.knownHostsFile"},
			{51, "sources[6].git.auth", "auth sets no credentials"},
			{58, "sources[7].git.auth.username", "username is only used with tokenFile"},
		}},
		"verify": {"verify.yaml", []wantErr{
			{10, "sources[0].git.verify.mode", "this source follows a branch; use mode head"},
			{17, "sources[1].git.verify.keysFile", "keysFile is required"},
			{25, "sources[2].git.verify.mode", `"commit" is not a verification mode`},
			{35, "sources[3].git.verify.allowRewrites", "applies to branch sources only"},
		}},
		"decryption": {"decryption.yaml", []wantErr{
			{12, "apps[0].decryption.provider", "provider is required; set it to sops"},
			{17, "apps[1].decryption.provider", `"vault" is not a decryption provider; use sops`},
			{21, "apps[2].decryption.keysFile", "keysFile is required"},
		}},
		"source names": {"source-names.yaml", []wantErr{
			{9, "sources[1].name", `source name "repo" is already used by sources[0]`},
			{14, "sources[2].name", `"My_Repo" is not a valid source name`},
			{19, "sources[3].name", "name is required"},
		}},
		"apps": {"apps.yaml", []wantErr{
			{10, "apps[0].name", `"Web" is not a valid app name`},
			{13, "apps[1].source", `unknown source "elsewhere"; declared sources: repo`},
			{16, "apps[2].path", "leaves the repository"},
			{19, "apps[3].path", "is absolute"},
			{22, "apps[4].path", `not in clean form; write "deploy"`},
			{25, "apps[5].namespace", `"Team_A" is not a valid namespace`},
			{26, "apps[6].name", "name is required"},
			{27, "apps[7].name", `app name "unknown-source" is already used by apps[1]`},
			{34, "apps[9].installsSyncd", `app "installer" (apps[8]) already installs syncd`},
		}},
		"dependsOn": {"depends.yaml", []wantErr{
			{19, "apps[2].dependsOn[0]", "dependency cycle a → b → c → a: none of these apps could ever be applied"},
			{22, "apps[3].dependsOn[0]", `app "self" depends on itself`},
			{22, "apps[3].dependsOn[1]", `app "self" depends on "nowhere", which is no app of this config; declared apps: a, b, c, self, watched, on-watched, x, y`},
			{22, "apps[3].dependsOn[3]", `"a" is already listed at dependsOn[2]`},
			{29, "apps[5].dependsOn[0]", `app "on-watched" depends on "watched", which is in drift mode detect`},
			{29, "apps[5].dependsOn[1]", `an app name is required; list the names of the apps "on-watched" is applied after`},
			{35, "apps[7].dependsOn[0]", "dependency cycle x → y → x"},
		}},
		"split rules": {"split.yaml", []wantErr{
			{13, "apps[0].split[0].manager", "is the app's default manager"},
			{16, "apps[0].split[1].kinds[0]", `without the version: "apps/Deployment"`},
			{16, "apps[0].split[1].kinds[1]", "starting with a capital letter (Deployment)"},
			{16, "apps[0].split[1].kinds[2]", `core kinds have no group`},
			{18, "apps[0].split[1].paths[0]", `a path starts with "."`},
			{19, "apps[0].split[1].paths[1]", "at position 27: expected ']'"},
			{20, "apps[0].split[1].paths[2]", `at position 5: a field name must follow "."`},
			{21, "apps[0].split[2].manager", "also the manager of split[1] of this app"},
			{22, "apps[0].split[2].paths", "paths is required"},
			{23, "apps[0].split[3].manager", "manager is required"},
		}},
		"conflicts": {"conflicts.yaml", []wantErr{
			{15, "apps[1].conflicts.default", `"skip" is not a conflict action; use fail, force or yield`},
			{17, "apps[1].conflicts.rules[0].action", "action is required"},
			{18, "apps[1].conflicts.rules[1].managers[0]", `"kubectl-[a" is not a valid pattern`},
			{20, "apps[1].conflicts.rules[1].action", `"overwrite" is not a conflict action`},
			{21, "apps[1].conflicts.rules[2].paths[0]", "at position 30: a list item is [*]"},
		}},
		"migrate": {"migrate.yaml", []wantErr{
			{14, "apps[1].migrate.from", "from is required"},
			{15, "apps[1].migrate.mode", `"wholesale" is not a migrate mode`},
			{19, "apps[2].migrate.from[0]", `"kubectl-[a" is not a valid pattern`},
			{19, "apps[2].migrate.from[1]", `"syncd-*" matches manager "syncd-web" of app "web"`},
			{19, "apps[2].migrate.from[2]", `"*-handoff" matches manager "syncd-web-handoff" of app "web"`},
		}},
		"managers": {"managers.yaml", []wantErr{
			{17, "apps[1].manager", `manager "syncd-web" is also used by app "web" (apps[0].name)`},
			{19, "apps[1].split[0].manager", `manager "syncd-images" is also used by app "web" (apps[0].split[0].manager); apps "web" and "api"`},
			{21, "apps[2].name", `manager "syncd-build-20261129" looks unstable`},
			{25, "apps[3].manager", `"syncd-jobs-7d9f8b6c5d-x2v4q" looks unstable`},
			{27, "apps[3].split[0].manager", `"a1b2c3d4e5" looks like a hash`},
			{29, "apps[3].split[1].manager", "reserved for the applier's handoff manager"},
			{31, "apps[3].split[2].manager", "belongs to the API server or another tool"},
			{33, "apps[3].split[3].manager", "has characters syncd does not allow"},
			{35, "apps[3].split[4].manager", `"2026-11-29" looks like a date`},
		}},
		"alerts": {"alerts.yaml", []wantErr{
			{4, "alerts[0].hmacKeyFile", "hmacKeyFile is required for webhook alerts"},
			{10, "alerts[1].hmacKeyFile", "only used by webhook alerts; slack alerts are not signed"},
			{11, "alerts[2].name", `alert name "chat" is already used by alerts[1]`},
			{12, "alerts[2].type", `"email" is not an alert type`},
			{14, "alerts[3].urlFile", "urlFile is required"},
			{16, "alerts[3].events[1]", `"deploy" is not an event`},
			{16, "alerts[3].events[2]", `"drift" is already listed at events[0]`},
			{17, "alerts[4].name", "name is required"},
		}},
		"ignore": {"ignore.yaml", []wantErr{
			{13, "apps[0].ignore[0].paths", "at least one field path is required"},
			{14, "apps[0].ignore[1].kinds[0]", `"apps/"`},
			{15, "apps[0].ignore[1].names[0]", `"web-[a" is not a valid pattern`},
			{16, "apps[0].ignore[1].namespaces[0]", `"[b" is not a valid pattern`},
			{17, "apps[0].ignore[1].managers[0]", `"[c" is not a valid pattern`},
			{18, "apps[0].ignore[1].paths[0]", "at position 30: a list item is [*]"},
		}},
		"two documents": {"two-documents.yaml", []wantErr{
			{3, "", "a second YAML document starts here"},
		}},
		"syntax error": {"syntax-error.yaml", []wantErr{
			{4, "", "invalid YAML: did not find expected ',' or '}'"},
		}},
		"not a mapping": {"not-a-mapping.yaml", []wantErr{
			{1, "", "must be a mapping of fields"},
		}},
		"empty": {"empty.yaml", []wantErr{
			{0, "", "the file is empty"},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("testdata", "invalid", tc.file)
			cfg, err := Load(file)
			if cfg != nil {
				t.Errorf("Load returned a config along with the error")
			}
			checkErrors(t, file, problems(t, err), tc.want)
		})
	}
}

// TestAllErrorsReportedTogether checks that decoding problems (unknown
// field, wrong type) and validation problems in every section come back in
// one error, sorted by line, formatted one per line.
func TestAllErrorsReportedTogether(t *testing.T) {
	const file = "testdata/invalid/all-errors.yaml"
	_, err := Load(file)
	errs := problems(t, err)
	checkErrors(t, file, errs, []wantErr{
		{5, "sources[0].git", "no polling schedule"},
		{8, "sources[0].git.intervall", `unknown field "intervall"; did you mean "interval"?`},
		{12, "apps[0].prune", `expected true or false, got "maybe"`},
		{14, "apps[0].conflicts.default", `"skip" is not a conflict action; use fail, force or yield`},
		{16, "apps[1].source", `unknown source "nowhere"`},
		{17, "apps[1].manager", `also used by app "web"`},
		{19, "alerts[0].hmacKeyFile", "hmacKeyFile is required"},
	})
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(errs) {
		t.Fatalf("Error() has %d lines for %d problems:\n%s", len(lines), len(errs), err)
	}
	const want = `testdata/invalid/all-errors.yaml:14: apps[0].conflicts.default: "skip" is not a conflict action; use fail, force or yield`
	if lines[3] != want {
		t.Errorf("Error() line 4 = %q, want %q", lines[3], want)
	}
	var fe FieldError
	if !errors.As(err, &fe) || fe.Line != 5 {
		t.Errorf("errors.As(err, &FieldError) = %+v, want the first problem (line 5)", fe)
	}
}

func TestSecretsNotPrinted(t *testing.T) {
	_, err := Load("testdata/invalid/urls.yaml")
	if err == nil {
		t.Fatal("Load succeeded")
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error shows the password embedded in a URL:\n%v", err)
	}
}

func TestFieldErrorFormat(t *testing.T) {
	tests := map[string]struct {
		err  FieldError
		want string
	}{
		"full":     {FieldError{File: "syncd.yaml", Line: 14, Field: "apps[1].conflicts.default", Message: "bad"}, "syncd.yaml:14: apps[1].conflicts.default: bad"},
		"no line":  {FieldError{File: "syncd.yaml", Field: "kind", Message: "bad"}, "syncd.yaml: kind: bad"},
		"no field": {FieldError{File: "syncd.yaml", Line: 3, Message: "bad"}, "syncd.yaml:3: bad"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}
