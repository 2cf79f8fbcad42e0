package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
)

const convertConfigYAML = `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git:
      url: https://git.example.com/team-a/deploy.git
      branch: main
      interval: 5m
      auth: {username: ci-bot, tokenFile: token}
      verify: {mode: head, keysFile: keys.asc}
  - name: tags
    git: {url: "ssh://git@git.example.com/team-a/tags.git", semver: ">=1.0.0", schedule: "*/10 * * * *", auth: {sshKeyFile: id_ed25519, knownHostsFile: known_hosts}}
apps:
  - name: team-a-web
    source: repo
    path: apps/web
    namespace: web
    prune: false
    pruneBudget: 10
    adopted: delete
    handoff: release
    recreate: true
    validate: false
    wait: true
    timeout: 2m
    manager: web-deployer
    split:
      - manager: web-release
        kinds: [apps/Deployment]
        paths: [".spec.template.spec.containers[*].image"]
    conflicts:
      default: force
      rules: [{managers: [hpa-controller], paths: [.spec.replicas], action: yield}]
    migrate: {from: [kubectl-client-side-apply], mode: same-value}
    drift: {mode: correct}
    sensitive: [{kinds: [ConfigMap], paths: [.data.password]}]
    ignore: [{kinds: [apps/Deployment], paths: [.spec.replicas]}]
    substitute: {cluster: prod}
    substituteFrom: [{kind: ConfigMap, name: vars}, {kind: Secret, name: creds, optional: true, sensitive: true}]
    substituteStrict: false
    decryption: {provider: sops, keysFile: age.key}
  - name: api
    source: tags
    path: api
    serviceAccountName: deployer
    namespace: team-a
    dependsOn: [team-a-web]
`

