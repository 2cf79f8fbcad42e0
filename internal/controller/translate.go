package controller

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// Credentials are the files a source's Secrets were written to
// (credentials.go); empty fields for keys the source does not use.
type Credentials struct {
	Username                          string
	TokenFile, SSHKeyFile, KnownHosts string
	KeysFile                          string
	// PasswordFile, DockerConfigFile and CAFile hold a HelmSource's or
	// an OCISource's keys password, .dockerconfigjson and ca.crt.
	PasswordFile, DockerConfigFile, CAFile string
	// DecryptionKeysFile holds the private keys of the App's
	// spec.decryption.secretRef ("" without decryption).
	DecryptionKeysFile string
}

// AppName is the name an App runs under in the library (inventory parent,
// field managers, metrics, logs): "<namespace>-<name>", the default
// field manager being "syncd-<namespace>-<name>". An app name is a DNS
// label (at most MaxAppName characters); when the join is longer, it is
// cut to MaxAppName-9 characters and "-" and 8 letters of a hash of
// namespace/name are appended (appNameHash), so the name stays stable,
// unique and within the limit. Two Apps whose names join to the same
// string, or an App and a file app of that name, collide (names.go).
func AppName(namespace, name string) string {
	joined := namespace + "-" + name
	if len(joined) <= MaxAppName {
		return joined
	}
	prefix := strings.TrimRight(joined[:MaxAppName-1-appNameHashLen], "-")
	return prefix + "-" + appNameHash(namespace, name)
}

// MaxAppName is the longest app name: a DNS label.
const MaxAppName = 63

// appNameHashLen is the length of appNameHash.
const appNameHashLen = 8

// appNameHash is 32 bits of the SHA-256 of "namespace/name", each four
// bits as one of the letters g to v: no digits and no hex, so the field
// manager built from it never looks generated per run to the file
// validation's stability check (a hex or digit run would).
func appNameHash(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	out := make([]byte, 0, appNameHashLen)
	for _, b := range sum[:appNameHashLen/2] {
		out = append(out, 'g'+b>>4, 'g'+b&0x0f)
	}
	return string(out)
}

// Translate turns an App and its GitSource into the one-source, one-app
// config the library runs (TranslateSource).
func Translate(app *v1alpha1.App, src *v1alpha1.GitSource, creds Credentials) (*config.Config, error) {
	return TranslateSource(app, Source{Git: src}, creds)
}

// TranslateSource turns an App and its source (a GitSource, HelmSource
// or OCISource) into the one-source, one-app config the library runs,
// and checks it with the file config's own validation, so an App is
// held to every rule an apps[] entry of syncd.yaml is. Errors name the
// object and its field (spec.path), not the config's.
func TranslateSource(app *v1alpha1.App, src Source, creds Credentials) (*config.Config, error) {
	if err := checkReferences(app, src); err != nil {
		return nil, err
	}
	name := src.Meta().Name
	cfg := &config.Config{
		APIVersion: config.APIVersion,
		Kind:       config.Kind,
		Sources:    []config.Source{configSource(name, src, creds)},
		Apps:       []config.App{appWithKeys(appOf(app, name), app.Spec.Decryption, creds)},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("App %s/%s: encode: %w", app.Namespace, app.Name, err)
	}
	parsed, err := config.Parse(data, "App "+app.Namespace+"/"+app.Name)
	if err != nil {
		return nil, objectErrors(app, src, err)
	}
	return parsed, nil
}

// CheckSource checks a GitSource alone with the file config's
// validation of sources[].git, as Translate does for the Apps using it.
func CheckSource(src *v1alpha1.GitSource, creds Credentials) error {
	return checkSourceObject(Source{Git: src}, creds)
}

// checkSourceObject checks a source alone with the file config's
// validation of its sources[] entry, as TranslateSource does for the
// Apps using it.
func checkSourceObject(src Source, creds Credentials) error {
	cfg := &config.Config{
		APIVersion: config.APIVersion,
		Kind:       config.Kind,
		Sources:    []config.Source{configSource(src.Meta().Name, src, creds)},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", src, err)
	}
	if _, err := config.Parse(data, src.String()); err != nil {
		return objectErrors(&v1alpha1.App{}, src, err)
	}
	return nil
}

