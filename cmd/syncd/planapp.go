package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
)

// planTarget is the app a plan previews and the config it is part of.
type planTarget struct {
	cfg *config.Config
	app string
	// variablesNS is where substituteFrom's ConfigMaps and Secrets are
	// read: syncd's namespace for a file app (""), the App's own for an
	// App object, as the controller reads them (as the App's service
	// account, when it has one).
	variablesNS string
	// cleanup removes what building the target wrote (credential files).
	cleanup func()
}

// planFileTarget is the target of plan --config FILE --app NAME.
func planFileTarget(f *planFlags) (*planTarget, error) {
	cfg, err := config.Load(f.config)
	if err != nil {
		return nil, err
	}
	return &planTarget{cfg: cfg, app: f.app, cleanup: func() {}}, nil
}

// planObjectTarget is the target of plan --app-file FILE or plan --app
// NAME without --config: the App (and its GitSource) translated the way
// the controller translates them (controller.Translate), so the plan is
// the one the controller's reconcile would apply. With --path the source
// is the checkout and no GitSource is needed.
func planObjectTarget(ctx context.Context, cl *cluster, f *planFlags) (*planTarget, error) {
	app, src, err := planObjects(ctx, cl, f)
	if err != nil {
		return nil, err
	}
	return objectTarget(ctx, cl, app, src, f.path)
}

// objectTarget is an App and its GitSource translated the way the
// controller translates them (controller.Translate), with the Secrets
// they name written to private files. With path the checkout is the
// source and src may be nil.
func objectTarget(ctx context.Context, cl *cluster, app *v1alpha1.App, src *v1alpha1.GitSource, path string) (*planTarget, error) {
	var err error
	if path != "" {
		if src, err = localSource(app, path); err != nil {
			return nil, err
		}
	}
	t := &planTarget{app: controller.AppName(app.Namespace, app.Name), variablesNS: app.Namespace, cleanup: func() {}}
	creds, err := planCredentials(ctx, cl, app, src, t)
	if err != nil {
		t.cleanup()
		return nil, err
	}
	if t.cfg, err = controller.Translate(app, src, creds); err != nil {
		t.cleanup()
		return nil, err
	}
	return t, nil
}

// planObjects reads the App and its GitSource from the files given or
// from the cluster; the GitSource is nil when --path makes it
// unnecessary.
func planObjects(ctx context.Context, cl *cluster, f *planFlags) (*v1alpha1.App, *v1alpha1.GitSource, error) {
	if f.appFile != "" {
		return readAppFiles(f.appFile, f.sourceFile, f.namespace, cl.namespace, f.path != "")
	}
	ac, err := appsOn(cl, f.namespace)
	if err != nil {
		return nil, nil, err
	}
	app, err := ac.getApp(ctx, ac.namespace, f.app)
	if err != nil || f.path != "" {
		return app, nil, err
	}
	src, err := ac.gitSourceOf(ctx, app, "plan --app previews", "preview")
	return app, src, err
}

// gitSourceOf reads the GitSource of app. An App of another kind of
// source is refused: the commands that translate an App themselves
// (what, e.g. "plan --app previews") read GitSources only; the error
// says how to do (verb) it with a config file instead.
func (a *appCluster) gitSourceOf(ctx context.Context, app *v1alpha1.App, what, verb string) (*v1alpha1.GitSource, error) {
	ref := app.Spec.SourceRef
	if ref.Kind != v1alpha1.KindGitSource {
		return nil, fmt.Errorf("App %s/%s: its source is a %s; %s Apps of GitSources only; %s this one with --config, declaring its source as a sources[] entry and the App as an apps[] entry of a syncd.yaml", app.Namespace, app.Name, ref.Kind, what, verb)
	}
	ns := ref.Namespace
	if ns == "" {
		ns = app.Namespace
	}
	return a.getSource(ctx, ns, ref.Name)
}

// readAppFiles reads the App of --app-file and its GitSource, from the
// same file or --source-file. The App's namespace is its own, else -n,
// else the kubeconfig context's; the GitSource's defaults to the App's.
func readAppFiles(appFile, sourceFile, flagNS, contextNS string, pathGiven bool) (*v1alpha1.App, *v1alpha1.GitSource, error) {
	var docs objectDocs
	for _, file := range []string{appFile, sourceFile} {
		if file == "" {
			continue
		}
		if err := docs.read(file); err != nil {
			return nil, nil, err
		}
	}
	if len(docs.apps) != 1 {
		return nil, nil, fmt.Errorf("%s: want exactly one App (kind: App, apiVersion: %s), found %d", appFile, v1alpha1.GroupVersion, len(docs.apps))
	}
	app := docs.apps[0]
	switch {
	case app.Namespace != "" && flagNS != "" && app.Namespace != flagNS:
		return nil, nil, fmt.Errorf("%s: App %s is in namespace %s, but -n says %s; drop -n or change metadata.namespace", appFile, app.Name, app.Namespace, flagNS)
	case app.Namespace == "" && flagNS != "":
		app.Namespace = flagNS
	case app.Namespace == "":
		app.Namespace = contextNS
	}
	src, err := docs.sourceOf(app)
	if err != nil && !pathGiven {
		return nil, nil, fmt.Errorf("%s: %w; add the GitSource to the file or give it with --source-file, or preview a checkout with --path", appFile, err)
	}
	return app, src, nil
}

