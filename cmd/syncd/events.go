package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/inventory"
)

func newEventsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events app NAME",
		Short: "List the Kubernetes Events syncd recorded for an app, oldest first",
		Args:  cobra.NoArgs,
	}
	f := &appRefFlags{}
	app := &cobra.Command{
		Use:     "app NAME [-n NS | --config FILE] [-o json|yaml]",
		Aliases: []string{"apps"},
		Short:   "List the Events of an App (or, with --config, of an app of the file)",
		Long: `An App's Events are recorded on the App object; a config file app's on
its inventory Secret (syncd-applyset-NAME in the inventory namespace).
Synced, Pruned, PruneRefused, and for a failure the reason an App gets for
it (SourceFailed, RenderFailed, ApplyFailed, FieldConflicts,
HealthCheckFailed, PruneFailed, ...): docs/operations.md lists them. Repeats are one Event with a
count, as the API server keeps them (for an hour by default).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runEvents(cmd, f, args[0]) },
	}
	f.register(app, "json or yaml (default: a table)")
	cmd.AddCommand(app)
	return cmd
}

func runEvents(cmd *cobra.Command, f *appRefFlags, name string) error {
	format, err := f.format("a table")
	if err != nil {
		return withCode(exitError, err)
	}
	ctx := cmd.Context()
	cl, err := f.kube.connect()
	if err != nil {
		return withCode(exitError, err)
	}
	ref, err := f.eventsObject(ctx, cl, name)
	if err != nil {
		return withCode(exitError, err)
	}
	cs, err := kubernetes.NewForConfig(cl.config)
	if err != nil {
		return withCode(exitError, err)
	}
	events, err := eventsOf(ctx, cs, ref)
	if err != nil {
		return withCode(exitError, err)
	}
	if format != outputTable {
		return writeEventsAs(cmd.OutOrStdout(), events, format)
	}
	if len(events) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "no Events for %s %s/%s (the API server keeps them for an hour by default)\n", ref.Kind, ref.Namespace, ref.Name)
		return nil
	}
	return writeEvents(cmd.OutOrStdout(), events, time.Now())
}

// eventsObject is the object the app's Events are recorded on.
func (f *appRefFlags) eventsObject(ctx context.Context, cl *cluster, name string) (corev1.ObjectReference, error) {
	if f.config != "" {
		_, appName, err := fileApp(f.config, name)
		if err != nil {
			return corev1.ObjectReference{}, err
		}
		return corev1.ObjectReference{Kind: "Secret", Namespace: f.inventory.namespace, Name: inventory.ParentName(appName)}, nil
	}
	ac, err := appsOn(cl, f.namespace)
	if err != nil {
		return corev1.ObjectReference{}, err
	}
	app, err := ac.getApp(ctx, ac.namespace, name)
	if err != nil {
		return corev1.ObjectReference{}, err
	}
	return corev1.ObjectReference{Kind: v1alpha1.KindApp, Namespace: app.Namespace, Name: app.Name, UID: app.UID}, nil
}

// eventsOf lists the Events recorded on ref, oldest first.
func eventsOf(ctx context.Context, cs kubernetes.Interface, ref corev1.ObjectReference) ([]corev1.Event, error) {
	selector := fields.Set{"involvedObject.kind": ref.Kind, "involvedObject.name": ref.Name}
	if ref.UID != "" {
		selector["involvedObject.uid"] = string(ref.UID)
	}
	list, err := cs.CoreV1().Events(ref.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector.AsSelector().String()})
	if err != nil {
		return nil, fmt.Errorf("list the Events of %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	events := list.Items
	sort.SliceStable(events, func(i, j int) bool { return lastSeen(events[i]).Before(lastSeen(events[j])) })
	return events, nil
}

// lastSeen is when an Event last happened, whichever of its time fields
// the recorder set.
func lastSeen(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// writeEvents prints the Events as kubectl events does: last seen,
// type, reason, count and message.
func writeEvents(w io.Writer, events []corev1.Event, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tCOUNT\tMESSAGE")
	for _, e := range events {
		count := e.Count
		if count == 0 {
			count = 1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", age(metav1.NewTime(lastSeen(e)), now), e.Type, e.Reason, count, firstLine(e.Message))
	}
	return tw.Flush()
}

// writeEventsAs prints the Events as a JSON or YAML list.
func writeEventsAs(w io.Writer, events []corev1.Event, format outputFormat) error {
	list := corev1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: events}
	if format == outputJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	out, err := yaml.Marshal(list)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
