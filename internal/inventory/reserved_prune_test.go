package inventory

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
)

// TestPruneSparesSyncdOwn: an object of syncd's own that is in an app's
// inventory (applied before the guard existed, or while the app set
// installsSyncd) is never deleted when it leaves Git, unless the app
// installs syncd.
func TestPruneSparesSyncdOwn(t *testing.T) {
	labelled := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own, labels: {app.kubernetes.io/part-of: syncd}}\ndata: {k: own}\n"
	tests := map[string]struct {
		syncdNamespace bool // the app's namespace is syncd's
		own            string
		installsSyncd  bool
		want           outcome
	}{
		"in syncd's namespace": {
			syncdNamespace: true,
			want:           outcome{Spared: spared(ReasonReserved, "own"), Present: []string{"keep", "own"}, Members: []string{"keep", "own"}},
		},
		"labelled part of syncd": {
			own:  labelled,
			want: outcome{Spared: spared(ReasonReserved, "own"), Present: []string{"keep", "own"}, Members: []string{"keep", "own"}},
		},
		"installsSyncd: in syncd's namespace": {
			syncdNamespace: true,
			installsSyncd:  true,
			want:           outcome{Deleted: []string{"own"}, Present: []string{"keep"}, Members: []string{"keep"}},
		},
		"installsSyncd: labelled part of syncd": {
			own:           labelled,
			installsSyncd: true,
			want:          outcome{Deleted: []string{"own"}, Present: []string{"keep"}, Members: []string{"keep"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, config.App{InstallsSyncd: tc.installsSyncd, AppSpec: config.AppSpec{PruneBudget: ptr(100)}}, Options{})
			if tc.syncdNamespace {
				f.m.opts.Reserved.Namespaces = []string{f.ns}
			}
			own := tc.own
			if own == "" {
				own = f.cm("own")
			}
			// The fixture applies without the render guard, as syncd did
			// before it had one.
			f.mustSync(f.plan(f.cm("keep"), own))
			rep := f.mustSync(f.plan(f.cm("keep")))
			got := outcomeOf(f, rep)
			sort.Strings(got.Members)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nreport: %s", diff, rep)
			}
			for _, s := range rep.Spared {
				if !strings.Contains(s.Message, "syncd's own object") {
					t.Errorf("spared %s: message %q does not say why", s.Object, s.Message)
				}
			}
		})
	}
}
