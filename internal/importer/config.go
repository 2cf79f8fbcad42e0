package importer

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// SecretsDir is where the syncd.yaml form expects the Secrets the
// imported objects name to be mounted: SecretsDir/<secret>/<key>.
const SecretsDir = "/etc/syncd/secrets"

// configFile names the syncd.yaml form in warnings.
const configFile = "syncd.yaml"

// Config is the result as a syncd.yaml: a source per GitSource and an
// app per App. The file names files where the objects name Secrets: the
// Secrets are to be mounted below SecretsDir, which the warnings
// returned say, with anything else the file form cannot say.
func (r *Result) Config() (*config.Config, []Warning) {
	c := &configWriter{cfg: config.Empty(), names: map[string]string{}, renamed: map[string]string{}}
	for _, src := range r.GitSources {
		c.source(src)
	}
	for _, src := range r.HelmSources {
		c.helmSource(src)
	}
	for _, src := range r.OCISources {
		c.ociSource(src)
	}
	for _, app := range r.Apps {
		c.app(app)
	}
	c.checkDependsOn(r)
	return c.cfg, c.warnings
}

// checkDependsOn warns about each app of the file that depends on an
// App the file leaves out (suspended, or of a name another App took):
// the file would not load. A dependency in none of the inputs is warned
// about by Import.
func (c *configWriter) checkDependsOn(r *Result) {
	inFile := map[string]bool{}
	for _, a := range c.cfg.Apps {
		inFile[a.Name] = true
	}
	imported := map[string]bool{}
	for _, a := range r.Apps {
		imported[a.Namespace+"/"+a.Name] = true
	}
	for i, a := range c.cfg.Apps {
		ns, _, _ := strings.Cut(c.names[a.Name], "/")
		for _, dep := range a.DependsOn {
			if !inFile[dep] && imported[ns+"/"+dep] {
				c.warn(fmt.Sprintf("apps[%d] (%s)", i, a.Name), "dependsOn names %s, which is left out of the file (see its warning), and the file does not load while an app depends on one it does not declare: remove %s from dependsOn, or add the app back", dep, dep)
			}
		}
	}
}

// WriteConfig prints cfg as YAML in the order people write it:
// apiVersion, kind, sources, apps, each entry's name first.
func WriteConfig(w io.Writer, cfg *config.Config) error {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\n", cfg.APIVersion, cfg.Kind)
	if err := writeEntries(&b, "sources", cfg.Sources); err != nil {
		return err
	}
	if err := writeEntries(&b, "apps", cfg.Apps); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeEntries writes the list key of entries, each with its name
// first.
func writeEntries[T any](b *strings.Builder, key string, entries []T) error {
	if len(entries) == 0 {
		return nil
	}
	b.WriteString(key + ":\n")
	for _, e := range entries {
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		name, err := yaml.Marshal(m["name"])
		if err != nil {
			return err
		}
		delete(m, "name")
		rest, err := yaml.Marshal(m)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "  - name: %s", name)
		for _, line := range strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n") {
			b.WriteString("    " + line + "\n")
		}
	}
	return nil
}

// configWriter builds the syncd.yaml form.
type configWriter struct {
	cfg      *config.Config
	warnings []Warning
	// names are the app names taken, by the namespace/name of the App
	// that took them.
	names map[string]string
	// renamed are the sources whose name another source of the file
	// took, by "Kind/name".
	renamed map[string]string
}

// warn records a warning about entry (e.g. "apps[0] (web)").
func (c *configWriter) warn(entry, format string, args ...any) {
	c.warnings = append(c.warnings, Warning{File: configFile, Object: entry, Message: fmt.Sprintf(format, args...)})
}

// secretFile is where key of the Secret name is mounted.
func secretFile(name, key string) string { return path.Join(SecretsDir, name, key) }

