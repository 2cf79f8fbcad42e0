package drift

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testclock "k8s.io/utils/clock/testing"

	"syncd.dev/syncd/internal/planner"
)

func TestFlapDetector(t *testing.T) {
	ref := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}
	t0 := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	type obs struct {
		owner string
		after time.Duration // since t0
	}
	tests := map[string]struct {
		obs  []obs
		want bool
	}{
		"steady owner": {
			obs: []obs{{"syncd-web", 0}, {"syncd-web", time.Second}, {"syncd-web", 2 * time.Second}},
		},
		"one take-over is not flapping": {
			obs: []obs{{"syncd-web", 0}, {"fighter", time.Second}},
		},
		"three flips are below the threshold": {
			obs: []obs{{"syncd-web", 0}, {"fighter", 1 * time.Second}, {"syncd-web", 2 * time.Second}, {"fighter", 3 * time.Second}},
		},
		"four flips within the window": {
			obs:  []obs{{"syncd-web", 0}, {"fighter", 1 * time.Second}, {"syncd-web", 2 * time.Second}, {"fighter", 3 * time.Second}, {"syncd-web", 4 * time.Second}},
			want: true,
		},
		"four flips spread beyond the window": {
			obs:  []obs{{"syncd-web", 0}, {"fighter", 1 * time.Minute}, {"syncd-web", 2 * time.Minute}, {"fighter", 3 * time.Minute}, {"syncd-web", 4 * time.Minute}},
			want: false,
		},
		"flapping stays once reached": {
			obs:  []obs{{"syncd-web", 0}, {"fighter", 1 * time.Second}, {"syncd-web", 2 * time.Second}, {"fighter", 3 * time.Second}, {"syncd-web", 4 * time.Second}, {"syncd-web", time.Hour}},
			want: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			clk := testclock.NewFakePassiveClock(t0)
			d, err := NewFlapDetector(FlapOptions{Flips: 4, Window: 90 * time.Second, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range tt.obs {
				clk.SetTime(t0.Add(o.after))
				d.Observe(ref, ".data.color", o.owner, time.Time{})
			}
			if got := d.Flapping(ref, ".data.color"); got != tt.want {
				t.Errorf("Flapping = %v, want %v", got, tt.want)
			}
			if d.Flapping(ref, ".data.other") {
				t.Error("another field is flapping")
			}
			other := ref
			other.Version = "v2"
			if got := d.Flapping(other, ".data.color"); got != tt.want {
				t.Errorf("Flapping at another version = %v, want %v (the version is not part of identity)", got, tt.want)
			}
			seen := map[string]bool{}
			for _, o := range tt.obs {
				seen[o.owner] = true
			}
			want := slices.Sorted(maps.Keys(seen))
			if got := d.Owners(ref, ".data.color"); !cmp.Equal(got, want) {
				t.Errorf("Owners = %v, want %v", got, want)
			}
			d.Reset()
			if d.Flapping(ref, ".data.color") {
				t.Error("still flapping after Reset")
			}
		})
	}
}

func TestNewFlapDetectorErrors(t *testing.T) {
	for name, opts := range map[string]FlapOptions{
		"one flip":        {Flips: 1},
		"negative window": {Window: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewFlapDetector(opts); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestFlapDetectorFieldsApart: the fields of one object, observed in any
// order, are judged apart, and Forget drops one field's record only (the
// object's record goes with its last field).
func TestFlapDetectorFieldsApart(t *testing.T) {
	ref := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}
	t0 := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	d, err := NewFlapDetector(FlapOptions{Flips: 2, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	fields := []string{".data.size", ".data.color", ".metadata.labels.team"}
	owners := []string{"syncd-web", "fighter", "syncd-web"}
	for i, owner := range owners {
		for _, p := range fields {
			o := "syncd-web"
			if p == ".data.color" {
				o = owner
			}
			d.Observe(ref, p, o, t0.Add(time.Duration(i)*time.Second))
		}
	}
	for _, p := range fields {
		if got, want := d.Flapping(ref, p), p == ".data.color"; got != want {
			t.Errorf("%s: Flapping = %v, want %v", p, got, want)
		}
	}
	if diff := cmp.Diff([]string{"fighter", "syncd-web"}, d.Owners(ref, ".data.color")); diff != "" {
		t.Errorf("Owners of .data.color (-want +got):\n%s", diff)
	}
	d.Forget(ref, ".data.color")
	if d.Flapping(ref, ".data.color") || d.Owners(ref, ".data.color") != nil {
		t.Error(".data.color is still known after Forget")
	}
	if diff := cmp.Diff([]string{"syncd-web"}, d.Owners(ref, ".data.size")); diff != "" {
		t.Errorf("Owners of .data.size after forgetting another field (-want +got):\n%s", diff)
	}
	d.Forget(ref, ".data.size")
	d.Forget(ref, ".metadata.labels.team")
	if len(d.fields) != 0 {
		t.Errorf("%d objects kept after every field was forgotten", len(d.fields))
	}
}
