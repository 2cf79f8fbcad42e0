package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The App object the demo creates: team-a's shop, examples/app/overlays/prod
// of the same repository, applied by the App controller of the same
// daemon beside the syncd.yaml app.
const (
	teamNS   = "team-a"
	teamApp  = "shop"
	teamPath = "examples/app/overlays/prod"
)

// kubectl runs the control plane's kubectl against the demo's cluster,
// printing the command and its output; stdin, when set, is its input.
func (d *demo) kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	fmt.Printf("    $ kubectl %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, filepath.Join(d.env.BinDir, "kubectl"), append([]string{"--kubeconfig", d.env.Kubeconfig}, args...)...)
	cmd.Dir = d.root
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	fmt.Print(indent(out.String()))
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w", args[0], err)
	}
	return out.String(), nil
}

// installCRDs installs the GitSource and App CRDs the way the README
// does (kubectl apply -k manifests/crds), before the daemon starts.
func (d *demo) installCRDs(ctx context.Context) error {
	if _, err := d.kubectl(ctx, "", "apply", "-k", "manifests/crds"); err != nil {
		return err
	}
	_, err := d.kubectl(ctx, "", "wait", "--for=condition=Established", "crd/apps.syncd.dev", "crd/gitsources.syncd.dev", "crd/helmsources.syncd.dev", "crd/ocisources.syncd.dev", "--timeout=60s")
	return err
}

// teamManifest is the GitSource and App team-a creates.
func (d *demo) teamManifest() string {
	return fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: GitSource
metadata:
  name: examples
spec:
  url: %s
  branch: main
  interval: 30s
---
apiVersion: syncd.dev/v1alpha1
kind: App
metadata:
  name: %s
spec:
  sourceRef: {kind: GitSource, name: examples}
  path: %s
`, d.repo.URL, teamApp, teamPath)
}

// appObjects: a team declares a GitSource and an App with kubectl; the
// daemon's App controller applies it, kubectl wait returns, and kubectl
// get apps shows its columns at the head of main.
func (d *demo) appObjects(ctx context.Context) error {
	d.step("App objects: team-a declares a GitSource and an App with kubectl; the same daemon's App controller applies them")
	if _, err := d.kubectl(ctx, "", "create", "namespace", teamNS); err != nil {
		return err
	}
	manifest := d.teamManifest()
	fmt.Print(indent(manifest))
	if _, err := d.kubectl(ctx, manifest, "-n", teamNS, "apply", "-f", "-"); err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "", "-n", teamNS, "wait", "--for=condition=Ready", "app/"+teamApp, "--timeout=90s"); err != nil {
		return err
	}
	ok("kubectl wait --for=condition=Ready app/%s returned", teamApp)
	out, err := d.kubectl(ctx, "", "-n", teamNS, "get", "apps")
	if err != nil {
		return err
	}
	if err := checkAppsTable(out, d.shaC); err != nil {
		return err
	}
	ok("kubectl get apps: NAME READY REVISION AGE STATUS, %s True at %s", teamApp, short(d.shaC))
	dep, err := d.cs.AppsV1().Deployments("web").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the App's Deployment web/web: %w", err)
	}
	manager := "syncd-" + teamNS + "-" + teamApp
	found := false
	for _, mf := range dep.ManagedFields {
		found = found || mf.Manager == manager
	}
	if !found {
		return fmt.Errorf("expected Deployment web/web to have a managedFields entry of %s", manager)
	}
	ok("Deployment web/web is applied under the App's manager %s (syncd-<namespace>-<name>)", manager)
	if err := d.deleteTeamApp(ctx); err != nil {
		return err
	}
	ok("deleting the App pruned its Deployment (finalizer syncd.dev/prune)")
	return nil
}

// checkAppsTable checks kubectl get apps' header and the App's row.
func checkAppsTable(out, revision string) error {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 {
		return fmt.Errorf("expected a header and a row from kubectl get apps, got %q", out)
	}
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "NAME READY REVISION AGE STATUS" {
		return fmt.Errorf("expected the columns NAME READY REVISION AGE STATUS, got %v", got)
	}
	row := strings.Fields(lines[1])
	if len(row) < 5 || row[0] != teamApp || row[1] != "True" || row[2] != revision {
		return fmt.Errorf("expected the row %s True %s …, got %v", teamApp, revision, row)
	}
	return nil
}

// deleteTeamApp deletes team-a's App and waits until its finalizer
// pruned its objects, while the daemon still runs.
func (d *demo) deleteTeamApp(ctx context.Context) error {
	if _, err := d.kubectl(ctx, "", "-n", teamNS, "delete", "app/"+teamApp, "--timeout=60s"); err != nil {
		return err
	}
	return waitFor(ctx, "the App's Deployment pruned", 30*time.Second, func() (bool, error) {
		_, err := d.cs.AppsV1().Deployments("web").Get(ctx, "web", metav1.GetOptions{})
		return err != nil, nil
	})
}