// objectDocs are the App and GitSource documents of some files.
type objectDocs struct {
	apps    []*v1alpha1.App
	sources []*v1alpha1.GitSource
}

// read adds the documents of one YAML or JSON file (several documents
// separated by ---). Unknown fields are errors: nothing admission
// would reject may pass here unnoticed.
func (d *objectDocs) read(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		if err := d.add(file, i+1, doc); err != nil {
			return err
		}
	}
}

// add decodes one document as an App or a GitSource; AlertProviders and
// Alerts are passed over.
func (d *objectDocs) add(file string, n int, doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return fmt.Errorf("%s: document %d: %w", file, n, err)
	}
	if tm.APIVersion == "" && tm.Kind == "" {
		return nil // an empty document
	}
	if tm.APIVersion != v1alpha1.GroupVersion.String() {
		return fmt.Errorf("%s: document %d: apiVersion %q kind %q: want apiVersion %s, kind App or GitSource", file, n, tm.APIVersion, tm.Kind, v1alpha1.GroupVersion)
	}
	switch tm.Kind {
	case v1alpha1.KindApp:
		app := &v1alpha1.App{}
		if err := yaml.UnmarshalStrict(doc, app); err != nil {
			return fmt.Errorf("%s: document %d (App): %w", file, n, err)
		}
		d.apps = append(d.apps, app)
	case v1alpha1.KindGitSource:
		src := &v1alpha1.GitSource{}
		if err := yaml.UnmarshalStrict(doc, src); err != nil {
			return fmt.Errorf("%s: document %d (GitSource): %w", file, n, err)
		}
		d.sources = append(d.sources, src)
	case v1alpha1.KindAlertProvider, v1alpha1.KindAlert:
		// Where an App's events go changes nothing a plan shows; syncd
		// convert prints them beside the Apps.
	default:
		return fmt.Errorf("%s: document %d: kind %q: want App or GitSource", file, n, tm.Kind)
	}
	return nil
}

// sourceOf returns the GitSource the App references.
func (d *objectDocs) sourceOf(app *v1alpha1.App) (*v1alpha1.GitSource, error) {
	ref := app.Spec.SourceRef
	for _, src := range d.sources {
		if src.Namespace == "" {
			src.Namespace = app.Namespace
		}
		if src.Name == ref.Name && (ref.Namespace == "" || ref.Namespace == src.Namespace) {
			return src, nil
		}
	}
	return nil, fmt.Errorf("no GitSource %s for App %s/%s (spec.sourceRef)", ref.Name, app.Namespace, app.Name)
}

// localSource is the GitSource of a plan with --path: the checkout
// stands for the repository, which is never read, so neither its URL
// nor its credentials matter (a CI job previewing a pull request needs
// no read access to the Secrets).
func localSource(app *v1alpha1.App, dir string) (*v1alpha1.GitSource, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("--path %s: %w", dir, err)
	}
	src := &v1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Name: app.Spec.SourceRef.Name, Namespace: app.Namespace},
		Spec: v1alpha1.GitSourceSpec{
			URL:    "file://" + filepath.ToSlash(abs),
			GitRef: config.GitRef{Branch: "main", Interval: &metav1.Duration{Duration: time.Hour}},
		},
	}
	return src, nil
}

// planCredentials writes the Secrets the GitSource and the App name
// (credentials, verification keys, SOPS keys) to a private temporary
// directory, which t.cleanup removes, as the controller does.
func planCredentials(ctx context.Context, cl *cluster, app *v1alpha1.App, src *v1alpha1.GitSource, t *planTarget) (controller.Credentials, error) {
	var creds controller.Credentials
	sourceSecrets := src.Spec.SecretRef != nil || src.Spec.Verify != nil
	if !sourceSecrets && app.Spec.Decryption == nil {
		return creds, nil
	}
	cs, err := kubernetes.NewForConfig(cl.config)
	if err != nil {
		return creds, err
	}
	secrets := controller.ClientSecrets{Client: cs}
	dir, err := os.MkdirTemp("", "syncd-plan-credentials-")
	if err != nil {
		return creds, err
	}
	t.cleanup = func() { _ = os.RemoveAll(dir) }
	if sourceSecrets {
		if creds, err = controller.WriteCredentials(ctx, secrets, dir, src); err != nil {
			return creds, err
		}
	}
	creds.DecryptionKeysFile, err = controller.WriteDecryptionKeys(ctx, secrets, dir, app)
	return creds, err
}
