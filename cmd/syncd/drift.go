package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"syncd.dev/syncd/internal/drift"
)

type driftFlags struct {
	kube     kubeFlags
	config   string
	app      string
	path     string
	cacheDir string
	output   string
	// showIgnored lists the findings ignore rules set aside.
	showIgnored bool
}

func newDriftCommand() *cobra.Command {
	f := &driftFlags{}
	cmd := &cobra.Command{
		Use:   "drift --config FILE [--app NAME] [--path DIR] [-o text|json|markdown]",
		Short: "Report fields syncd declared that another manager took or changed: who, how, when, live vs desired",
		Long: `drift renders each app (or --app) as apply would, reads the live objects
and compares, field by field, what the app's managers declared with the live
managedFields and values, as the API server stores them: a field whose live
value is not Git's text is compared with what a dry-run apply of the app's
fields returns, so zero values the server omits, defaults and normal forms
(1000m = 1) are not drift. Each finding names the field in the API server's
notation, its class (taken-over, shared, value-drift, deleted, unmanaged;
yielded and handoff-pending are information), the current owners with their
operation, subresource and time, and the desired and live values. A field
another manager took that the app's conflict policy yields to it is
yielded, not drift. A field an ignore rule of the app (apps[].ignore)
matches is not drift either; --show-ignored lists those, marked ignored.
Secret values and fields the app marks sensitive are
always redacted. Nothing is written, also for apps in drift mode detect.
An app with serviceAccountName is read as that account: an object it may
not read is a warning ("not readable by system:serviceaccount:..."), with
no finding and none of its values (docs/security.md#tenants).

Exit codes: 0 no drift, 2 drift found, 1 error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDrift(cmd, f) },
	}
	fs := cmd.Flags()
	f.kube.register(fs)
	fs.StringVar(&f.config, "config", "", "syncd.yaml (required)")
	fs.StringVar(&f.app, "app", "", "only this app (default: every app)")
	_ = cmd.RegisterFlagCompletionFunc("app", completeConfigApp(&f.config, nil))
	fs.StringVar(&f.path, "path", "", "render the app from this directory instead of its source")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where Git sources are cached (default ~/.cache/syncd/sources)")
	fs.StringVarP(&f.output, "output", "o", "text", "output format: text, json or markdown")
	fs.BoolVar(&f.showIgnored, "show-ignored", false, "also list the differences the apps' ignore rules set aside, marked ignored (text, json and markdown)")
	return cmd
}

func runDrift(cmd *cobra.Command, f *driftFlags) error {
	if f.config == "" {
		return withCode(exitError, errors.New("--config is required"))
	}
	switch f.output {
	case "text", "json", "markdown":
	default:
		return withCode(exitError, fmt.Errorf("-o %q: use text, json or markdown", f.output))
	}
	runner, apps, _, err := openConfig(cmd.Context(), f.config, f.app, &f.kube, nil, f.cacheDir, 0)
	if err != nil {
		return withCode(exitError, err)
	}
	if f.path != "" && len(apps) != 1 {
		return withCode(exitError, errors.New("--path renders one app: name it with --app"))
	}
	all := &drift.Report{}
	for _, app := range apps {
		rep, err := runner.DetectDrift(cmd.Context(), app, f.path)
		if err != nil {
			return withCode(exitError, err)
		}
		all.Findings = append(all.Findings, rep.Findings...)
		if f.showIgnored {
			all.Ignored = append(all.Ignored, rep.Ignored...)
		}
		all.Warnings = append(all.Warnings, rep.Warnings...)
	}
	out := cmd.OutOrStdout()
	switch f.output {
	case "json":
		err = all.WriteJSON(out)
	case "markdown":
		err = all.WriteMarkdown(out)
	default:
		err = all.WriteText(out)
	}
	if err != nil {
		return withCode(exitError, err)
	}
	if all.HasDrift() {
		return withCode(exitChanges, nil)
	}
	return nil
}
