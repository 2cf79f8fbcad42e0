package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/importer"
)

// Output forms of `syncd import`.
const (
	importObjects = string(importer.ObjectsForm)
	importConfig  = string(importer.ConfigForm)
)

type importFlags struct {
	kube          kubeFlags
	fromCluster   bool
	fromNamespace string
	namespace     string
	output        string
}

// importKinds are the kinds each tool's import reads from a cluster,
// sources before the objects that name them.
var importKinds = map[importer.Tool][]schema.GroupKind{
	importer.Flux: {
		{Group: "source.toolkit.fluxcd.io", Kind: "GitRepository"},
		{Group: "source.toolkit.fluxcd.io", Kind: "HelmRepository"},
		{Group: "source.toolkit.fluxcd.io", Kind: "OCIRepository"},
		{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"},
		{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"},
	},
	importer.ArgoCD: {
		{Group: "argoproj.io", Kind: "Application"},
	},
}

func newImportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import flux|argocd [PATH...] [--from-cluster] [-o yaml|config]",
		Short: "Print the syncd objects (or syncd.yaml) equivalent to Flux or Argo CD objects, warning about every field that has none",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newImportToolCommand(importer.Flux, "Flux Kustomization, GitRepository, HelmRepository, OCIRepository and HelmRelease objects"))
	cmd.AddCommand(newImportToolCommand(importer.ArgoCD, "Argo CD Application objects"))
	return cmd
}

func newImportToolCommand(tool importer.Tool, what string) *cobra.Command {
	f := &importFlags{}
	cmd := &cobra.Command{
		Use:   string(tool) + " [PATH...] [--from-cluster] [-o yaml|config] [-n NS]",
		Short: "Import " + what,
		Long: `import ` + string(tool) + ` reads ` + what + `
from the files and directories given (directories recursively, every .yaml,
.yml and .json file, multi-document; "-" reads standard input, e.g. from
kustomize build), or with --from-cluster from the cluster the kubeconfig
names, and prints the equivalent syncd objects (GitSource, HelmSource,
OCISource, App) as YAML documents for kubectl apply -f -, or with -o config
a syncd.yaml. Nothing is written to a cluster.

Every field that has no syncd equivalent, and everything to do before the
objects work as the imported ones did (a Secret key syncd reads under
another name, a namespace to create), is printed on stderr as a warning
naming the file, the object and the field. Secrets are never read, not
even with --from-cluster: the syncd objects name the same Secrets.
Credentials written in a URL (https://user:token@host/...) are removed
from it and never printed: the source names a Secret for them
(<source>-git-auth, -helm-auth or -oci-auth unless it names one), and a
warning says which keys, or with -o config which files, to put them in.
Objects are read as written: kustomize overlays that patch them are not
applied, and an object without a namespace is imported into default,
with a warning (use --from-cluster, or pipe kustomize build into "-").
A source or an App depended on that is in none of the inputs is warned
about: add its file to the inputs. An object with a field of the wrong
type (url: [a list], prune: "true") or a key given twice is not imported,
with a warning naming the field or the key (never the value).`,
		RunE: func(cmd *cobra.Command, args []string) error { return runImport(cmd, f, tool, args) },
	}
	fs := cmd.Flags()
	f.kube.register(fs)
	fs.BoolVar(&f.fromCluster, "from-cluster", false, "read the objects from the cluster instead of files")
	fs.StringVar(&f.fromNamespace, "from-namespace", "", "with --from-cluster, read only this namespace (default: every namespace)")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the syncd objects (default: each imported object's own)")
	fs.StringVarP(&f.output, "output", "o", importObjects, "output: yaml (syncd objects) or config (a syncd.yaml)")
	return cmd
}

func runImport(cmd *cobra.Command, f *importFlags, tool importer.Tool, paths []string) error {
	if f.output != importObjects && f.output != importConfig {
		return withCode(exitError, fmt.Errorf("-o %q: use yaml (syncd objects) or config (a syncd.yaml)", f.output))
	}
	docs, warnings, err := readImport(cmd.Context(), f, tool, paths, cmd.InOrStdin())
	if err != nil {
		return withCode(exitError, err)
	}
	res := importer.Import(tool, docs, importer.Options{Namespace: f.namespace, Form: importer.Form(f.output)})
	warnings = append(warnings, res.Warnings...)
	if len(res.GitSources) == 0 && len(res.HelmSources) == 0 && len(res.OCISources) == 0 && len(res.Apps) == 0 {
		printImportWarnings(cmd.ErrOrStderr(), warnings)
		return withCode(exitError, nothingImported(tool, importInput(f, paths), len(warnings)))
	}
	err = writeImport(cmd.OutOrStdout(), f, res, &warnings)
	printImportWarnings(cmd.ErrOrStderr(), warnings)
	if err != nil {
		return withCode(exitError, err)
	}
	return nil
}

// nothingImported is the error of an import that wrote nothing: none of
// the tool's objects were found in input, or those found were all left
// out, which the warnings printed before it say.
func nothingImported(tool importer.Tool, input string, warnings int) error {
	if warnings == 0 {
		return fmt.Errorf("no %s objects to import found in %s", tool, input)
	}
	return fmt.Errorf("nothing imported from %s: no %s object could be imported; the %d warning(s) above say why", input, tool, warnings)
}

// readImport reads the documents from the files or the cluster.
func readImport(ctx context.Context, f *importFlags, tool importer.Tool, paths []string, stdin io.Reader) ([]importer.Document, []importer.Warning, error) {
	switch {
	case f.fromCluster && len(paths) > 0:
		return nil, nil, errors.New("--from-cluster reads the cluster: give no PATH")
	case f.fromCluster:
		docs, err := readCluster(ctx, f, tool)
		return docs, nil, err
	case len(paths) == 0:
		return nil, nil, errors.New("nothing to import: give files or directories (- for standard input), or --from-cluster")
	}
	return importer.Read(paths, stdin)
}

// importInput names where the objects were read from: the cluster, or
// the paths given, "-" as standard input.
func importInput(f *importFlags, paths []string) string {
	if f.fromCluster {
		return "the cluster"
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = p
		if p == importer.Stdin {
			names[i] = "standard input"
		}
	}
	return strings.Join(names, ", ")
}

// readCluster lists the tool's kinds the cluster serves (every
// namespace, or --from-namespace); a kind it does not serve is skipped.
func readCluster(ctx context.Context, f *importFlags, tool importer.Tool) ([]importer.Document, error) {
	cl, err := f.kube.connect()
	if err != nil {
		return nil, err
	}
	var docs []importer.Document
	for _, gk := range importKinds[tool] {
		mapping, err := cl.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gk, err)
		}
		list, err := cl.dynamic.Resource(mapping.Resource).Namespace(f.fromNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", mapping.Resource.GroupResource(), err)
		}
		for i := range list.Items {
			docs = append(docs, importer.Document{File: importer.ClusterFile, Object: &list.Items[i]})
		}
	}
	return docs, nil
}

// writeImport prints the objects or the syncd.yaml; the latter adds
// its own warnings.
func writeImport(w io.Writer, f *importFlags, res *importer.Result, warnings *[]importer.Warning) error {
	if f.output == importObjects {
		return res.WriteObjects(w)
	}
	cfg, more := res.Config()
	*warnings = append(*warnings, more...)
	return importer.WriteConfig(w, cfg)
}

// printImportWarnings prints one "warning: " line each.
func printImportWarnings(w io.Writer, warnings []importer.Warning) {
	for _, warn := range warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}
