package applier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// DefaultWaitTimeout is how long Apply waits for a stage's objects to
// become Current when ApplyOptions.Timeout is zero.
const DefaultWaitTimeout = 5 * time.Minute

// waitInterval is how often the wait reads the objects not yet settled.
const waitInterval = 250 * time.Millisecond

// health is one waited-for object and the last kstatus result for it.
type health struct {
	t       *target
	status  status.Status
	message string
}

// settled reports whether the object's wait is over: kstatus says Current
// or Failed.
func (h *health) settled() bool {
	return h.status == status.CurrentStatus || h.status == status.FailedStatus
}

// waitStage waits until every object of the stage that was written or
// found unchanged is kstatus Current (or Failed), up to the app's timeout
// measured from written (the end of the stage's writes), and records each
// object's health in its changes. It runs once per stage after its
// writes, outside the per-object steps and their ObjectTimeout: the
// deadline is the app's. Each round reads the objects not yet settled, at
// most Options.Concurrency requests at once (pollHealth).
func (r *objectRun) waitStage(ctx context.Context, targets []*target, written time.Time) {
	timeout := r.ao.Timeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	var hs []*health
	for _, t := range targets {
		if t == nil || t.ri == nil || len(t.changes) == 0 || failedAny(t.changes) || t.changes[0].Action == Excluded {
			continue
		}
		hs = append(hs, &health{t: t, status: status.UnknownStatus, message: "no status computed yet"})
	}
	if len(hs) == 0 {
		return
	}
	wctx, cancel := context.WithDeadline(ctx, written.Add(timeout))
	defer cancel()
	_ = wait.PollUntilContextCancel(wctx, waitInterval, true, func(ctx context.Context) (bool, error) {
		return r.pollHealth(ctx, hs), nil
	})
	waited := time.Since(written)
	for _, h := range hs {
		h.record(waitEnd{waited: waited, cancelled: ctx.Err() != nil})
	}
}

// pollHealth reads every object not yet settled and computes its kstatus;
// it reports whether all are settled. Objects of one resource and
// namespace are read with one labelled LIST when there are at least
// listMin of them (listed), the others with a GET each.
func (r *objectRun) pollHealth(ctx context.Context, hs []*health) bool {
	lists, singles := r.listed(hs)
	g := errgroup.Group{}
	g.SetLimit(r.a.opts.Concurrency)
	for key, members := range lists {
		g.Go(func() error {
			singles := r.pollList(ctx, key, members)
			for _, h := range singles {
				h.poll(ctx)
			}
			return nil
		})
	}
	for _, h := range singles {
		g.Go(func() error {
			h.poll(ctx)
			return nil
		})
	}
	_ = g.Wait()
	for _, h := range hs {
		if !h.settled() {
			return false
		}
	}
	return true
}

// listMin is the smallest number of objects of one resource and
// namespace the wait reads with one LIST instead of a GET each.
const listMin = 10

// listKey is one resource in one namespace ("" for cluster-scoped).
type listKey struct {
	resource  schema.GroupVersionResource
	namespace string
}

// listed sorts the objects not yet settled into those read by a LIST, per
// resource and namespace, and the others. A LIST selects the app's own
// labels (ApplyOptions.Labels, the inventory's part-of label, which every
// object the app applied carries); without labels every object is read
// with a GET, as it is when its kind's mapping is not at hand (after the
// CRD stage reset it) or its group is smaller than listMin.
func (r *objectRun) listed(hs []*health) (map[listKey]map[string]*health, []*health) {
	lists := map[listKey]map[string]*health{}
	var singles []*health
	for _, h := range hs {
		if h.settled() {
			continue
		}
		m, ok := r.mappings.Load(h.t.obj.Ref.GVK())
		if !ok || len(r.ao.Labels) == 0 {
			singles = append(singles, h)
			continue
		}
		key := listKey{resource: m.(*meta.RESTMapping).Resource}
		if m.(*meta.RESTMapping).Scope.Name() == meta.RESTScopeNameNamespace {
			key.namespace = h.t.obj.Ref.Namespace
		}
		if lists[key] == nil {
			lists[key] = map[string]*health{}
		}
		lists[key][h.t.obj.Ref.Name] = h
	}
	for key, members := range lists {
		if len(members) >= listMin {
			continue
		}
		for _, h := range members {
			singles = append(singles, h)
		}
		delete(lists, key)
	}
	return lists, singles
}

// listPage is how many objects one LIST request of the wait returns.
const listPage = 500

// pollList reads members with a LIST of their resource and namespace by
// the app's labels, a page at a time, and computes each member's kstatus.
// It returns the members the LIST did not return (their labels differ:
// another app's inventory keeps the part-of label), to be read one by
// one. When the LIST fails (the identity may get but not list), every
// member is returned.
func (r *objectRun) pollList(ctx context.Context, key listKey, members map[string]*health) []*health {
	var ri dynamic.ResourceInterface = r.a.dyn.Resource(key.resource)
	if key.namespace != "" {
		ri = r.a.dyn.Resource(key.resource).Namespace(key.namespace)
	}
	seen := map[string]bool{}
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(r.ao.Labels).String(), Limit: listPage}
	for {
		list, err := ri.List(ctx, opts)
		if err != nil {
			seen = map[string]bool{}
			break
		}
		for i := range list.Items {
			h, ok := members[list.Items[i].GetName()]
			if !ok {
				continue
			}
			seen[h.t.obj.Ref.Name] = true
			h.compute(&list.Items[i])
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	var missing []*health
	for name, h := range members {
		if !seen[name] {
			missing = append(missing, h)
		}
	}
	return missing
}

// poll reads the object once and computes its kstatus. A read cut by the
// end of the wait keeps the last status seen.
func (h *health) poll(ctx context.Context) {
	u, err := h.t.ri.Get(ctx, h.t.obj.Ref.Name, metav1.GetOptions{})
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			h.message = err.Error()
		}
		return
	}
	h.compute(u)
}

// compute sets the object's kstatus from u, its live state.
func (h *health) compute(u *unstructured.Unstructured) {
	res, err := status.Compute(u)
	if err != nil {
		h.message = err.Error()
		return
	}
	h.status, h.message = res.Status, res.Message
}

// waitEnd is how a stage's wait ended: how long it waited from the end of
// the stage's writes, and whether the run was cancelled (rather than the
// timeout reached).
type waitEnd struct {
	waited    time.Duration
	cancelled bool
}

// record writes the object's health into its changes: the kstatus status,
// and for anything but Current a message with kstatus's reason and, when
// the wait ended first, how long it really waited.
func (h *health) record(end waitEnd) {
	ref := h.t.obj.Ref
	var message string
	switch {
	case h.status == status.CurrentStatus:
	case h.status == status.FailedStatus:
		message = fmt.Sprintf("%s: status %s: %s", ref, h.status, h.message)
	case end.cancelled:
		message = fmt.Sprintf("%s: wait cancelled after %s (status %s: %s)", ref, roundWait(end.waited), h.status, h.message)
	default:
		message = fmt.Sprintf("%s: not Current after waiting %s (status %s: %s)", ref, roundWait(end.waited), h.status, h.message)
	}
	for i := range h.t.changes {
		h.t.changes[i].Health, h.t.changes[i].HealthMessage = string(h.status), message
	}
}

// roundWait rounds a wait for messages: to the second from a second up.
func roundWait(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
