package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/install"
)

// installFlags are syncd install's flags.
type installFlags struct {
	kube           kubeFlags
	namespace      string
	version        string
	valueFiles     []string
	set            []string
	dryRun         bool
	output         string
	wait           bool
	timeout        time.Duration
	forceConflicts bool
}

func newInstallCommand() *cobra.Command {
	f := &installFlags{}
	cmd := &cobra.Command{
		Use:   "install [--dry-run] [--version V] [--namespace NS] [--set k=v] [-f values.yaml]",
		Short: "Install or upgrade syncd in the cluster from its embedded Helm chart",
		Long: `install renders syncd's Helm chart (charts/syncd, embedded in this binary)
and applies it with Server-Side Apply as field manager syncd-install: the
CRDs, the namespace (labelled for the restricted Pod Security profile), the
RBAC, the Deployment, its Services, PodDisruptionBudget and NetworkPolicy.
Then it waits until the Deployment has rolled out (--wait=false: not).

The image tag is --version, by default this binary's own version. Values
are the chart's (docs/install.md#values), set with -f files and --set
pairs as helm does. --dry-run (or -o yaml) prints the objects and applies
nothing. A second install with the same values writes nothing: each
object is reported unchanged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInstall(cmd, f)
		},
	}
	f.kube.register(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVarP(&f.namespace, "namespace", "n", install.DefaultNamespace, "namespace to install syncd in")
	fs.StringVar(&f.version, "version", version, "image tag of syncd to install (the default is this binary's own version)")
	fs.StringArrayVarP(&f.valueFiles, "values", "f", nil, "a values file of the chart (repeatable; later files win)")
	fs.StringArrayVar(&f.set, "set", nil, "a chart value, key=value as helm's --set (repeatable; wins over -f)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the objects as YAML and apply nothing")
	fs.StringVarP(&f.output, "output", "o", "", "yaml: print the objects and apply nothing (as --dry-run)")
	fs.BoolVar(&f.wait, "wait", true, "wait until the Deployment has rolled out")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for the rollout")
	fs.BoolVar(&f.forceConflicts, "force-conflicts", false, "take fields another field manager owns with other values (e.g. after kubectl apply -k manifests/)")
	return cmd
}

func runInstall(cmd *cobra.Command, f *installFlags) error {
	if f.output != "" && f.output != "yaml" {
		return withCode(exitError, fmt.Errorf("-o %q: use yaml", f.output))
	}
	objs, err := install.Render(install.RenderOptions{
		Namespace: f.namespace, ImageTag: f.version, ValueFiles: f.valueFiles, Set: f.set,
	})
	if err != nil {
		return withCode(exitError, fmt.Errorf("render charts/syncd: %w", err))
	}
	out := cmd.OutOrStdout()
	if f.dryRun || f.output == "yaml" {
		return writeYAMLStream(out, objs)
	}
	cl, err := f.kube.connect()
	if err != nil {
		return withCode(exitError, err)
	}
	applier := install.NewApplier(cl.dynamic, cl.mapper)
	changes, err := applier.Apply(cmd.Context(), objs, install.ApplyOptions{ForceConflicts: f.forceConflicts})
	for _, c := range changes {
		fmt.Fprintf(out, "%s %s\n", c.Object, c.Action)
	}
	if err != nil {
		return withCode(exitError, fmt.Errorf("%w (nothing after it was applied)", err))
	}
	if !f.wait {
		return nil
	}
	fmt.Fprintf(out, "waiting up to %s for the rollout (--wait=false: don't)\n", f.timeout)
	rollouts, err := applier.WaitRollout(cmd.Context(), objs, install.WaitOptions{Timeout: f.timeout})
	if err != nil {
		return withCode(exitError, err)
	}
	for _, r := range rollouts {
		fmt.Fprintf(out, "%s rolled out\n", r.Object)
	}
	return nil
}

// writeYAMLStream prints objs as one YAML stream, "---" between objects.
func writeYAMLStream(w io.Writer, objs []*unstructured.Unstructured) error {
	for i, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return withCode(exitError, fmt.Errorf("%s: %w", install.Describe(o), err))
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