// source adds a GitSource's source.
func (c *configWriter) source(src *v1alpha1.GitSource) {
	entry := fmt.Sprintf("sources[%d] (%s)", len(c.cfg.Sources), src.Name)
	git := config.GitSource{URL: src.Spec.URL, GitRef: src.Spec.GitRef}
	switch ref := src.Spec.SecretRef; {
	case ref != nil:
		git.Auth = gitAuthFiles(src.Spec.URL, ref.Name)
		c.warn(entry, "mount Secret %s/%s at %s (the file form names files)", src.Namespace, ref.Name, path.Join(SecretsDir, ref.Name))
	case isSSHURL(src.Spec.URL):
		secret := source{kind: v1alpha1.KindGitSource, name: src.Name}.authSecretName()
		git.Auth = gitAuthFiles(src.Spec.URL, secret)
		c.warn(entry, "an ssh URL needs an SSH key and the server's host keys, and %s names no Secret: the file reads them from %s and %s; mount a Secret %s with keys %s and %s at %s", src.Name, git.Auth.SSHKeyFile, git.Auth.KnownHostsFile, secret, v1alpha1.SecretKeyIdentity, v1alpha1.SecretKeyKnownHosts, path.Join(SecretsDir, secret))
	}
	if v := src.Spec.Verify; v != nil {
		git.Verify = &config.GitVerify{Mode: v.Mode, KeysFile: secretFile(v.SecretRef.Name, v1alpha1.SecretKeyKeys), AllowRewrites: v.AllowRewrites}
		c.warn(entry, "mount Secret %s/%s at %s", src.Namespace, v.SecretRef.Name, path.Join(SecretsDir, v.SecretRef.Name))
	}
	c.cfg.Sources = append(c.cfg.Sources, config.Source{Name: src.Name, Git: git})
}

// gitAuthFiles are the files of a Git Secret: a token over HTTPS, an
// SSH key and known hosts over SSH.
func gitAuthFiles(url, secret string) *config.GitAuth {
	if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
		return &config.GitAuth{TokenFile: secretFile(secret, v1alpha1.SecretKeyToken)}
	}
	return &config.GitAuth{SSHKeyFile: secretFile(secret, v1alpha1.SecretKeyIdentity), KnownHostsFile: secretFile(secret, v1alpha1.SecretKeyKnownHosts)}
}

// app adds an App's app; an App of another namespace with the same
// name is not added (app names are unique in a file).
func (c *configWriter) app(app *v1alpha1.App) {
	entry := fmt.Sprintf("apps[%d] (%s)", len(c.cfg.Apps), app.Name)
	if other, ok := c.names[app.Name]; ok {
		c.warn(entry, "App %s/%s has the name of App %s, and app names are unique in a config file: it is left out; import each namespace on its own", app.Namespace, app.Name, other)
		return
	}
	c.names[app.Name] = app.Namespace + "/" + app.Name
	source := app.Spec.SourceRef.Name
	if r, ok := c.renamed[app.Spec.SourceRef.Kind+"/"+source]; ok {
		source = r
	}
	a := config.App{Name: app.Name, Source: source, Namespace: cmpOr(app.Spec.TargetNamespace, app.Namespace), AppSpec: app.Spec.AppSpec}
	a.SubstituteFrom = c.substituteFrom(entry, app)
	a.Decryption = c.decryption(entry, app)
	a.Cluster = c.cluster(entry, app)
	if app.Spec.Suspend {
		c.warn(entry, "suspend has no file form: the app is left out of the file; add it back when it is to run")
		return
	}
	c.cfg.Apps = append(c.cfg.Apps, a)
}

// substituteFrom maps the App's ConfigMaps and Secrets of variables:
// the file reads them from syncd's own namespace.
func (c *configWriter) substituteFrom(entry string, app *v1alpha1.App) []config.SubstituteSource {
	var out []config.SubstituteSource
	for _, r := range app.Spec.SubstituteFrom {
		out = append(out, config.SubstituteSource{Kind: r.Kind, Name: r.Name, Optional: r.Optional, Sensitive: r.Sensitive})
		c.warn(entry, "substituteFrom %s %s is read from syncd's own namespace: copy it there from %s", r.Kind, r.Name, app.Namespace)
	}
	return out
}

