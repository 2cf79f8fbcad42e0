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
