package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
)

// outputFormat is how `syncd get` prints objects.
type outputFormat string

// Output formats of `syncd get`.
const (
	outputTable outputFormat = ""
	outputYAML  outputFormat = "yaml"
	outputJSON  outputFormat = "json"
	// outputWide is the table with more columns (get only).
	outputWide outputFormat = "wide"
	// outputName is kind.group/name per line (get only).
	outputName outputFormat = "name"
)

type getFlags struct {
	objectFlags
	allNamespaces bool
	output        string
	watch         bool
}

// getKind is one kind `syncd get` lists: its resource and its table.
type getKind struct {
	resource schema.GroupVersionResource
	kind     string
	// table returns the header and one row per object (NAMESPACE added
	// by the caller with -A).
	table func(items []unstructured.Unstructured, now time.Time) ([]string, [][]string, error)
	// wide returns the -o wide columns added after the table's.
	wide func(items []unstructured.Unstructured) ([]string, [][]string, error)
}

var (
	getApps       = getKind{resource: v1alpha1.AppResource, kind: v1alpha1.KindApp, table: appTable, wide: appWide}
	getGitSources = getKind{resource: v1alpha1.GitSourceResource, kind: v1alpha1.KindGitSource, table: sourceTable, wide: gitSourceWide}
	getHelm       = getKind{resource: v1alpha1.HelmSourceResource, kind: v1alpha1.KindHelmSource, table: artifactSourceTable, wide: intervalWide}
	getOCI        = getKind{resource: v1alpha1.OCISourceResource, kind: v1alpha1.KindOCISource, table: artifactSourceTable, wide: intervalWide}
)

func newGetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get apps|gitsources|helmsources|ocisources [-n NS | -A] [-o wide|name|yaml|json] [-w]",
		Short: "List App, GitSource, HelmSource or OCISource objects and their status, like kubectl get",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newGetKindCommand(getApps, "apps", "app"))
	cmd.AddCommand(newGetKindCommand(getGitSources, "gitsources", "gitsource"))
	cmd.AddCommand(newGetKindCommand(getHelm, "helmsources", "helmsource"))
	cmd.AddCommand(newGetKindCommand(getOCI, "ocisources", "ocisource"))
	return cmd
}

func newGetKindCommand(k getKind, use string, aliases ...string) *cobra.Command {
	f := &getFlags{}
	cmd := &cobra.Command{
		Use:     use + " [NAME...] [-n NS | -A] [-o wide|name|yaml|json] [-w]",
		Aliases: aliases,
		Short:   fmt.Sprintf("List %s objects (table: name, readiness, revision, age, status message)", k.kind),
		RunE:    func(cmd *cobra.Command, args []string) error { return runGet(cmd, f, k, args) },
	}
	fs := cmd.Flags()
	f.register(fs)
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list the objects of every namespace (adds a NAMESPACE column)")
	fs.StringVarP(&f.output, "output", "o", "", "output format: wide (more columns), name (kind.group/name), yaml or json (default: a table)")
	fs.BoolVarP(&f.watch, "watch", "w", false, "after the listing, print each change of the objects as it happens, until interrupted")
	f.completions(cmd, k.resource)
	return cmd
}

