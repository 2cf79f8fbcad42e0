package applier

import (
	"context"
	"fmt"
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

// waitCurrent polls the object until kstatus computes Current (or
// Failed), and returns the last status seen ("Current", "InProgress",
// "Failed", ...) with a message for anything but Current: kstatus's
// reason, and that the wait timed out when it did.
func (a *Applier) waitCurrent(ctx context.Context, ri dynamic.ResourceInterface, ref planner.ObjectRef, timeout time.Duration) (string, string) {
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	last, message := string(status.UnknownStatus), "no status computed yet"
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			message = err.Error()
			return false, nil
		}
		res, err := status.Compute(u)
		if err != nil {
			message = err.Error()
			return false, nil
		}
		last, message = string(res.Status), res.Message
		return res.Status == status.CurrentStatus || res.Status == status.FailedStatus, nil
	})
	switch {
	case last == string(status.CurrentStatus):
		return last, ""
	case err != nil:
		return last, fmt.Sprintf("%s: not Current after waiting %s (status %s: %s)", ref, timeout, last, message)
	}
	return last, fmt.Sprintf("%s: status %s: %s", ref, last, message)
}
