package leader

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestOtherLayoutBlocks(t *testing.T) {
	now := time.Now()
	lease := func(name, holder string, acquired, renewed time.Duration) *coordinationv1.Lease {
		a, r := metav1.NewMicroTime(now.Add(acquired)), metav1.NewMicroTime(now.Add(renewed))
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), AcquireTime: &a, RenewTime: &r, LeaseDurationSeconds: ptr.To[int32](15),
		}}
	}
	own := lease("syncd-shard-1-of-3", "me", -time.Second, 0)
	tests := map[string]struct {
		l    *coordinationv1.Lease
		want bool
	}{
		"old layout, held, acquired first":     {l: lease("syncd-shard-0-of-2", "x", -time.Hour, -time.Second), want: true},
		"old release's name, held":             {l: lease("syncd-shard-1", "x", -time.Hour, -time.Second), want: true},
		"unsharded, held":                      {l: lease("syncd", "x", -time.Hour, -time.Second), want: true},
		"old layout, expired":                  {l: lease("syncd-shard-0-of-2", "x", -time.Hour, -time.Minute), want: false},
		"old layout, released":                 {l: lease("syncd-shard-0-of-2", "", -time.Hour, -time.Second), want: false},
		"other layout acquired after this one": {l: lease("syncd-shard-0-of-2", "x", 0, 0), want: false},
		"same layout, another shard":           {l: lease("syncd-shard-0-of-3", "x", -time.Hour, -time.Second), want: false},
		"its own Lease":                        {l: own, want: false},
		"another base name":                    {l: lease("other-shard-0-of-2", "x", -time.Hour, -time.Second), want: false},
		"a name only sharing the prefix":       {l: lease("syncd-webhook", "x", -time.Hour, -time.Second), want: false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := otherLayoutBlocks("syncd", 3, own, tt.l, now); got != tt.want {
				t.Errorf("otherLayoutBlocks(%s) = %v, want %v", tt.l.Name, got, tt.want)
			}
		})
	}
}
