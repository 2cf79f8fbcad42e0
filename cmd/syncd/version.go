package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// clientGoVersion returns the version of k8s.io/client-go linked in.
func clientGoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/client-go" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

// versionInfo is what syncd version prints, -o json's keys.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	ClientGo  string `json:"clientGoVersion"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentVersion() versionInfo {
	return versionInfo{Version: version, Commit: commit, ClientGo: clientGoVersion(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o json]",
		Short: "Print syncd's version, commit and the client-go version it uses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			switch output {
			case "":
				fmt.Fprintf(cmd.OutOrStdout(), "syncd %s (commit %s, client-go %s, %s)\n", v.Version, v.Commit, v.ClientGo, v.GoVersion)
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			default:
				return withCode(exitError, fmt.Errorf("-o %q: use json (or no -o for one line)", output))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json (default: one line)")
	return cmd
}
