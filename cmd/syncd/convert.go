package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
)

type convertFlags struct {
	config    string
	namespace string
}

func newConvertCommand() *cobra.Command {
	f := &convertFlags{}
	cmd := &cobra.Command{
		Use:   "convert --config FILE [-n NS]",
		Short: "Print the GitSource and App objects of a config file's sources and apps (migration to App objects)",
		Long: `convert prints, as YAML documents for kubectl apply -f -, one GitSource per
source and one App per app of a syncd config file, in namespace -n
(default "default"). Nothing is sent to a cluster.

Credentials become secretRef placeholders: each names a Secret to create,
and stderr prints the kubectl command that creates it from the files the
config names (the files are not read). An app named <namespace>-<name>
becomes App <name>, so its app name, inventory and field managers stay
the same; another app keeps its name, runs under <namespace>-<name> and
gets spec.manager set to its old default manager, so its fields keep
their owner (stderr says what changes).

Fields with no App equivalent (installsSyncd, and fields the App kind
does not have yet) are errors naming the app and the fields: nothing is
printed, keep such an app in the config file (syncd run runs both).
alerts[] have no object form: a warning says so. Each converted app is
translated back as the controller does and compared with the original;
a difference is an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runConvert(cmd, f) },
	}
	cmd.Flags().StringVar(&f.config, "config", "", "syncd config file to convert (required)")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "default", "namespace of the objects")
	return cmd
}

func runConvert(cmd *cobra.Command, f *convertFlags) error {
	if f.config == "" {
		return withCode(exitError, errors.New("--config is required: the syncd config file to convert"))
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return withCode(exitError, err)
	}
	conv, err := convertConfig(cfg, f.namespace)
	if err != nil {
		return withCode(exitError, err)
	}
	for _, w := range conv.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	if err := conv.write(cmd.OutOrStdout()); err != nil {
		return withCode(exitError, err)
	}
	return nil
}

// conversion is the objects of a config file and what the user must do
// besides applying them.
type conversion struct {
	Sources []*v1alpha1.GitSource
	Apps    []*v1alpha1.App
	// Comments go above an object's document, by "Kind/name".
	Comments map[string][]string
	Warnings []string
}

// Suffixes of the Secret names a converted GitSource's secretRefs get.
const (
	authSecretSuffix       = "-git-auth"
	verifySecretSuffix     = "-git-verify"
	decryptionSecretSuffix = "-sops-keys"
	kubeconfigSecretSuffix = "-kubeconfig"
)

// decryptionSecretKey is the key convert gives the SOPS keys in the
// Secret an App's decryption names (the controller reads every key).
const decryptionSecretKey = "keys"

// convertConfig converts every source and app; errors of every app are
// returned together.
func convertConfig(cfg *config.Config, ns string) (*conversion, error) {
	conv := &conversion{Comments: map[string][]string{}}
	creds := map[string]controller.Credentials{}
	sources := map[string]*v1alpha1.GitSource{}
	var errs []error
	for i, s := range cfg.Sources {
		if kind := s.Kind(); kind != config.SourceGit {
			errs = append(errs, fmt.Errorf("%s: sources[%d] (%s): %s sources have no object kind yet (only GitSource); keep it and its apps in the config file (syncd run runs file apps beside App objects)", cfg.File, i, s.Name, kind))
			continue
		}
		src, c := conv.source(s, ns)
		conv.Sources = append(conv.Sources, src)
		creds[s.Name], sources[s.Name] = c, src
	}
	for i, a := range cfg.Apps {
		app, err := conv.app(a, ns)
		if err == nil {
			err = checkRoundTrip(a, app, sources[a.Source], creds[a.Source])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: apps[%d] (%s): %w", cfg.File, i, a.Name, err))
			continue
		}
		conv.Apps = append(conv.Apps, app)
	}
	if len(cfg.Alerts) > 0 {
		conv.Warnings = append(conv.Warnings, fmt.Sprintf("%s: alerts[] (%d) have no App or GitSource equivalent and are not converted; keep them in the config file of syncd run", cfg.File, len(cfg.Alerts)))
	}
	return conv, errors.Join(errs...)
}

// source converts one source; its credentials become secretRefs, and the
// file paths they came from are returned for the round trip.
func (c *conversion) source(s config.Source, ns string) (*v1alpha1.GitSource, controller.Credentials) {
	g := s.Git
	src := &v1alpha1.GitSource{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindGitSource},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns},
		Spec: v1alpha1.GitSourceSpec{
			URL: g.URL, GitRef: g.GitRef,
		},
	}
	var creds controller.Credentials
	if a := g.Auth; a != nil {
		name := s.Name + authSecretSuffix
		src.Spec.SecretRef = &v1alpha1.LocalObjectReference{Name: name}
		creds = controller.Credentials{Username: a.Username, TokenFile: a.TokenFile, SSHKeyFile: a.SSHKeyFile, KnownHosts: a.KnownHostsFile}
		c.secret(src, name, authKeys(a))
	}
	if v := g.Verify; v != nil {
		name := s.Name + verifySecretSuffix
		src.Spec.Verify = &v1alpha1.GitVerify{Mode: v.Mode, SecretRef: v1alpha1.LocalObjectReference{Name: name}, AllowRewrites: v.AllowRewrites}
		creds.KeysFile = v.KeysFile
		c.secret(src, name, []secretKey{{key: v1alpha1.SecretKeyKeys, file: v.KeysFile}})
	}
	return src, creds
}

// secretKey is one key of a Secret to create: from a file, or (file
// "") from a config value that is not printed.
type secretKey struct {
	key, file, value string
}

// authKeys are the Secret keys of a source's auth.
func authKeys(a *config.GitAuth) []secretKey {
	var keys []secretKey
	for _, k := range []secretKey{
		{key: v1alpha1.SecretKeyToken, file: a.TokenFile},
		{key: v1alpha1.SecretKeyIdentity, file: a.SSHKeyFile},
		{key: v1alpha1.SecretKeyKnownHosts, file: a.KnownHostsFile},
	} {
		if k.file != "" {
			keys = append(keys, k)
		}
	}
	if a.Username != "" {
		keys = append(keys, secretKey{key: v1alpha1.SecretKeyUsername, value: "<auth.username>"})
	}
	return keys
}

// secret records the Secret a GitSource's secretRef names.
func (c *conversion) secret(src *v1alpha1.GitSource, name string, keys []secretKey) {
	c.secretNote(v1alpha1.KindGitSource, src.Namespace, src.Name, name, keys)
}

// secretNote records a Secret an object names: a comment above the
// object and a warning with the command that creates it. Only file
// paths are printed, never what the files hold.
func (c *conversion) secretNote(kind, ns, objName, name string, keys []secretKey) {
	args := []string{"kubectl", "-n", ns, "create", "secret", "generic", name}
	for _, k := range keys {
		if k.file != "" {
			args = append(args, "--from-file="+k.key+"="+k.file)
		} else {
			args = append(args, "--from-literal="+k.key+"="+k.value)
		}
	}
	cmd := strings.Join(args, " ")
	ref := kind + "/" + objName
	c.Comments[ref] = append(c.Comments[ref], fmt.Sprintf("Secret %s/%s must exist before this %s is used: %s", ns, name, kind, cmd))
	c.Warnings = append(c.Warnings, fmt.Sprintf("%s %s/%s names Secret %s/%s, which syncd convert does not create (it never reads credential files): %s", kind, ns, objName, ns, name, cmd))
}

// fileOnlyFields are apps[] fields no App may have: what they allow is
// reserved to the operator's config file.
var fileOnlyFields = map[string]string{
	"installsSyncd": "no App may install syncd itself (docs/apps.md); only the config file's app can",
}

// app converts one app. Its fields are carried over by their JSON names
// (the App's are the file's, but namespace → targetNamespace and source
// → sourceRef), so a field either has an App equivalent of the same name
// or is reported.
func (c *conversion) app(a config.App, ns string) (*v1alpha1.App, error) {
	fields, err := appFields(a)
	if err != nil {
		return nil, err
	}
	if err := noFileOnlyFields(fields); err != nil {
		return nil, err
	}
	delete(fields, "name")
	delete(fields, "source")
	if t, ok := fields["namespace"]; ok {
		delete(fields, "namespace")
		if t != ns {
			fields["targetNamespace"] = t
		}
	} else {
		c.Warnings = append(c.Warnings, fmt.Sprintf("app %s sets no namespace: as an App, namespaced objects that set none go to the App's namespace %s (the file app refused them)", a.Name, ns))
	}
	if err := noSubstituteFiles(a); err != nil {
		return nil, err
	}
	delete(fields, "decryption") // a secretRef, below
	delete(fields, "cluster")    // a secretRef of the App's namespace, below
	if deps, ok := fields["dependsOn"]; ok {
		fields["dependsOn"] = dependsOnObjects(deps, ns)
	}
	spec, err := appSpecOf(fields)
	if err != nil {
		return nil, err
	}
	spec.SourceRef = v1alpha1.SourceReference{Kind: v1alpha1.KindGitSource, Name: a.Source}
	app := &v1alpha1.App{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindApp},
		ObjectMeta: metav1.ObjectMeta{Name: appObjectName(a.Name, ns), Namespace: ns},
		Spec:       spec,
	}
	c.decryption(a, app)
	c.cluster(a, app)
	c.keepManager(a, app)
	return app, nil
}

// noSubstituteFiles refuses substituteFrom files: an App reads
// ConfigMaps and Secrets of its namespace only.
func noSubstituteFiles(a config.App) error {
	var errs []string
	for i, s := range a.SubstituteFrom {
		if s.File != "" {
			errs = append(errs, fmt.Sprintf("substituteFrom[%d].file %s: an App reads substitution values from ConfigMaps and Secrets of its namespace only; put the values in one and name it (kind, name)", i, s.File))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// dependsOnObjects maps the file app names an app depends on to the
// names of their Apps (appObjectName).
func dependsOnObjects(deps any, ns string) []string {
	list, _ := deps.([]any)
	out := make([]string, 0, len(list))
	for _, d := range list {
		out = append(out, appObjectName(fmt.Sprint(d), ns))
	}
	return out
}

// decryption turns the app's SOPS keys file into a secretRef to a Secret
// to create from it (the file is not read).
func (c *conversion) decryption(a config.App, app *v1alpha1.App) {
	if a.Decryption == nil {
		return
	}
	name := app.Name + decryptionSecretSuffix
	app.Spec.Decryption = &v1alpha1.Decryption{Provider: a.Decryption.Provider, SecretRef: v1alpha1.LocalObjectReference{Name: name}}
	c.secretNote(v1alpha1.KindApp, app.Namespace, app.Name, name, []secretKey{{key: decryptionSecretKey, file: a.Decryption.KeysFile}})
}

// cluster turns the app's cluster section into spec.cluster: the
// kubeconfig comes from a Secret of the App's namespace, never syncd's.
// A kubeconfigFile becomes a Secret <App>-kubeconfig to create from it (the
// file is not read); a secretRef keeps its name and key, and must be
// copied from syncd's namespace into the App's. The cluster keeps its
// name (the metrics' cluster label), which the App would otherwise derive
// from the Secret's.
func (c *conversion) cluster(a config.App, app *v1alpha1.App) {
	cl := a.Cluster
	if cl == nil {
		return
	}
	ref := v1alpha1.SecretKeyReference{Name: app.Name + kubeconfigSecretSuffix}
	if cl.SecretRef != nil {
		ref = v1alpha1.SecretKeyReference{Name: cl.SecretRef.Name, Key: cl.SecretRef.Key}
	}
	app.Spec.Cluster = &v1alpha1.ClusterReference{
		Name: a.ClusterName(), Context: cl.Context, InventoryNamespace: cl.InventoryNamespace,
		KubeConfig: v1alpha1.KubeConfigSource{SecretRef: ref},
	}
	if cl.KubeconfigFile != "" {
		c.secretNote(v1alpha1.KindApp, app.Namespace, app.Name, ref.Name, []secretKey{{key: config.DefaultKubeconfigKey, file: cl.KubeconfigFile}})
		return
	}
	c.Warnings = append(c.Warnings, fmt.Sprintf("App %s/%s reads its kubeconfig from Secret %s/%s (key %s), in the App's namespace: the file app read it in syncd's namespace; copy it to namespace %s before the App is used", app.Namespace, app.Name, app.Namespace, ref.Name, cl.SecretRef.KeyOrDefault(), app.Namespace))
}

// appFields is an app's JSON object, without empty objects (the
// config's value-typed policies encode as {} when unset).
func appFields(a config.App) (map[string]any, error) {
	data, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	fields := map[string]any{}
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	for k, v := range fields {
		if m, ok := v.(map[string]any); ok && len(m) == 0 {
			delete(fields, k)
		}
	}
	return fields, nil
}

// noFileOnlyFields refuses the fields reserved to the config file.
func noFileOnlyFields(fields map[string]any) error {
	var errs []string
	for _, k := range sortedFieldNames(fields) {
		if why, ok := fileOnlyFields[k]; ok {
			errs = append(errs, k+": "+why)
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// appSpecOf decodes the fields into an AppSpec; fields it does not have
// are named.
func appSpecOf(fields map[string]any) (v1alpha1.AppSpec, error) {
	var spec v1alpha1.AppSpec
	data, err := json.Marshal(fields)
	if err != nil {
		return spec, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("%s; keep this app in the config file (syncd run runs file apps beside App objects)", noEquivalent(fields, err))
	}
	return spec, nil
}

// noEquivalent names every field the App kind lacks (the decoder stops
// at the first one).
func noEquivalent(fields map[string]any, decodeErr error) string {
	known := map[string]bool{}
	for _, name := range jsonFieldNames(reflect.TypeFor[v1alpha1.AppSpec]()) {
		known[name] = true
	}
	var missing []string
	for _, k := range sortedFieldNames(fields) {
		if !known[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return decodeErr.Error()
	}
	return "no App equivalent yet for " + strings.Join(missing, ", ")
}

// jsonFieldNames lists the JSON names of a struct's fields.
func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" && f.Anonymous {
			names = append(names, jsonFieldNames(f.Type)...) // config.AppSpec
			continue
		}
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

func sortedFieldNames(fields map[string]any) []string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// appObjectName is the App's name for a file app: <name> when the app is
// called <namespace>-<name>, so the app name the controller derives
// (controller.AppName) is the file app's; else the file app's name.
func appObjectName(name, ns string) string {
	if rest, ok := strings.CutPrefix(name, ns+"-"); ok && rest != "" {
		return rest
	}
	return name
}

// keepManager keeps a renamed app's default field manager: without it
// the App's objects would get a second owner (syncd-<namespace>-<name>)
// and the old one would keep owning every field, so a field Git drops
// would never be removed.
func (c *conversion) keepManager(a config.App, app *v1alpha1.App) {
	newName := controller.AppName(app.Namespace, app.Name)
	if newName == a.Name {
		return
	}
	if app.Spec.Manager == "" {
		app.Spec.Manager = a.DefaultManager()
	}
	c.Warnings = append(c.Warnings, fmt.Sprintf("app %s becomes App %s/%s, whose app name is %s: its inventory Secret is syncd-applyset-%s (syncd-applyset-%s is not read: objects only the file app applied are not pruned by the App), and spec.manager is set to %s to keep the fields' owner", a.Name, app.Namespace, app.Name, newName, newName, a.Name, app.Spec.Manager))
}

// checkRoundTrip translates the App back as the controller does and
// compares it with the file app: anything convert lost or changed is an
// error, whatever field it is.
func checkRoundTrip(a config.App, app *v1alpha1.App, src *v1alpha1.GitSource, creds controller.Credentials) error {
	if src == nil {
		return fmt.Errorf("source %q has no GitSource (it is not a Git source)", a.Source)
	}
	if a.Decryption != nil {
		creds.DecryptionKeysFile = a.Decryption.KeysFile
	}
	cfg, err := controller.Translate(app, src, creds)
	if err != nil {
		return err
	}
	want := a
	want.Name = controller.AppName(app.Namespace, app.Name)
	want.Manager = app.Spec.Manager
	if want.Namespace == "" {
		want.Namespace = app.Namespace // the warning of app says so
	}
	// The controller orders Apps by spec.dependsOn itself (App names,
	// mapped by dependsOnObjects); the library's app carries none.
	want.DependsOn = nil
	// The kubeconfig moves into a Secret of the App's namespace (cluster).
	want.Cluster = kubeconfigMoved(a.Cluster, app.Spec.Cluster)
	if changed := changedFields(want, cfg.Apps[0]); len(changed) > 0 {
		return fmt.Errorf("the App does not translate back to the same app (fields %s differ); this is a bug in syncd convert, keep the app in the config file meanwhile", strings.Join(changed, ", "))
	}
	return nil
}

// kubeconfigMoved is the file app's cluster section with its kubeconfig
// where the App names it: the Secret of spec.cluster.
func kubeconfigMoved(file *config.ClusterSpec, obj *v1alpha1.ClusterReference) *config.ClusterSpec {
	if file == nil || obj == nil {
		return file
	}
	out := *file
	out.KubeconfigFile = ""
	out.Name = obj.Name
	out.SecretRef = &config.SecretKeyRef{Name: obj.KubeConfig.SecretRef.Name, Key: obj.KubeConfig.SecretRef.Key}
	return &out
}

// changedFields names the top-level fields whose JSON differs.
func changedFields(want, got config.App) []string {
	w, err := appFields(want)
	if err != nil {
		return []string{err.Error()}
	}
	g, err := appFields(got)
	if err != nil {
		return []string{err.Error()}
	}
	var changed []string
	for k := range w {
		if _, ok := g[k]; !ok {
			g[k] = nil
		}
	}
	for _, k := range sortedFieldNames(g) {
		wj, _ := json.Marshal(w[k])
		gj, _ := json.Marshal(g[k])
		if !bytes.Equal(wj, gj) {
			changed = append(changed, k)
		}
	}
	return changed
}

// write prints the objects as YAML documents, GitSources first.
func (c *conversion) write(w io.Writer) error {
	var docs []string
	for _, src := range c.Sources {
		doc, err := objectYAML(src, c.Comments[v1alpha1.KindGitSource+"/"+src.Name])
		if err != nil {
			return err
		}
		docs = append(docs, doc)
	}
	for _, app := range c.Apps {
		doc, err := objectYAML(app, c.Comments[v1alpha1.KindApp+"/"+app.Name])
		if err != nil {
			return err
		}
		docs = append(docs, doc)
	}
	_, err := io.WriteString(w, strings.Join(docs, "---\n"))
	return err
}

// objectYAML is one object's document without status and the
// bookkeeping a new object does not have, after its comments.
func objectYAML(obj any, comments []string) (string, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return "", err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range comments {
		b.WriteString("# " + c + "\n")
	}
	b.Write(out)
	return b.String(), nil
}
