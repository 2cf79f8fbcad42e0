package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"syncd.dev/syncd/internal/appconvert"
	"syncd.dev/syncd/internal/config"
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

Fields with no App equivalent (installsSyncd, substituteFrom files,
sources other than Git) are errors naming the app and the fields:
nothing is printed, keep such an app in the config file (syncd run runs
both).
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
	conv, err := appconvert.Convert(cfg, f.namespace)
	if err != nil {
		return withCode(exitError, err)
	}
	for _, w := range conv.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	if err := conv.Write(cmd.OutOrStdout()); err != nil {
		return withCode(exitError, err)
	}
	return nil
}
