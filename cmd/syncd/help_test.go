package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

var updateHelp = flag.Bool("update", false, "rewrite testdata/help/*.golden from the commands' --help")

// helpDir holds one golden --help output per command.
const helpDir = "testdata/help"

// TestHelpGolden: every command's and subcommand's --help is its golden
// file (testdata/help/<command path>.golden, `go test -run TestHelpGolden
// -update` rewrites them); a command added without a golden file, or a
// golden file left behind by a removed command, fails.
func TestHelpGolden(t *testing.T) {
	// Defaults that come from the environment are shown as a user
	// without it sees them.
	t.Setenv("POD_NAMESPACE", "")
	var want []string
	for _, path := range commandPaths(newRootCommand()) {
		file := helpGolden(path)
		want = append(want, filepath.Base(file))
		t.Run(strings.Join(path, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(context.Background(), append(path[1:], "--help"), &out, &errOut); code != exitOK || errOut.Len() > 0 {
				t.Fatalf("%s --help: exit %d\n%s", strings.Join(path, " "), code, errOut.String())
			}
			if *updateHelp {
				if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			golden, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v: a new command needs its golden --help: go test ./cmd/syncd -run TestHelpGolden -update", err)
			}
			if diff := cmp.Diff(string(golden), out.String()); diff != "" {
				t.Errorf("%s --help (-%s +got):\n%s", strings.Join(path, " "), file, diff)
			}
		})
	}
	got, err := filepath.Glob(filepath.Join(helpDir, "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" && !*updateHelp {
		t.Errorf("golden files of commands that do not exist (+) or are missing (-):\n%s", diff)
	}
}

// commandPaths returns the path ("syncd", "get", "apps") of root and of
// every command below it that a user can call or ask help of, hidden
// ones (cobra's __complete) left out.
func commandPaths(root *cobra.Command) [][]string {
	var out [][]string
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		out = append(out, path)
		for _, sub := range cmd.Commands() {
			if sub.Hidden || sub.Deprecated != "" {
				continue
			}
			walk(sub, append(slices.Clip(path), sub.Name()))
		}
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	walk(root, []string{root.Name()})
	return out
}

// helpGolden is the golden file of the command at path.
func helpGolden(path []string) string {
	return filepath.Join(helpDir, strings.Join(path, "_")+".golden")
}
