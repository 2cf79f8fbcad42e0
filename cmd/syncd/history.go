package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
)

func newHistoryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history app NAME",
		Short: "List an app's last applies: time, revision, result, objects created, configured and pruned",
		Args:  cobra.NoArgs,
	}
	f := &appRefFlags{}
	app := &cobra.Command{
		Use:     "app NAME [-n NS | --config FILE] [-o json|yaml]",
		Aliases: []string{"apps"},
		Short:   "List the last applies of an App (or, with --config, of an app of the file), oldest first",
		Long: fmt.Sprintf(`The app's inventory keeps its last %d applies (annotation
%s on its inventory Secret), whichever way the app was
declared: each apply that changed something, or whose revision or result
differs from the one before. A sync that found nothing to do adds no line.`, inventory.MaxHistory, inventory.AnnotationHistory),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runHistory(cmd, f, args[0]) },
	}
	f.register(app, "json or yaml (default: a table)")
	cmd.AddCommand(app)
	return cmd
}

func runHistory(cmd *cobra.Command, f *appRefFlags, name string) error {
	format, err := f.format("a table")
	if err != nil {
		return withCode(exitError, err)
	}
	ctx := cmd.Context()
	_, title, recorded, err := f.loadInventory(ctx, name)
	if err != nil {
		return withCode(exitError, err)
	}
	history := recorded.History
	if history == nil {
		history = []inventory.HistoryEntry{}
	}
	switch format {
	case outputJSON:
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(history)
	case outputYAML:
		out, err := yaml.Marshal(history)
		if err != nil {
			return err
		}
		_, err = cmd.OutOrStdout().Write(out)
		return err
	}
	if len(history) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "no applies recorded for %s yet\n", title)
		return nil
	}
	return writeHistory(cmd.OutOrStdout(), history, time.Now())
}

// writeHistory prints the applies oldest first, as helm history does.
func writeHistory(w io.Writer, history []inventory.HistoryEntry, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tAGE\tREVISION\tRESULT\tCREATED\tCONFIGURED\tPRUNED\tNOTE")
	for _, e := range history {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", e.Time.UTC().Format(time.RFC3339), age(e.Time, now),
			orDefault(reconcile.ShortSHA(e.Revision), "-"), e.Result, e.Created, e.Configured, e.Pruned+e.Orphaned, e.Note())
	}
	return tw.Flush()
}