func runGet(cmd *cobra.Command, f *getFlags, k getKind, names []string) error {
	format := outputFormat(f.output)
	switch {
	case !slices.Contains([]outputFormat{outputTable, outputWide, outputName, outputYAML, outputJSON}, format):
		return withCode(exitError, fmt.Errorf("-o %q: use wide, name, yaml or json, or leave it out for a table", f.output))
	case f.allNamespaces && f.namespace != "":
		return withCode(exitError, fmt.Errorf("-A and -n %s both given: use one", f.namespace))
	case f.allNamespaces && len(names) > 0:
		return withCode(exitError, fmt.Errorf("-A with names: a name is looked up in one namespace; use -n"))
	}
	ac, err := f.connectApps()
	if err != nil {
		return withCode(exitError, err)
	}
	ns := ac.namespace
	if f.allNamespaces {
		ns = ""
	}
	items, rv, err := listObjects(cmd.Context(), ac, k, ns, names)
	if err != nil {
		return withCode(exitError, err)
	}
	p := printer{w: cmd.OutOrStdout(), kind: k, format: format, withNamespace: f.allNamespaces}
	if len(items) == 0 && (format == outputTable || format == outputWide) {
		fmt.Fprintln(cmd.ErrOrStderr(), noObjectsMessage(k, ns))
	}
	if err := p.print(items, len(names) == 1 && !f.watch, true); err != nil {
		return withCode(exitError, err)
	}
	if !f.watch {
		return nil
	}
	return watchObjects(cmd.Context(), ac, k, ns, names, rv, p)
}

// printer prints objects of one kind in one format.
type printer struct {
	w             io.Writer
	kind          getKind
	format        outputFormat
	withNamespace bool
}

// print prints items: a table (with its header when header is set),
// names, or objects (one object as itself when single).
func (p printer) print(items []unstructured.Unstructured, single, header bool) error {
	switch p.format {
	case outputYAML, outputJSON:
		if len(items) == 0 && !single && !header {
			return nil
		}
		return writeObjects(p.w, items, p.format, single)
	case outputName:
		for _, u := range items {
			fmt.Fprintf(p.w, "%s.%s/%s\n", strings.ToLower(p.kind.kind), p.kind.resource.Group, u.GetName())
		}
		return nil
	}
	if len(items) == 0 && header {
		return nil
	}
	return writeTable(p.w, p.kind, items, p.withNamespace, p.format == outputWide, header, time.Now())
}

// watchObjects prints each change of the listed objects from rv on, as
// kubectl get -w does: a row (or name, or object) per added, modified or
// deleted object, until the context ends.
func watchObjects(ctx context.Context, ac *appCluster, k getKind, ns string, names []string, rv string, p printer) error {
	opts := metav1.ListOptions{ResourceVersion: rv}
	if len(names) == 1 {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", names[0]).String()
	}
	w, err := ac.resource(k.resource, ns).Watch(ctx, opts)
	if err != nil {
		return withCode(exitError, fmt.Errorf("watch %s: %w", k.resource.Resource, err))
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return withCode(exitError, fmt.Errorf("watch %s: the API server closed the watch; run the command again", k.resource.Resource))
			}
			u, isObject := ev.Object.(*unstructured.Unstructured)
			if !isObject || (len(names) > 1 && !slices.Contains(names, u.GetName())) {
				continue
			}
			if err := p.print([]unstructured.Unstructured{*u}, true, false); err != nil {
				return withCode(exitError, err)
			}
		}
	}
}

// listObjects lists the kind in ns ("" for all), or gets the named
// objects, sorted by namespace and name.
// The resourceVersion returned is where a watch of the list starts
// (the list's; "" after gets of names: the watch starts from now).
func listObjects(ctx context.Context, ac *appCluster, k getKind, ns string, names []string) ([]unstructured.Unstructured, string, error) {
	if len(names) > 0 {
		items := make([]unstructured.Unstructured, 0, len(names))
		for _, name := range names {
			u, err := ac.resource(k.resource, ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, "", fmt.Errorf("%s %s/%s: get: %w", k.kind, ns, name, err)
			}
			items = append(items, *u)
		}
		return items, "", nil
	}
	list, err := ac.resource(k.resource, ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("list %s: %w", k.resource.Resource, err)
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		if items[i].GetNamespace() != items[j].GetNamespace() {
			return items[i].GetNamespace() < items[j].GetNamespace()
		}
		return items[i].GetName() < items[j].GetName()
	})
	return items, list.GetResourceVersion(), nil
}

// noObjectsMessage is kubectl's line for an empty list.
func noObjectsMessage(k getKind, ns string) string {
	if ns == "" {
		return fmt.Sprintf("No %s objects found.", k.kind)
	}
	return fmt.Sprintf("No %s objects found in %s namespace.", k.kind, ns)
}