// decryption maps the App's decryption: the file reads the keys from
// one file.
func (c *configWriter) decryption(entry string, app *v1alpha1.App) *config.Decryption {
	d := app.Spec.Decryption
	if d == nil {
		return nil
	}
	file := secretFile(d.SecretRef.Name, "keys")
	c.warn(entry, "decryption keys are read from one file, %s: put every key of Secret %s/%s into its key keys and mount it at %s", file, app.Namespace, d.SecretRef.Name, path.Join(SecretsDir, d.SecretRef.Name))
	return &config.Decryption{Provider: d.Provider, KeysFile: file}
}

// cluster maps the App's cluster: the file reads the kubeconfig Secret
// from syncd's own namespace.
func (c *configWriter) cluster(entry string, app *v1alpha1.App) *config.ClusterSpec {
	cl := app.Spec.Cluster
	if cl == nil {
		return nil
	}
	ref := cl.KubeConfig.SecretRef
	c.warn(entry, "the kubeconfig Secret %s is read from syncd's own namespace: copy it there from %s", ref.Name, app.Namespace)
	return &config.ClusterSpec{Name: cl.Name, Context: cl.Context, InventoryNamespace: cl.InventoryNamespace, SecretRef: &config.SecretKeyRef{Name: ref.Name, Key: ref.Key}}
}

// helmSource adds a HelmSource's source. The Secret's credentials are
// files: username and password (the user name is a literal of the
// file, which the warning asks for), or token.
func (c *configWriter) helmSource(src *v1alpha1.HelmSource) {
	entry := fmt.Sprintf("sources[%d] (%s)", len(c.cfg.Sources), src.Name)
	h := &config.HelmSource{URL: src.Spec.URL, Interval: src.Spec.Interval}
	if ref := src.Spec.SecretRef; ref != nil {
		h.Auth = &config.HelmAuth{Username: "<username>", PasswordFile: secretFile(ref.Name, v1alpha1.SecretKeyPassword)}
		c.warn(entry, "mount Secret %s/%s at %s and set auth.username to its username (or, for a token, replace the two with bearerTokenFile; for a CA, add caFile %s)", src.Namespace, ref.Name, path.Join(SecretsDir, ref.Name), secretFile(ref.Name, v1alpha1.SecretKeyCA))
	}
	c.cfg.Sources = append(c.cfg.Sources, config.Source{Name: c.sourceName(entry, v1alpha1.KindHelmSource, src.Name), Helm: h})
}

// ociSource adds an OCISource's source; its Secret is taken to be a
// Docker config (Flux's OCIRepository secretRef).
func (c *configWriter) ociSource(src *v1alpha1.OCISource) {
	entry := fmt.Sprintf("sources[%d] (%s)", len(c.cfg.Sources), src.Name)
	o := &config.OCISource{URL: src.Spec.URL, OCIRef: src.Spec.OCIRef, Insecure: src.Spec.Insecure}
	if ref := src.Spec.SecretRef; ref != nil {
		o.Auth = &config.OCIAuth{DockerConfigFile: secretFile(ref.Name, v1alpha1.SecretKeyDockerConfig)}
		c.warn(entry, "mount Secret %s/%s at %s (for a CA, add caFile %s)", src.Namespace, ref.Name, path.Join(SecretsDir, ref.Name), secretFile(ref.Name, v1alpha1.SecretKeyCA))
	}
	c.cfg.Sources = append(c.cfg.Sources, config.Source{Name: c.sourceName(entry, v1alpha1.KindOCISource, src.Name), OCI: o})
}

// sourceName is name unless a source of another kind took it (a
// GitSource and a HelmSource may share a name, sources of a file may
// not): then name with the kind appended, with a warning.
func (c *configWriter) sourceName(entry, kind, name string) string {
	for _, s := range c.cfg.Sources {
		if s.Name == name {
			renamed := name + "-" + strings.ToLower(strings.TrimSuffix(kind, "Source"))
			c.warn(entry, "the name %s is another source's; this one is named %s, and its apps' source says so", name, renamed)
			c.renamed[kind+"/"+name] = renamed
			return renamed
		}
	}
	return name
}
