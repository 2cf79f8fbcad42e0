package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/preview"
)

// TestPlanPrune: syncd plan previews the prune that follows the apply:
// objects that left Git are shown deleted, orphaned (adopted) or kept by
// a guard with its reason, the whole prune refused by a guard is said at
// the top, and nothing is deleted by the preview.
func TestPlanPrune(t *testing.T) {
	type pruned struct {
		Action preview.Action
		Reason string
	}
	four := map[string]string{
		"a.yaml": cmYAML("a", "  k: a\n"), "b.yaml": cmYAML("b", "  k: b\n"),
		"c.yaml": cmYAML("c", "  k: c\n"), "d.yaml": cmYAML("d", "  k: d\n"),
	}
	without := func(names ...string) map[string]string {
		out := map[string]string{}
		for k, v := range four {
			out[k] = v
		}
		for _, n := range names {
			delete(out, n+".yaml")
		}
		return out
	}
	tests := map[string]struct {
		app     string                        // app settings
		adopt   string                        // a ConfigMap created before syncd applies it
		other   func(t *testing.T, ns string) // after the apply, before the plan
		git     map[string]string
		want    map[string]pruned
		refused string
		code    int
		md      []string // lines the markdown must contain
	}{
		"removed object is pruned": {
			git:  without("d"),
			want: map[string]pruned{"d": {Action: preview.Prune}},
			code: exitChanges,
			md:   []string{"#### Removed from Git", "`ConfigMap %s/d` left Git: **deleted**"},
		},
		"adopted object is orphaned": {
			adopt: "d",
			git:   without("d"),
			want:  map[string]pruned{"d": {Action: preview.Orphan}},
			code:  exitChanges,
			md:    []string{"**orphaned**"},
		},
		"over the budget the whole prune is refused": {
			git:     without("b", "c", "d"),
			want:    map[string]pruned{"b": {preview.Spared, "budget"}, "c": {preview.Spared, "budget"}, "d": {preview.Spared, "budget"}},
			refused: "budget",
			code:    exitConflict,
			md:      []string{"#### :no_entry: Stopped by prune guards", "the whole prune is refused (`budget`)"},
		},
		"a blocked apply prunes nothing": {
			other: func(t *testing.T, ns string) {
				_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "a", "application/merge-patch+json",
					[]byte(`{"data":{"k":"edited"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
				if err != nil {
					t.Fatal(err)
				}
			},
			git:     map[string]string{"a.yaml": cmYAML("a", "  k: from-git\n"), "b.yaml": four["b.yaml"], "c.yaml": four["c.yaml"]},
			want:    map[string]pruned{"d": {preview.Spared, "apply-incomplete"}},
			refused: "apply-incomplete",
			code:    exitConflict,
		},
		"prune: false keeps the object without blocking": {
			app:     "  prune: false\n",
			git:     without("d"),
			want:    map[string]pruned{"d": {preview.Spared, "disabled"}},
			refused: "disabled",
			code:    exitOK,
			md:      []string{"left Git: **kept** (`disabled`)"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ns := env.Namespace(t)
			cfg := planConfig(t, ns, tc.app)
			if tc.adopt != "" {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tc.adopt}, Data: map[string]string{"k": tc.adopt}}
				if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "before-syncd"}); err != nil {
					t.Fatal(err)
				}
			}
			applyApp(t, cfg, four)
			if tc.other != nil {
				tc.other(t, ns)
			}
			before := resourceVersions(t, ns)
			dir := writeFiles(t, tc.git)
			code, rep, stderr := planJSON(t, cfg, dir)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\n%s", code, tc.code, stderr)
			}
			got := map[string]pruned{}
			for _, o := range rep.Objects {
				switch o.Action {
				case preview.Prune, preview.Orphan, preview.Spared:
					p := pruned{Action: o.Action}
					if o.Guard != nil {
						p.Reason = o.Guard.Reason
						if o.Guard.Message == "" {
							t.Errorf("%s: guard %s without a message", o.Object, o.Guard.Reason)
						}
					}
					got[o.Object.Name] = p
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("objects that left Git (-want +got):\n%s", diff)
			}
			if rep.Prune == nil {
				t.Fatalf("no prune preview")
			}
			var refused string
			if rep.Prune.Refused != nil {
				refused = rep.Prune.Refused.Reason
			}
			if refused != tc.refused {
				t.Errorf("prune refused %q, want %q", refused, tc.refused)
			}
			r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir, "-o", "markdown")
			for _, line := range tc.md {
				if strings.Contains(line, "%s") {
					line = strings.ReplaceAll(line, "%s", ns)
				}
				if !strings.Contains(r.stdout, line) {
					t.Errorf("markdown lacks %q:\n%s", line, r.stdout)
				}
			}
			if diff := cmp.Diff(before, resourceVersions(t, ns)); diff != "" {
				t.Errorf("plan wrote to the cluster: resourceVersions (-before +after):\n%s", diff)
			}
		})
	}
}
