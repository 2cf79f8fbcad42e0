package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "syncd",
		Short: "GitOps reconciliation for Kubernetes with Server-Side Apply and explicit field ownership",
		Long: `syncd applies manifests from Git with Server-Side Apply under stable,
per-team field managers, never silently overwriting fields another manager
owns, and reports who changed what when the cluster drifts from Git.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCommand())
	root.AddCommand(newApplyCommand())
	root.AddCommand(newRunCommand())
	root.AddCommand(newDriftCommand())
	root.AddCommand(newRenderCommand())
	root.AddCommand(newPlanCommand())
	root.AddCommand(newGetCommand())
	root.AddCommand(newReconcileCommand())
	root.AddCommand(newSuspendCommand())
	root.AddCommand(newResumeCommand())
	root.AddCommand(newConvertCommand())
	root.AddCommand(newUICommand())
	root.AddCommand(newTreeCommand())
	root.AddCommand(newEventsCommand())
	root.AddCommand(newInstallCommand())
	root.AddCommand(newCheckCommand())
	root.AddCommand(newHistoryCommand())
	root.AddCommand(newImportCommand())
	for _, cmd := range root.Commands() {
		refuseUnknownSubcommands(cmd)
	}
	return root
}

// refuseUnknownSubcommands makes a command that only groups others (syncd
// get, suspend, resume, reconcile) fail, exit 1, when it is given no
// resource or one it does not know, saying which it accepts; cobra would
// print its help and exit 0, which a script reads as success.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		accepted := acceptedResources(cmd)
		if len(args) == 0 {
			return withCode(exitError, fmt.Errorf("%s needs a resource: %s", cmd.CommandPath(), accepted))
		}
		return withCode(exitError, fmt.Errorf("%s: unknown resource %q: use %s", cmd.CommandPath(), args[0], accepted))
	}
}

// acceptedResources lists the subcommands of cmd with their aliases
// ("apps (app) or gitsources (gitsource)").
func acceptedResources(cmd *cobra.Command) string {
	var names []string
	for _, sub := range cmd.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		name := sub.Name()
		if len(sub.Aliases) > 0 {
			name += " (" + strings.Join(sub.Aliases, ", ") + ")"
		}
		names = append(names, name)
	}
	return strings.Join(names, " or ")
}
