package leader

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Shard layouts exclude each other. The Leases of one layout (Shards N)
// guard disjoint sets of apps, but an app's shard depends on N, so while
// a re-shard is under way a replica of the new layout and one of the old
// could run the same app under two Lease names. So a new leader, before
// it starts, waits while a Lease of another layout of the same base name
// (NAME, NAME-shard-K as older releases named them, NAME-shard-K-of-M) is
// held (renewed within its duration) and was acquired before its own:
// the layout that ran first keeps running until its leaders stop, and the
// other starts as their Leases are released or expire. The comparison
// uses the times the holders wrote into the Leases, so clock skew between
// nodes shifts the handoff by that much.

// otherLayouts returns the Leases that keep this replica's layout from
// starting (otherLayoutBlocks), read now.
func (e *Elector) otherLayouts(ctx context.Context) ([]string, error) {
	list, err := e.leases.Leases(e.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the Leases of %s to check for another shard layout: %w", e.opts.Namespace, err)
	}
	var own *coordinationv1.Lease
	for i := range list.Items {
		if list.Items[i].Name == e.name {
			own = &list.Items[i]
		}
	}
	var blocking []string
	now := e.opts.Clock.Now()
	for i := range list.Items {
		l := &list.Items[i]
		if otherLayoutBlocks(e.opts.Name, e.opts.Shards, own, l, now) {
			blocking = append(blocking, l.Name+" (held by "+*l.Spec.HolderIdentity+")")
		}
	}
	return blocking, nil
}

// otherLayoutBlocks reports whether Lease l, of another shard layout than
// shards of base, is held at now and was acquired before own.
func otherLayoutBlocks(base string, shards int, own, l *coordinationv1.Lease, now time.Time) bool {
	if own != nil && l.Name == own.Name {
		return false
	}
	if l.Name != base && !strings.HasPrefix(l.Name, base+"-shard-") {
		return false // not syncd's, or another base name
	}
	if sameLayout(base, shards, l.Name) {
		return false // a shard of the same layout: other apps
	}
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	if !now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)) {
		return false // expired
	}
	if own == nil || own.Spec.AcquireTime == nil || s.AcquireTime == nil {
		return true
	}
	return s.AcquireTime.Before(own.Spec.AcquireTime)
}

// sameLayout reports whether name is the Lease of a shard of shards
// Leases of base.
func sameLayout(base string, shards int, name string) bool {
	if shards <= 1 {
		return false
	}
	var k, n int
	_, err := fmt.Sscanf(strings.TrimPrefix(name, base), "-shard-%d-of-%d", &k, &n)
	return err == nil && n == shards && name == LeaseName(base, n, k)
}

// waitOtherLayouts waits, checking every retry period, until no Lease of
// another shard layout blocks this one; false when ctx ended first.
func (e *Elector) waitOtherLayouts(ctx context.Context) bool {
	reported := ""
	for {
		blocking, err := e.otherLayouts(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			e.emit(Event{Kind: LayoutCheckFailed, Err: err})
		case err == nil && len(blocking) == 0:
			return true
		case err == nil:
			if s := strings.Join(blocking, ", "); s != reported {
				e.emit(Event{Kind: LayoutBlocked, Blocking: s})
				reported = s
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-e.opts.Clock.After(e.opts.RetryPeriod):
		}
	}
}
