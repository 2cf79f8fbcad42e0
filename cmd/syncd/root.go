package main

import (
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
	return root
}