// writeTable prints the kind's table, with a NAMESPACE column first for
// a listing of every namespace, aligned like kubectl's.
func writeTable(w io.Writer, k getKind, items []unstructured.Unstructured, withNamespace, wide, withHeader bool, now time.Time) error {
	header, rows, err := k.table(items, now)
	if err != nil {
		return withCode(exitError, err)
	}
	if wide {
		more, extra, err := k.wide(items)
		if err != nil {
			return withCode(exitError, err)
		}
		header = append(header, more...)
		for i := range rows {
			rows[i] = append(rows[i], extra[i]...)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if withNamespace {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if withHeader {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for i, row := range rows {
		if withNamespace {
			row = append([]string{items[i].GetNamespace()}, row...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// appTable is the table of Apps: the CRD's printer columns.
func appTable(items []unstructured.Unstructured, now time.Time) ([]string, [][]string, error) {
	rows := make([][]string, 0, len(items))
	for i := range items {
		app, err := decodeApp(&items[i])
		if err != nil {
			return nil, nil, err
		}
		ready, msg := readyColumns(app.Status.Conditions)
		if app.Spec.Suspend {
			msg = suspendedMessage(msg)
		}
		rows = append(rows, []string{app.Name, ready, orNone(app.Status.LastAppliedRevision), age(app.CreationTimestamp, now), msg})
	}
	return []string{"NAME", "READY", "REVISION", "AGE", "STATUS"}, rows, nil
}

// sourceTable is the table of GitSources: the CRD's printer columns,
// the status message included (kubectl shows it with -o wide).
func sourceTable(items []unstructured.Unstructured, now time.Time) ([]string, [][]string, error) {
	rows := make([][]string, 0, len(items))
	for i := range items {
		src, err := decodeSource(&items[i])
		if err != nil {
			return nil, nil, err
		}
		ready, msg := readyColumns(src.Status.Conditions)
		rows = append(rows, []string{src.Name, src.Spec.URL, ready, orNone(src.Status.Revision), age(src.CreationTimestamp, now), msg})
	}
	return []string{"NAME", "URL", "READY", "REVISION", "AGE", "STATUS"}, rows, nil
}

// artifactSource is what the table of HelmSources and OCISources reads
// of either.
type artifactSource struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		URL string `json:"url"`
	} `json:"spec"`
	Status v1alpha1.SourceStatus `json:"status"`
}

// artifactSourceTable is the table of HelmSources or OCISources: the
// CRDs' printer columns, the status message included.
func artifactSourceTable(items []unstructured.Unstructured, now time.Time) ([]string, [][]string, error) {
	rows := make([][]string, 0, len(items))
	for i := range items {
		var src artifactSource
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, &src); err != nil {
			return nil, nil, fmt.Errorf("%s %s/%s: decode: %w", items[i].GetKind(), items[i].GetNamespace(), items[i].GetName(), err)
		}
		ready, msg := readyColumns(src.Status.Conditions)
		rows = append(rows, []string{src.Name, src.Spec.URL, ready, orNone(src.Status.Revision), age(src.CreationTimestamp, now), msg})
	}
	return []string{"NAME", "URL", "READY", "REVISION", "AGE", "STATUS"}, rows, nil
}

// readyColumns are the READY and STATUS cells: the Ready condition's
// status and the first line of its message ("Unknown" before the
// controller wrote one).
func readyColumns(conds []metav1.Condition) (string, string) {
	c := readyCondition(conds)
	if c == nil {
		return string(metav1.ConditionUnknown), "not reconciled yet"
	}
	return string(c.Status), firstLine(c.Message)
}

// suspendedMessage marks a suspended App's status: its conditions are
// the last reconcile's, which may be long past.
func suspendedMessage(msg string) string {
	if msg == "" || msg == "not reconciled yet" {
		return "suspended"
	}
	return "suspended; last: " + msg
}

// firstLine cuts a message at its first line break (a table row is one
// line; -o yaml shows the whole message).
func firstLine(s string) string {
	line, rest, found := strings.Cut(s, "\n")
	if found && strings.TrimSpace(rest) != "" {
		return line + " …"
	}
	return line
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// age is kubectl's AGE column.
func age(created metav1.Time, now time.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(created.Time))
}

// writeObjects prints the objects as kubectl -o yaml|json does: the one
// object asked for by name as itself, a listing as a v1 List.
// managedFields are left out, as kubectl does without
// --show-managed-fields.
func writeObjects(w io.Writer, items []unstructured.Unstructured, format outputFormat, single bool) error {
	objs := make([]any, 0, len(items))
	for i := range items {
		u := items[i].DeepCopy()
		u.SetManagedFields(nil)
		objs = append(objs, u.Object)
	}
	var doc any = map[string]any{"apiVersion": "v1", "kind": "List", "items": objs, "metadata": map[string]any{"resourceVersion": ""}}
	if single {
		doc = objs[0]
	}
	var data []byte
	var err error
	if format == outputJSON {
		data, err = json.MarshalIndent(doc, "", "    ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(doc)
	}
	if err != nil {
		return withCode(exitError, fmt.Errorf("encode: %w", err))
	}
	_, err = w.Write(data)
	return err
}

// appWide are the Apps' -o wide columns: the source, the path in it and
// the cluster the App applies to.
func appWide(items []unstructured.Unstructured) ([]string, [][]string, error) {
	rows := make([][]string, 0, len(items))
	for i := range items {
		app, err := decodeApp(&items[i])
		if err != nil {
			return nil, nil, err
		}
		cluster := "<local>"
		if app.Spec.Cluster != nil {
			cluster = orNone(app.Spec.Cluster.Name)
		}
		rows = append(rows, []string{app.Spec.SourceRef.Kind + "/" + app.Spec.SourceRef.Name, orNone(app.Spec.Path), cluster})
	}
	return []string{"SOURCE", "PATH", "CLUSTER"}, rows, nil
}

// gitSourceWide are the GitSources' -o wide columns: the revision
// followed and how often it is polled.
func gitSourceWide(items []unstructured.Unstructured) ([]string, [][]string, error) {
	rows := make([][]string, 0, len(items))
	for i := range items {
		src, err := decodeSource(&items[i])
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, []string{gitRefText(src.Spec.GitRef), pollText(src.Spec.Interval, src.Spec.Schedule)})
	}
	return []string{"REF", "POLL"}, rows, nil
}

// intervalWide are the HelmSources' and OCISources' -o wide column: how
// often they are polled.
func intervalWide(items []unstructured.Unstructured) ([]string, [][]string, error) {
	rows := make([][]string, 0, len(items))
	for i := range items {
		var src struct {
			Spec struct {
				Interval *metav1.Duration `json:"interval"`
			} `json:"spec"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, &src); err != nil {
			return nil, nil, fmt.Errorf("%s %s/%s: decode: %w", items[i].GetKind(), items[i].GetNamespace(), items[i].GetName(), err)
		}
		rows = append(rows, []string{pollText(src.Spec.Interval, "")})
	}
	return []string{"POLL"}, rows, nil
}

// gitRefText names the revision a GitSource follows (branch main).
func gitRefText(r config.GitRef) string {
	switch {
	case r.Branch != "":
		return "branch " + r.Branch
	case r.Tag != "":
		return "tag " + r.Tag
	case r.Semver != "":
		return "semver " + r.Semver
	case r.Commit != "":
		return "commit " + reconcile.ShortSHA(r.Commit)
	}
	return "<none>"
}

// pollText is "every 5m" or the cron schedule.
func pollText(interval *metav1.Duration, schedule string) string {
	switch {
	case interval != nil:
		return "every " + interval.Duration.String()
	case schedule != "":
		return schedule
	}
	return "<none>"
}
