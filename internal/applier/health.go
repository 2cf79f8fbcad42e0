package applier

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"syncd.dev/syncd/internal/planner"
)

// DefaultWaitTimeout is how long Apply waits for an object to become
// Current when ApplyOptions.Timeout is zero.
const DefaultWaitTimeout = 5 * time.Minute

// waitCurrent polls the object until kstatus computes Current, and returns
// the last status seen ("Current", "InProgress", "Failed", ...).
func (a *Applier) waitCurrent(ctx context.Context, ri dynamic.ResourceInterface, ref planner.ObjectRef, timeout time.Duration) string {
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	last := string(status.UnknownStatus)
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		res, err := status.Compute(u)
		if err != nil {
			return false, nil
		}
		last = string(res.Status)
		return res.Status == status.CurrentStatus || res.Status == status.FailedStatus, nil
	})
	return last
}