// checkReferences refuses what the file config cannot express: a source
// of another kind than the one referenced, a source other than the one
// referenced, a service account of another namespace. Whether a source
// of another namespace may be used is the controller's policy
// (Tenancy), not Translate's.
func checkReferences(app *v1alpha1.App, src Source) error {
	ref := app.Spec.SourceRef
	m := src.Meta()
	switch {
	case ref.Kind != v1alpha1.KindGitSource && ref.Kind != v1alpha1.KindHelmSource && ref.Kind != v1alpha1.KindOCISource:
		return fmt.Errorf("App %s/%s: spec.sourceRef.kind: %q is not a source kind; use GitSource, HelmSource or OCISource", app.Namespace, app.Name, ref.Kind)
	case ref.Kind != src.Kind() || m.Namespace != sourceNamespace(app) || m.Name != ref.Name:
		return fmt.Errorf("App %s/%s: spec.sourceRef: got %s, want %s %s/%s", app.Namespace, app.Name, src, ref.Kind, sourceNamespace(app), ref.Name)
	case app.Spec.ServiceAccountName != "" && app.Spec.TargetNamespace != "" && app.Spec.TargetNamespace != app.Namespace:
		return fmt.Errorf("App %s/%s: spec.serviceAccountName: the service account would be looked up in targetNamespace %q, another namespace; unset targetNamespace or set it to %q", app.Namespace, app.Name, app.Spec.TargetNamespace, app.Namespace)
	}
	return checkDependsOn(app)
}

// checkDependsOn refuses an App that depends on itself or names an App
// twice (admission refuses both too; Translate also serves objects read
// from files). Whether the Apps exist is the controller's to see.
func checkDependsOn(app *v1alpha1.App) error {
	seen := map[string]int{}
	for i, dep := range app.Spec.DependsOn {
		if dep == app.Name {
			return fmt.Errorf("App %s/%s: spec.dependsOn[%d]: the App depends on itself; remove %q from its own dependsOn", app.Namespace, app.Name, i, dep)
		}
		if j, dup := seen[dep]; dup {
			return fmt.Errorf("App %s/%s: spec.dependsOn[%d]: %q is already listed at dependsOn[%d]; remove the repeat", app.Namespace, app.Name, i, dep, j)
		}
		seen[dep] = i
	}
	return nil
}

// gitOf is the sources[].git entry of a GitSource.
func gitOf(s v1alpha1.GitSourceSpec, creds Credentials) config.GitSource {
	g := config.GitSource{URL: s.URL, GitRef: s.GitRef}
	if s.SecretRef != nil {
		g.Auth = &config.GitAuth{Username: creds.Username, TokenFile: creds.TokenFile, SSHKeyFile: creds.SSHKeyFile, KnownHostsFile: creds.KnownHosts}
	}
	if s.Verify != nil {
		g.Verify = &config.GitVerify{Mode: s.Verify.Mode, KeysFile: creds.KeysFile, AllowRewrites: s.Verify.AllowRewrites}
	}
	return g
}

// helmOf is the sources[].helm entry of a HelmSource: the Secret's keys
// are the auth section's files.
func helmOf(s v1alpha1.HelmSourceSpec, creds Credentials) *config.HelmSource {
	h := &config.HelmSource{URL: s.URL, Interval: s.Interval}
	if s.SecretRef == nil {
		return h
	}
	a := config.HelmAuth{
		Username: creds.Username, PasswordFile: creds.PasswordFile, BearerTokenFile: creds.TokenFile,
		DockerConfigFile: creds.DockerConfigFile, CAFile: creds.CAFile,
	}
	if a != (config.HelmAuth{}) {
		h.Auth = &a
	}
	return h
}

// ociOf is the sources[].oci entry of an OCISource: the Secret's keys
// are the auth section's files and caFile.
func ociOf(s v1alpha1.OCISourceSpec, creds Credentials) *config.OCISource {
	o := &config.OCISource{URL: s.URL, OCIRef: s.OCIRef, Insecure: s.Insecure}
	if s.SecretRef == nil {
		return o
	}
	o.CAFile = creds.CAFile
	a := config.OCIAuth{DockerConfigFile: creds.DockerConfigFile, Username: creds.Username, PasswordFile: creds.PasswordFile, TokenFile: creds.TokenFile}
	if a != (config.OCIAuth{}) {
		o.Auth = &a
	}
	return o
}

// appOf is the apps[] entry of an App: the spec fields the two share
// (config.AppSpec) are copied as one, the others mapped. DependsOn is
// left out: it names Apps, which the controller orders itself
// (depends.go), not apps of the one-app config.
func appOf(app *v1alpha1.App, source string) config.App {
	s := app.Spec
	a := config.App{
		Name:           AppName(app.Namespace, app.Name),
		Source:         source,
		Namespace:      s.TargetNamespace,
		SubstituteFrom: substituteSources(s.SubstituteFrom),
		Cluster:        clusterOf(s.Cluster),
		AppSpec:        s.AppSpec,
	}
	a.DependsOn = nil
	if a.Namespace == "" {
		a.Namespace = app.Namespace
	}
	return a
}

