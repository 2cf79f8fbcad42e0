package reconcile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
)

// retryOp is one step of a Retry script: a failure of Rev, or work at
// Rev (polled, or Requested) that either waits or runs (and renews).
type retryOp struct {
	Fail      bool
	Rev       string
	Requested bool
}

func TestRetry(t *testing.T) {
	const a, b = "aaaa", "bbbb"
	fail := func(rev string) retryOp { return retryOp{Fail: true, Rev: rev} }
	poll := func(rev string) retryOp { return retryOp{Rev: rev} }
	request := func(rev string) retryOp { return retryOp{Rev: rev, Requested: true} }
	tests := map[string]struct {
		ops  []retryOp
		want []string // per op: the delay of a failure, "waits" or "runs" for work
	}{
		"the failing revision polled again waits and keeps doubling": {
			ops:  []retryOp{fail(a), poll(a), fail(a), poll(a), fail(a)},
			want: []string{"1s", "waits", "2s", "waits", "4s"},
		},
		"a new revision runs at once and starts over": {
			ops:  []retryOp{fail(a), fail(a), poll(b), fail(b)},
			want: []string{"1s", "2s", "runs", "1s"},
		},
		"a request of the failing revision runs at once and starts over": {
			ops:  []retryOp{fail(a), fail(a), request(a), fail(a)},
			want: []string{"1s", "2s", "runs", "1s"},
		},
		"a new revision failing starts over even unannounced": {
			ops:  []retryOp{fail(a), fail(a), fail(b)},
			want: []string{"1s", "2s", "1s"},
		},
		"nothing failing: every poll runs": {
			ops:  []retryOp{poll(a), poll(a)},
			want: []string{"runs", "runs"},
		},
		"capped": {
			ops:  []retryOp{fail(a), fail(a), fail(a), fail(a), poll(a), fail(a)},
			want: []string{"1s", "2s", "4s", "4s", "waits", "4s"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := NewRetry(wait.Backoff{Duration: time.Second, Factor: 2, Steps: 100, Cap: 4 * time.Second})
			now := time.Unix(0, 0)
			var got []string
			for _, op := range tc.ops {
				switch {
				case op.Fail:
					got = append(got, r.Failed(op.Rev, now).String())
				case r.Waits(op.Rev, op.Requested):
					got = append(got, "waits")
				default:
					r.Renew(op.Rev, op.Requested)
					got = append(got, "runs")
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryRemaining(t *testing.T) {
	r := NewRetry(wait.Backoff{Duration: 10 * time.Second, Factor: 2, Steps: 100, Cap: time.Minute})
	now := time.Unix(0, 0)
	if got := r.Remaining(now); got != 0 {
		t.Errorf("nothing failed: Remaining = %s, want 0", got)
	}
	r.Failed("a", now)
	if got := r.Remaining(now.Add(4 * time.Second)); got != 6*time.Second {
		t.Errorf("4 s into a 10 s retry: Remaining = %s, want 6s", got)
	}
	if got := r.Remaining(now.Add(time.Minute)); got != 0 {
		t.Errorf("past the retry: Remaining = %s, want 0", got)
	}
	r.Succeeded()
	if r.Waits("a", false) {
		t.Error("after a success the revision that had failed still waits")
	}
}
