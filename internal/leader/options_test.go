package leader

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

func TestLeaseName(t *testing.T) {
	tests := map[string]struct {
		shards, shard int
		want          string
	}{
		"not sharded":    {shards: 1, want: "syncd"},
		"shards unset":   {shards: 0, want: "syncd"},
		"shard 1 of 2":   {shards: 2, shard: 1, want: "syncd-shard-1-of-2"},
		"shard 1 of 3":   {shards: 3, shard: 1, want: "syncd-shard-1-of-3"},
		"shard 0 of 3":   {shards: 3, shard: 0, want: "syncd-shard-0-of-3"},
		"shard 10 of 12": {shards: 12, shard: 10, want: "syncd-shard-10-of-12"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, LeaseName("syncd", tt.shards, tt.shard)); diff != "" {
				t.Errorf("LeaseName (-want +got):\n%s", diff)
			}
		})
	}
	// Every shard of a 2-shard and a 3-shard layout has its own Lease.
	seen := map[string]bool{}
	for _, n := range []int{2, 3} {
		for k := range n {
			name := LeaseName("syncd", n, k)
			if seen[name] {
				t.Errorf("Lease %s is shared by two shard layouts", name)
			}
			seen[name] = true
		}
	}
}

func TestLostWait(t *testing.T) {
	tests := map[string]struct {
		lease, renew, retry, grace time.Duration
		want                       time.Duration
	}{
		"defaults":                       {lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second, grace: 20 * time.Second, want: 3 * time.Second},
		"grace shorter":                  {lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second, grace: time.Second, want: time.Second},
		"no grace limit":                 {lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second, want: 3 * time.Second},
		"no room: exit at once":          {lease: 10 * time.Second, renew: 9 * time.Second, retry: 2 * time.Second, grace: 20 * time.Second, want: 0},
		"the flags of cmd/syncd's tests": {lease: 3 * time.Second, renew: 2 * time.Second, retry: 500 * time.Millisecond, grace: 20 * time.Second, want: 500 * time.Millisecond},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := Options{LeaseDuration: tt.lease, RenewDeadline: tt.renew, RetryPeriod: tt.retry, ShutdownGrace: tt.grace}.lostWait()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lostWait (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	base := func(edit func(*Options)) Options {
		o := Options{Namespace: "syncd-system", Name: "syncd"}
		if edit != nil {
			edit(&o)
		}
		return o
	}
	tests := map[string]struct {
		opts Options
		// field is the OptionError's Field ("": valid), reason a part
		// of its Reason.
		field, reason string
	}{
		"defaults":                      {opts: base(nil)},
		"no namespace":                  {opts: base(func(o *Options) { o.Namespace = "" }), field: "Namespace", reason: "is empty"},
		"no name":                       {opts: base(func(o *Options) { o.Name = "" }), field: "Name", reason: "is empty"},
		"lease not above renew":         {opts: base(func(o *Options) { o.LeaseDuration = 10 * time.Second }), field: "LeaseDuration", reason: "10s must be greater than RenewDeadline 10s"},
		"renew deadline within jitter":  {opts: base(func(o *Options) { o.RetryPeriod = 9 * time.Second }), field: "RenewDeadline", reason: "10s must be greater than RetryPeriod 9s × 1.2"},
		"negative retry period":         {opts: base(func(o *Options) { o.RetryPeriod = -time.Second }), field: "RetryPeriod", reason: "must not be negative"},
		"negative grace":                {opts: base(func(o *Options) { o.ShutdownGrace = -time.Second }), field: "ShutdownGrace", reason: "must not be negative"},
		"no grace limit":                {opts: base(func(o *Options) { o.ShutdownGrace = 0 })},
		"shard out of range":            {opts: base(func(o *Options) { o.Shards, o.Shard = 3, 3 }), field: "Shard", reason: "3 is out of range for 3 shards (0..2)"},
		"negative shard":                {opts: base(func(o *Options) { o.Shards, o.Shard = 3, -1 }), field: "Shard", reason: "out of range"},
		"shard unused without sharding": {opts: base(func(o *Options) { o.Shards, o.Shard = 1, 5 })},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(fakeLeases{}, tt.opts)
			var oe *OptionError
			if err != nil && !errors.As(err, &oe) {
				t.Fatalf("New: %v, want an *OptionError or nil", err)
			}
			field := ""
			if oe != nil {
				field = oe.Field
			}
			if diff := cmp.Diff(tt.field, field); diff != "" {
				t.Errorf("invalid field (-want +got):\n%s\nerror: %v", diff, err)
			}
			if oe != nil && !strings.Contains(oe.Reason, tt.reason) {
				t.Errorf("reason %q does not say %q", oe.Reason, tt.reason)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	e, err := New(fakeLeases{}, Options{Namespace: "syncd-system", Name: "syncd", Shards: 2, Shard: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := []any{e.opts.LeaseDuration, e.opts.RenewDeadline, e.opts.RetryPeriod, e.opts.ShutdownGrace, e.Lease(), e.Status()}
	want := []any{15 * time.Second, 10 * time.Second, 2 * time.Second, time.Duration(0), "syncd-system/syncd-shard-1-of-2", Status{Phase: Standby}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaulted Elector (-want +got):\n%s", diff)
	}
	other, err := New(fakeLeases{}, Options{Namespace: "syncd-system", Name: "syncd"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Identity() == "" || e.Identity() == other.Identity() {
		t.Errorf("identities %q and %q, want two distinct ones", e.Identity(), other.Identity())
	}
	if _, err := New(nil, Options{Namespace: "syncd-system", Name: "syncd"}); err == nil {
		t.Error("New without a Leases client: no error")
	}
}

// TestEventTexts: every kind of Event reads as a sentence in a log.
func TestEventTexts(t *testing.T) {
	kinds := []EventKind{NewLeader, LayoutBlocked, LayoutCheckFailed, Started, Draining, Drained, Undrained, StoppedLeading, Released, Lost, LostUndrained, Withdrew, CandidateAgain}
	for _, k := range kinds {
		if _, ok := eventTexts[k]; !ok {
			t.Errorf("Event kind %s has no log text", k)
		}
	}
	if len(eventTexts) != len(kinds) {
		t.Errorf("%d log texts for %d Event kinds", len(eventTexts), len(kinds))
	}
	got := Event{Kind: Drained, Lease: "ns/syncd", Identity: "a", Duration: time.Second}.Attrs()
	want := []any{"lease", "ns/syncd", "identity", "a", "waited", "1s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Attrs (-want +got):\n%s", diff)
	}
}

// fakeLeases stands for a Leases client in tests that never call it.
type fakeLeases struct{}

func (fakeLeases) Leases(string) coordinationv1client.LeaseInterface { return nil }
