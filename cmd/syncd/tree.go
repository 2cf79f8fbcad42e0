package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/apptree"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
)

// appRefFlags name an app for the commands that read its state (tree,
// events): an App object in a namespace, or with --config an app of a
// config file.
type appRefFlags struct {
	objectFlags
	config    string
	inventory inventoryFlags
	output    string
}

func (f *appRefFlags) register(cmd *cobra.Command, formats string) {
	fs := cmd.Flags()
	f.objectFlags.register(fs)
	f.inventory.registerNamespace(fs)
	fs.StringVar(&f.config, "config", "", "read the app of this syncd.yaml instead of an App object")
	fs.StringVarP(&f.output, "output", "o", "", "output format: "+formats)
	cmd.ValidArgsFunction = completeAppNames(f)
	_ = cmd.RegisterFlagCompletionFunc("namespace", completeNamespaces(&f.objectFlags))
}

func newTreeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tree app NAME",
		Short: "Show an app's objects by stage and kind, with health, last outcome and field managers",
		Args:  cobra.NoArgs,
	}
	f := &appRefFlags{}
	app := &cobra.Command{
		Use:     "app NAME [-n NS | --config FILE] [-o json|yaml]",
		Aliases: []string{"apps"},
		Short:   "Show the objects of an App (or, with --config, of an app of the file) as a tree",
		Long: `Reads the app's inventory (the objects syncd applied for it) and each
object as the cluster has it now: kstatus health, what syncd last did with it
(applied, apply pending, prune refused and why), and every field manager
that writes it, with its operation (Apply or Update) and subresource.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runTree(cmd, f, args[0]) },
	}
	f.register(app, "json or yaml (default: a tree)")
	cmd.AddCommand(app)
	return cmd
}

func runTree(cmd *cobra.Command, f *appRefFlags, name string) error {
	format, err := f.format("a tree")
	if err != nil {
		return withCode(exitError, err)
	}
	ctx := cmd.Context()
	cl, title, recorded, err := f.loadInventory(ctx, name)
	if err != nil {
		return withCode(exitError, err)
	}
	tree, err := apptree.Build(ctx, recorded, cl.get)
	if err != nil {
		return withCode(exitError, err)
	}
	return writeTree(cmd.OutOrStdout(), title, tree, format)
}

// format is the -o format, refused unless json, yaml or the default
// (named by otherwise, "a tree").
func (f *appRefFlags) format(otherwise string) (outputFormat, error) {
	format := outputFormat(f.output)
	if format != outputTable && format != outputYAML && format != outputJSON {
		return "", fmt.Errorf("-o %q: use json or yaml, or leave it out for %s", f.output, otherwise)
	}
	return format, nil
}

// loadInventory connects, finds the app the flags name and reads its
// inventory; it returns the cluster (to read the members) and the app's
// title for the output.
func (f *appRefFlags) loadInventory(ctx context.Context, name string) (*cluster, string, *inventory.Inventory, error) {
	cl, err := f.kube.connect()
	if err != nil {
		return nil, "", nil, err
	}
	title, appName, err := f.resolve(ctx, cl, name)
	if err != nil {
		return nil, "", nil, err
	}
	inv, err := newInventory(ctx, cl, &f.inventory, nil, true)
	if err != nil {
		return nil, "", nil, err
	}
	defer inv.Stop()
	recorded, err := inv.Load(ctx, appName)
	return cl, title, recorded, err
}

// resolve finds the app the flags name: its title for the output and
// its name in the inventory. An app of another cluster is refused: its
// inventory is on that cluster.
func (f *appRefFlags) resolve(ctx context.Context, cl *cluster, name string) (title, appName string, err error) {
	if f.config != "" {
		return fileApp(f.config, name)
	}
	ac, err := appsOn(cl, f.namespace)
	if err != nil {
		return "", "", err
	}
	app, err := ac.getApp(ctx, ac.namespace, name)
	if err != nil {
		return "", "", err
	}
	if app.Spec.Cluster != nil {
		return "", "", fmt.Errorf("App %s/%s applies to cluster %q: its inventory is on that cluster; run this command with that cluster's kubeconfig, --config and --inventory-namespace %s", app.Namespace, app.Name, app.Spec.Cluster.Name, orDefault(app.Spec.Cluster.InventoryNamespace, "syncd-system"))
	}
	appName = controller.AppName(app.Namespace, app.Name)
	return fmt.Sprintf("App %s/%s (syncd app %s)", app.Namespace, app.Name, appName), appName, nil
}

// fileApp finds the app name in the config file at path.
func fileApp(path, name string) (title, appName string, err error) {
	cfg, err := config.Load(path)
	if err != nil {
		return "", "", err
	}
	for _, a := range cfg.Apps {
		if a.Name != name {
			continue
		}
		if a.IsRemote() {
			return "", "", fmt.Errorf("%s: app %q applies to cluster %q: its inventory is on that cluster; run this command with that cluster's kubeconfig", path, name, a.ClusterName())
		}
		return fmt.Sprintf("app %s (%s)", name, path), name, nil
	}
	return "", "", fmt.Errorf("%s: no app %q; its apps are %s", path, name, appNames(cfg))
}

func appNames(cfg *config.Config) string {
	var names []string
	for _, a := range cfg.Apps {
		names = append(names, a.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// get reads one live object (apptree.Getter).
func (c *cluster) get(ctx context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error) {
	m, err := c.mapper.RESTMapping(ref.GroupKind(), ref.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	ri := c.dynamic.Resource(m.Resource)
	if ref.Namespace != "" {
		return ri.Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	return ri.Get(ctx, ref.Name, metav1.GetOptions{})
}

// writeTree prints the tree as text, JSON or YAML.
func writeTree(w io.Writer, title string, t *apptree.Tree, format outputFormat) error {
	switch format {
	case outputJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(t)
	case outputYAML:
		out, err := yaml.Marshal(t)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	fmt.Fprintf(w, "%s  revision %s\n", title, orDefault(reconcile.ShortSHA(t.Revision), "(none applied yet)"))
	if len(t.Stages) == 0 {
		fmt.Fprintln(w, "no objects recorded: the app has not applied anything yet")
		return nil
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tHEALTH\tLAST ACTION\tMANAGERS")
	for i, s := range t.Stages {
		writeStage(tw, s, i == len(t.Stages)-1)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The stage and kind lines have empty cells, which tabwriter pads.
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if _, err := io.WriteString(w, strings.TrimRight(line, " ")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// writeStage prints one stage, its kinds and objects, with tree
// branches; the columns are health, outcome and managers.
func writeStage(w io.Writer, s apptree.Stage, last bool) {
	branch, indent := branches(last)
	fmt.Fprintf(w, "%sstage %s\t\t\t\n", branch, s.Name)
	for i, k := range s.Kinds {
		kb, kindent := branches(i == len(s.Kinds)-1)
		fmt.Fprintf(w, "%s%s%s\t\t\t\n", indent, kb, kindName(k))
		for j, o := range k.Objects {
			ob, _ := branches(j == len(k.Objects)-1)
			fmt.Fprintf(w, "%s%s%s%s\t%s\t%s\t%s\n", indent, kindent, ob, treeObjectName(o), healthText(o), o.Action(), apptree.ManagersText(o.Managers))
		}
	}
}

// branches returns the branch of an entry and the indent of its
// children.
func branches(last bool) (string, string) {
	if last {
		return "└─ ", "   "
	}
	return "├─ ", "│  "
}

func kindName(k apptree.Kind) string {
	if k.Group == "" {
		return k.Kind
	}
	return k.Kind + "." + k.Group
}

func treeObjectName(o apptree.Object) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// healthText is the health with kstatus's message, first line only.
func healthText(o apptree.Object) string {
	if o.Message == "" || o.Health == "Current" {
		return o.Health
	}
	return o.Health + ": " + firstLine(o.Message)
}