// offline runs a command line that takes no cluster flags.
func offline(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// TestConvertRoundTrip: the objects convert prints translate back
// (controller.Translate, as the controller runs them) to the config's
// apps: every field, the app names and default managers included.
func TestConvertRoundTrip(t *testing.T) {
	dir := writeFiles(t, map[string]string{"syncd.yaml": convertConfigYAML, "token": "s3cret-token-value\n"})
	r := offline(t, "convert", "--config", filepath.Join(dir, "syncd.yaml"), "-n", "team-a")
	if r.code != exitOK {
		t.Fatalf("convert: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(out, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	var docs objectDocs
	if err := docs.read(out); err != nil {
		t.Fatalf("convert's output does not decode strictly: %v\n%s", err, r.stdout)
	}
	cfg, err := config.Load(filepath.Join(dir, "syncd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The Secrets would be written where the controller writes them; the
	// round trip gives them the files the config named.
	creds := map[string]controller.Credentials{
		"repo": {Username: "ci-bot", TokenFile: filepath.Join(dir, "token"), KeysFile: filepath.Join(dir, "keys.asc")},
		"tags": {SSHKeyFile: filepath.Join(dir, "id_ed25519"), KnownHosts: filepath.Join(dir, "known_hosts")},
	}
	var got []config.App
	gotSources := map[string]config.GitSource{}
	for _, app := range docs.apps {
		src, err := docs.sourceOf(app)
		if err != nil {
			t.Fatal(err)
		}
		c := creds[src.Name]
		if app.Spec.Decryption != nil {
			c.DecryptionKeysFile = filepath.Join(dir, "age.key")
		}
		back, err := controller.Translate(app, src, c)
		if err != nil {
			t.Fatalf("App %s/%s does not translate: %v", app.Namespace, app.Name, err)
		}
		got = append(got, back.Apps[0])
		gotSources[src.Name] = back.Sources[0].Git
	}
	want := slices.Clone(cfg.Apps)
	want[1].Name = "team-a-api"   // App team-a/api
	want[1].Manager = "syncd-api" // kept, so the fields keep their owner
	want[1].DependsOn = nil       // the controller's, by App name:
	if diff := cmp.Diff([]string{"web"}, docs.apps[1].Spec.DependsOn); diff != "" {
		t.Errorf("App api's dependsOn (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("apps after convert and Translate (-want +got):\n%s", diff)
	}
	for _, s := range cfg.Sources {
		if diff := cmp.Diff(s.Git, gotSources[s.Name]); diff != "" {
			t.Errorf("source %s after convert and Translate (-want +got):\n%s", s.Name, diff)
		}
	}
	names := []string{}
	for _, app := range docs.apps {
		names = append(names, app.Name)
	}
	if diff := cmp.Diff([]string{"web", "api"}, names); diff != "" {
		t.Errorf("App names (-want +got):\n%s", diff)
	}

	// Credentials: the command to create them, the user name, no secret values.
	for _, want := range []string{
		"kubectl -n team-a create secret generic repo-git-auth --from-file=token=" + filepath.Join(dir, "token") + " --from-literal=username=ci-bot",
		"kubectl -n team-a create secret generic repo-git-verify --from-file=keys=" + filepath.Join(dir, "keys.asc"),
		"kubectl -n team-a create secret generic web-sops-keys --from-file=keys=" + filepath.Join(dir, "age.key"),
		"kubectl -n team-a create secret generic tags-git-auth --from-file=identity=" + filepath.Join(dir, "id_ed25519") + " --from-file=known_hosts=" + filepath.Join(dir, "known_hosts"),
	} {
		if !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, "# Secret ") || !strings.Contains(r.stdout, want) {
			t.Errorf("convert does not say, in a comment and a warning: %s\nstdout:\n%s\nstderr:\n%s", want, r.stdout, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, "app api becomes App team-a/api, whose app name is team-a-api") {
		t.Errorf("no warning about app api's new app name:\n%s", r.stderr)
	}
	// The token is secret; the user name (ci-bot) is not, and the
	// command above gives it.
	for _, secret := range []string{"s3cret-token-value"} {
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("convert printed %q", secret)
		}
	}
}

// TestConvertRefuses: fields without an App equivalent are errors naming
// the app and the fields, and nothing is printed.
func TestConvertRefuses(t *testing.T) {
	base := "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n  - name: repo\n    git: {url: https://git.example.com/r.git, branch: main, interval: 5m}\napps:\n  - name: other\n    source: repo\n"
	tests := map[string]struct {
		config  string
		code    int
		stderr  string
		nothing bool
	}{
		"installsSyncd": {
			config: base + "  - name: syncd\n    source: repo\n    installsSyncd: true\n",
			code:   exitError, nothing: true,
			stderr: "apps[1] (syncd): installsSyncd: no App may install syncd itself",
		},
		"helm valuesSource": {
			config: "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n  - name: repo\n    git: {url: https://git.example.com/r.git, branch: main, interval: 5m}\n  - name: charts\n    helm: {url: https://charts.example.com, interval: 5m}\napps:\n  - name: chart\n    source: charts\n    namespace: default\n    helm: {chart: web, version: 1.0.0, valuesSource: repo, valuesFiles: [values/prod.yaml]}\n",
			code:   exitError, nothing: true,
			stderr: "apps[0] (chart): helm.valuesSource repo: an App reads values files from its chart or its own source only",
		},
		"file source": {
			config: "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n  - name: local\n    git: {url: file:///srv/git/app.git, branch: main, interval: 5m}\napps:\n  - name: web\n    source: local\n    namespace: default\n",
			code:   exitError, nothing: true,
			stderr: "sources[0] (local): a GitSource may not read syncd's own disk (a file URL; docs/security.md); keep it and its apps in the config file",
		},
		"substituteFrom file": {
			config: base + "  - name: web\n    source: repo\n    namespace: default\n    substituteFrom: [{file: vars.env}]\n",
			code:   exitError, nothing: true,
			stderr: "an App reads substitution values from ConfigMaps and Secrets of its namespace only",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"syncd.yaml": tc.config, "url": "https://hooks.example.com/x\n"})
			r := offline(t, "convert", "--config", filepath.Join(dir, "syncd.yaml"))
			want := tc.stderr
			if r.code != tc.code || !strings.Contains(r.stderr, want) || (tc.nothing && r.stdout != "") {
				t.Errorf("code %d, want %d and %q on stderr (stdout empty: %v):\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, want, tc.nothing, r.stdout, r.stderr)
			}
		})
	}
}

// TestConvertArtifactSources: a Helm repository source and an OCI
// source become a HelmSource and an OCISource, their credential files
// one Secret each to create (the files are not read), and their apps
// Apps referencing them by kind.
func TestConvertArtifactSources(t *testing.T) {
	dir := writeFiles(t, map[string]string{"syncd.yaml": `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: charts
    helm: {url: https://charts.example.com/stable, interval: 10m, auth: {username: robot, passwordFile: charts-password, caFile: charts-ca.pem}}
  - name: bundle
    oci: {url: oci://registry.example.com/ops/bundle, semver: ">=1.0.0", interval: 5m, auth: {dockerConfigFile: docker.json}}
apps:
  - name: web
    source: charts
    namespace: team-a
    helm: {chart: web, version: "1.x", values: {replicas: 2}}
  - name: base
    source: bundle
    namespace: team-a
    path: deploy
`, "charts-password": "s3cret-password\n"})
	r := offline(t, "convert", "--config", filepath.Join(dir, "syncd.yaml"), "-n", "team-a")
	if r.code != exitOK {
		t.Fatalf("convert: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"kind: HelmSource\nmetadata:\n  name: charts\n  namespace: team-a\nspec:\n  interval: 10m0s\n  secretRef:\n    name: charts-helm-auth\n  url: https://charts.example.com/stable\n",
		"kind: OCISource\nmetadata:\n  name: bundle\n  namespace: team-a\nspec:\n  interval: 5m0s\n  secretRef:\n    name: bundle-oci-auth\n  semver: '>=1.0.0'\n  url: oci://registry.example.com/ops/bundle\n",
		"sourceRef:\n    kind: HelmSource\n    name: charts\n",
		"sourceRef:\n    kind: OCISource\n    name: bundle\n",
		"kubectl -n team-a create secret generic charts-helm-auth --from-file=password=" + filepath.Join(dir, "charts-password") + " --from-file=ca.crt=" + filepath.Join(dir, "charts-ca.pem") + " --from-literal=username=robot",
		"kubectl -n team-a create secret generic bundle-oci-auth --from-file=.dockerconfigjson=" + filepath.Join(dir, "docker.json"),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("convert's output lacks\n%s\nstdout:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret-password") {
		t.Errorf("convert printed the password file's content")
	}
}

// TestConvertCluster: an app's cluster section becomes spec.cluster with
// the kubeconfig in a Secret of the App's namespace: a kubeconfigFile as
// a Secret <App>-kubeconfig to create from the file (never read), a
// secretRef kept by name and key with a warning to copy it out of
// syncd's namespace. The cluster keeps the name it had (its context here).
func TestConvertCluster(t *testing.T) {
	dir := writeFiles(t, map[string]string{"syncd.yaml": `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git: {url: "https://git.example.com/deploy.git", branch: main, interval: 5m}
apps:
  - name: eu
    source: repo
    namespace: web
    cluster: {kubeconfigFile: prod-eu.yaml, context: admin, inventoryNamespace: syncd-inv}
  - name: us
    source: repo
    namespace: web
    cluster: {name: prod-us, secretRef: {name: us-kubeconfig, key: config}}
`, "prod-eu.yaml": "not-a-kubeconfig-but-never-read\n"})
	r := offline(t, "convert", "--config", filepath.Join(dir, "syncd.yaml"), "-n", "team-a")
	if r.code != exitOK {
		t.Fatalf("convert: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(out, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	var docs objectDocs
	if err := docs.read(out); err != nil {
		t.Fatalf("convert's output does not decode strictly: %v\n%s", err, r.stdout)
	}
	got := map[string]*v1alpha1.ClusterReference{}
	for _, app := range docs.apps {
		got[app.Name] = app.Spec.Cluster
	}
	want := map[string]*v1alpha1.ClusterReference{
		"eu": {Name: "admin", Context: "admin", InventoryNamespace: "syncd-inv", KubeConfig: v1alpha1.KubeConfigSource{SecretRef: v1alpha1.SecretKeyReference{Name: "eu-kubeconfig"}}},
		"us": {Name: "prod-us", KubeConfig: v1alpha1.KubeConfigSource{SecretRef: v1alpha1.SecretKeyReference{Name: "us-kubeconfig", Key: "config"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec.cluster (-want +got):\n%s", diff)
	}
	for _, want := range []string{
		"kubectl -n team-a create secret generic eu-kubeconfig --from-file=value=" + filepath.Join(dir, "prod-eu.yaml"),
		"App team-a/us reads its kubeconfig from Secret team-a/us-kubeconfig (key config), in the App's namespace",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no warning %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "never-read") {
		t.Error("convert printed the kubeconfig file's content")
	}
}

// TestConvertAlerts: each alerts[] entry becomes an AlertProvider and an
// Alert of its name (every App of the namespace, its events), its URL
// and HMAC key files one Secret to create, whose values are never read
// or printed; plan --app-file takes the output whole.
func TestConvertAlerts(t *testing.T) {
	const url, key = "https://hooks.example.com/services/T0/B0/s3cret-hook", "hmac-s3cret-key"
	dir := writeFiles(t, map[string]string{"syncd.yaml": convertAlertsYAML, "chat-url": url + "\n", "audit-url": url + "\n", "audit-key": key + "\n"})
	r := offline(t, "convert", "--config", filepath.Join(dir, "syncd.yaml"), "-n", "team-a")
	if r.code != exitOK {
		t.Fatalf("convert: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"kubectl -n team-a create secret generic chat-alert --from-file=address=" + filepath.Join(dir, "chat-url"),
		"kubectl -n team-a create secret generic audit-alert --from-file=address=" + filepath.Join(dir, "audit-url") + " --from-file=hmacKey=" + filepath.Join(dir, "audit-key"),
	} {
		if !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, want) {
			t.Errorf("convert does not say, in a comment and a warning: %s\nstdout:\n%s\nstderr:\n%s", want, r.stdout, r.stderr)
		}
	}
	wantDocs := []string{`apiVersion: syncd.dev/v1alpha1
kind: AlertProvider
metadata:
  name: chat
  namespace: team-a
spec:
  secretRef:
    name: chat-alert
  type: slack
`, `apiVersion: syncd.dev/v1alpha1
kind: AlertProvider
metadata:
  name: audit
  namespace: team-a
spec:
  secretRef:
    name: audit-alert
  type: webhook
`, `apiVersion: syncd.dev/v1alpha1
kind: Alert
metadata:
  name: chat
  namespace: team-a
spec:
  eventSources:
  - kind: App
    name: '*'
  providerRef:
    name: chat
`, `apiVersion: syncd.dev/v1alpha1
kind: Alert
metadata:
  name: audit
  namespace: team-a
spec:
  eventSources:
  - kind: App
    name: '*'
  events:
  - drift
  - overlap
  providerRef:
    name: audit
`}
	for _, want := range wantDocs {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("convert's output lacks the document\n%s\nstdout:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Errorf("convert printed a value of a credential file:\n%s%s", r.stdout, r.stderr)
	}
	var docs objectDocs
	out := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(out, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := docs.read(out); err != nil || len(docs.apps) != 1 {
		t.Errorf("plan --app-file's reader on convert's output: %v, %d Apps; want no error and 1", err, len(docs.apps))
	}
}

const convertAlertsYAML = `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git: {url: https://git.example.com/r.git, branch: main, interval: 5m}
apps:
  - name: web
    source: repo
    namespace: team-a
alerts:
  - name: chat
    type: slack
    urlFile: chat-url
  - name: audit
    type: webhook
    urlFile: audit-url
    hmacKeyFile: audit-key
    events: [drift, overlap]
`
