package alert

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden payloads in testdata/")

// TestGoldenPayloads renders the same drift finding, open and resolved,
// for every sink type. The files are the examples in docs/alerts.md;
// rewrite them with: go test ./internal/alert -run TestGoldenPayloads -update
func TestGoldenPayloads(t *testing.T) {
	for _, typ := range []string{string(SinkSlack), string(SinkMSTeams), string(SinkDiscord), string(SinkWebhook)} {
		for _, state := range []string{StateOpen, StateResolved} {
			t.Run(typ+"/"+state, func(t *testing.T) {
				var body []byte
				if state == StateResolved {
					body = sendResolved(t, typ, resolvedDriftEvent())
				} else {
					body = sendOne(t, typ, driftEvent())
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, body, "", "  "); err != nil {
					t.Fatal(err)
				}
				pretty.WriteByte('\n')
				path := filepath.Join("testdata", typ+"-"+state+".json")
				if *update {
					if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), pretty.String()); diff != "" {
					t.Errorf("%s differs (-want +got); run with -update if the change is intended:\n%s", path, diff)
				}
			})
		}
	}
}
