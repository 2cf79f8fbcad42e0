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
