package alert

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFit(t *testing.T) {
	tests := map[string]struct {
		in   string
		max  int
		esc  func(string) string
		want string
	}{
		"fits":                       {in: "hello", max: 5, want: "hello"},
		"cut with ellipsis":          {in: "hello world", max: 6, want: "hello…"},
		"emoji counts two units":     {in: "😀😀😀", max: 5, want: "😀😀…"},
		"emoji is not split":         {in: "a😀", max: 2, want: "a…"},
		"escapes are not split":      {in: "a<b", max: 5, esc: slackEscape, want: "a…"},
		"escaped text fits":          {in: "a<b", max: 6, esc: slackEscape, want: "a&lt;b"},
		"escaped entity kept whole":  {in: "a<b<c", max: 8, esc: slackEscape, want: "a&lt;b…"},
		"zero budget":                {in: "abc", max: 0, want: ""},
		"invalid utf-8 counts units": {in: "a\xffb", max: 3, want: "a\xffb"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := fit(tc.in, tc.max, tc.esc)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fit(%q, %d) (-want +got):\n%s", tc.in, tc.max, diff)
			}
			if utf16Len(got) > tc.max {
				t.Errorf("fit(%q, %d) = %q is %d units long", tc.in, tc.max, got, utf16Len(got))
			}
		})
	}
}

func TestTitle(t *testing.T) {
	obj := ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "frontend"}
	tests := map[string]struct {
		ev   Event
		want string
	}{
		"drift":          {Event{Type: "drift", App: "shop", Object: obj}, "Drift: Deployment web/frontend (app shop)"},
		"resolved":       {Event{Type: "conflict", App: "shop", Object: obj, Resolved: true}, "Resolved conflict: Deployment web/frontend (app shop)"},
		"cluster-scoped": {Event{Type: "prune", App: "shop", Object: ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "old"}}, "Pruned: Namespace old (app shop)"},
		"app-wide":       {Event{Type: "error", App: "shop"}, "Error: app shop"},
		"unknown type":   {Event{Type: "custom", App: "shop"}, "custom: app shop"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, message{ev: tc.ev}.title()); diff != "" {
				t.Errorf("title (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCulpritText(t *testing.T) {
	at := time.Date(2026, 11, 29, 20, 50, 0, 0, time.FixedZone("CET", 3600))
	tests := map[string]struct {
		c    Culprit
		want string
	}{
		"full":         {Culprit{Manager: "kubectl", Operation: "Update", Subresource: "scale", Time: at}, "kubectl (Update, subresource scale) at 2026-11-29T19:50:00Z"},
		"manager only": {Culprit{Manager: "hpa"}, "hpa"},
		"unknown":      {Culprit{Operation: "Update"}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, culpritText(tc.c)); diff != "" {
				t.Errorf("culpritText (-want +got):\n%s", diff)
			}
		})
	}
}

// TestObjectLevelField checks that a finding about a whole object (a
// deleted one: no path) is headed as such in every chat payload, never
// with an empty name, which Discord refuses and Slack shows as "“".
func TestObjectLevelField(t *testing.T) {
	ev := Event{Type: EventDrift, App: "web", Object: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings"},
		Summary: "ConfigMap shop/settings does not exist", Fields: []Field{{Class: "deleted"}}, Time: t0}
	m := message{sink: "s", ev: ev, fingerprint: "fp"}
	tests := map[string]struct {
		render func(message) ([]byte, error)
		want   string
	}{
		"slack":   {renderSlack, `"*(the whole object)* — deleted\nDesired: _unset_\nLive: _unset_"`},
		"discord": {renderDiscord, `"name":"(the whole object) — deleted"`},
		"msteams": {renderTeams, `"text":"(the whole object) — deleted"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, err := tc.render(m)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.want) {
				t.Errorf("payload has no %s:\n%s", tc.want, b)
			}
			if strings.Contains(string(b), "``") {
				t.Errorf("payload has an empty code span:\n%s", b)
			}
		})
	}
}
