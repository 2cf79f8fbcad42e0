package drift

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSentenceRedacted checks that a redacted finding's sentence shows
// redact.Marker where the value would be, the same marker as every other
// output, and never the values the finding holds.
func TestSentenceRedacted(t *testing.T) {
	rotator := []Owner{{Manager: "rotator", Operation: "Update"}}
	tests := map[string]struct {
		f    Finding
		want string
	}{
		"removed out of band": {
			f:    Finding{Class: TakenOver, Desired: "git-s3cret"},
			want: ".data.token was removed out of band; Git says <redacted>",
		},
		"owned by no manager": {
			f:    Finding{Class: TakenOver, Desired: "git-s3cret", Live: "live-s3cret", Differs: true},
			want: ".data.token is owned by no manager (managedFields were edited, or the schema differs); it is <redacted>, Git says <redacted>",
		},
		"taken over with another value": {
			f:    Finding{Class: TakenOver, Desired: "git-s3cret", Live: "live-s3cret", Owners: rotator, Differs: true},
			want: ".data.token was changed from <redacted> to <redacted> by rotator (Update); Git says <redacted>",
		},
		"taken over with the value Git declares": {
			f:    Finding{Class: TakenOver, Desired: "git-s3cret", Live: "git-s3cret", Owners: rotator},
			want: ".data.token was taken over by rotator (Update) with the value Git declares (<redacted>)",
		},
		"shared": {
			f:    Finding{Class: Shared, Desired: "git-s3cret", Live: "git-s3cret", Owners: rotator},
			want: ".data.token is shared by syncd-web with rotator (Update); neither can change or drop it alone",
		},
		"value drift": {
			f:    Finding{Class: ValueDrift, Desired: "git-s3cret", Live: "live-s3cret", Differs: true},
			want: ".data.token is <redacted> although only syncd-web owns it (a write under that name or a mutating webhook changed it); Git says <redacted>",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := tc.f
			f.Path, f.DeclaredBy, f.Redacted = ".data.token", "syncd-web", true
			got := f.Sentence()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Sentence() (-want +got):\n%s", diff)
			}
			if strings.Contains(got, "s3cret") {
				t.Errorf("Sentence() shows a hidden value: %s", got)
			}
		})
	}
}

// TestOverlapText: the Overlap findings of one object and other app are
// one "overlap:" line with their count, not one line per field; a report
// of overlaps alone has no drift and says so.
func TestOverlapText(t *testing.T) {
	role := Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "view-things"}
	cm := Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "c"}
	overlap := func(o Object, path, other string) Finding {
		return Finding{App: "a", Object: o, Path: path, Class: Overlap, OtherApp: other, Culprit: "syncd-" + other}
	}
	tests := map[string]struct {
		findings []Finding
		want     string
		drift    bool
	}{
		"overlaps only": {
			findings: []Finding{overlap(role, ".rules", "b"), overlap(role, ".metadata.labels.x", "b"), overlap(role, ".aggregationRule", "b"), overlap(cm, ".data.k", "c")},
			want: "no drift\n" +
				"overlap: ClusterRole view-things is also declared by app b (3 fields, same values)\n" +
				"overlap: ConfigMap ns/c is also declared by app c (1 field, same values)\n",
		},
		"drift and an overlap": {
			findings: []Finding{{App: "a", Object: cm, Path: ".data.v", Class: Shared, DeclaredBy: "syncd-a", Owners: []Owner{{Manager: "rotator", Operation: "Update"}}}, overlap(cm, ".data.k", "b")},
			want: "ConfigMap ns/c: .data.v is shared by syncd-a with rotator (Update); neither can change or drop it alone\n" +
				"overlap: ConfigMap ns/c is also declared by app b (1 field, same values)\n",
			drift: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := &Report{Findings: tc.findings}
			var b strings.Builder
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteText (-want +got):\n%s", diff)
			}
			if r.HasDrift() != tc.drift {
				t.Errorf("HasDrift() = %v, want %v", r.HasDrift(), tc.drift)
			}
		})
	}
}