// clusterOf is the apps[].cluster entry of an App's spec.cluster; the
// runner reads its Secret in the App's namespace (runnerFor).
func clusterOf(c *v1alpha1.ClusterReference) *config.ClusterSpec {
	if c == nil {
		return nil
	}
	ref := c.KubeConfig.SecretRef
	return &config.ClusterSpec{
		Name: c.Name, Context: c.Context, InventoryNamespace: c.InventoryNamespace,
		SecretRef: &config.SecretKeyRef{Name: ref.Name, Key: ref.Key},
	}
}

// substituteSources are an App's substituteFrom as the file config's
// entries; the runner reads them in the App's namespace (runnerFor).
func substituteSources(refs []v1alpha1.SubstituteReference) []config.SubstituteSource {
	if refs == nil {
		return nil
	}
	out := make([]config.SubstituteSource, len(refs))
	for i, r := range refs {
		out[i] = config.SubstituteSource{Kind: r.Kind, Name: r.Name, Optional: r.Optional, Sensitive: r.Sensitive}
	}
	return out
}

// appWithKeys sets the app's decryption from the App's: the keys file
// is where the controller wrote the Secret's keys.
func appWithKeys(a config.App, d *v1alpha1.Decryption, creds Credentials) config.App {
	if d != nil {
		a.Decryption = &config.Decryption{Provider: d.Provider, KeysFile: creds.DecryptionKeysFile}
	}
	return a
}

// fieldNames maps the config's field names to the objects'. The app's
// own namespace field is mapped in objectField (".namespace" also ends
// helm.namespace, which keeps its name).
var fieldNames = strings.NewReplacer(
	".decryption.keysFile", ".decryption.secretRef",
	".auth.passwordFile", ".secretRef (key "+v1alpha1.SecretKeyPassword+")",
	".auth.bearerTokenFile", ".secretRef (key "+v1alpha1.SecretKeyToken+")",
	".auth.dockerConfigFile", ".secretRef (key "+v1alpha1.SecretKeyDockerConfig+")",
	".auth.caFile", ".secretRef (key "+v1alpha1.SecretKeyCA+")",
	".caFile", ".secretRef (key "+v1alpha1.SecretKeyCA+")",
	".auth.tokenFile", ".secretRef (key "+v1alpha1.SecretKeyToken+")",
	".auth.sshKeyFile", ".secretRef (key "+v1alpha1.SecretKeyIdentity+")",
	".auth.knownHostsFile", ".secretRef (key "+v1alpha1.SecretKeyKnownHosts+")",
	".auth.username", ".secretRef (key "+v1alpha1.SecretKeyUsername+")",
	".auth", ".secretRef",
	".cluster.secretRef", ".cluster.kubeConfig.secretRef",
	".verify.keysFile", ".verify.secretRef (key "+v1alpha1.SecretKeyKeys+")",
)

// objectErrors restates the config's field errors for the objects: each
// names the App or the source and its spec field.
func objectErrors(app *v1alpha1.App, src Source, err error) error {
	var fes config.Errors
	if !errors.As(err, &fes) {
		return fmt.Errorf("App %s/%s: %w", app.Namespace, app.Name, err)
	}
	lines := make([]string, 0, len(fes))
	for _, fe := range fes {
		lines = append(lines, objectField(app, src, fe.Field)+": "+fe.Message)
	}
	return errors.New(strings.Join(lines, "\n"))
}

// objectField names the object and field a config field came from.
func objectField(app *v1alpha1.App, src Source, field string) string {
	if rest, ok := strings.CutPrefix(field, configKey(src)); ok {
		return src.String() + ": spec" + fieldNames.Replace(rest)
	}
	if rest, ok := strings.CutPrefix(field, "apps[0]"); ok {
		switch rest {
		case ".name":
			return "App " + app.Namespace + "/" + app.Name + ": metadata.name"
		case ".source":
			return "App " + app.Namespace + "/" + app.Name + ": spec.sourceRef"
		case ".namespace":
			return "App " + app.Namespace + "/" + app.Name + ": spec.targetNamespace"
		}
		return "App " + app.Namespace + "/" + app.Name + ": spec" + fieldNames.Replace(rest)
	}
	return "App " + app.Namespace + "/" + app.Name + ": " + field
}
