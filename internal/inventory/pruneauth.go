package inventory

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/identity"
)

// denied is a removal the app's identity may not do.
type denied struct {
	c    *candidate
	verb string // "delete" or "patch"
}

// deleteOptions is how prune deletes an object read as live: in the
// background, preconditioned on the UID and resourceVersion it read.
func deleteOptions(live *metav1.PartialObjectMetadata) metav1.DeleteOptions {
	uid, rv := live.UID, live.ResourceVersion
	policy := metav1.DeletePropagationBackground
	return metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: &policy,
	}
}

// checksAuthority reports whether prune asks the API server first whether
// the app may remove what it would: only for an app with
// serviceAccountName, whose RBAC is the tenant's, not syncd's.
func (r *Run) checksAuthority() bool { return identity.User(r.app.Tenant) != "" }

// refuseForbidden refuses the whole prune, before anything is removed,
// when the app's service account may not remove one of the objects prune
// would delete or orphan; it reports whether it did. Each removal is sent
// first as a dry run through the app's client: the API server authorizes
// it exactly as the real request (RBAC, and whatever else authorizes) and
// discards it. A tenant that may create but not delete so never gets
// syncd to delete for it, and no prune stops half-way on a denial.
func (r *Run) refuseForbidden(ctx context.Context, rep *Report, cands []*candidate) bool {
	if !r.checksAuthority() {
		return false
	}
	denials := r.denials(ctx, cands)
	if len(denials) == 0 {
		return false
	}
	var what []string
	byCand := map[*candidate]string{}
	for _, d := range denials {
		what = append(what, d.verb+" "+d.c.mem.Ref().String())
		byCand[d.c] = d.verb
	}
	who := identity.User(r.app.Tenant)
	msg := fmt.Sprintf("not pruning: %s (the serviceAccountName of app %s) is forbidden to %s; syncd prunes as the app's service account, so nothing was removed: grant it those verbs on those objects, or remove them by hand",
		who, r.app.Name, strings.Join(what, ", "))
	rep.Refused = &Refusal{Reason: ReasonForbidden, Message: msg}
	r.m.metrics.blocked.WithLabelValues(string(ReasonForbidden)).Inc()
	for _, c := range cands {
		m := msg
		if verb, ok := byCand[c]; ok {
			m = r.forbiddenMessage(verb)
		}
		rep.Spared = append(rep.Spared, Spared{Object: c.mem.Ref(), Reason: ReasonForbidden, Message: m})
	}
	return true
}

// denials dry-runs every delete and orphan patch prune would send and
// returns those the API server answers Forbidden, in candidate order.
// Other answers (gone, changed since the read) are left to the real
// request.
func (r *Run) denials(ctx context.Context, cands []*candidate) []denied {
	out := make([]*denied, len(cands))
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(r.m.opts.Concurrency)
	for i, c := range cands {
		if c.action != pruneDelete && c.action != pruneOrphan {
			continue
		}
		eg.Go(func() error {
			verb, err := r.tryRemove(ectx, c)
			if apierrors.IsForbidden(err) {
				out[i] = &denied{c: c, verb: verb}
			}
			return nil
		})
	}
	_ = eg.Wait()
	var list []denied
	for _, d := range out {
		if d != nil {
			list = append(list, *d)
		}
	}
	return list
}

// tryRemove sends a candidate's removal as a dry run and returns its verb
// and the API server's answer.
func (r *Run) tryRemove(ctx context.Context, c *candidate) (string, error) {
	dry := []string{metav1.DryRunAll}
	if c.action == pruneOrphan {
		patch, err := r.orphanPatch(c.live)
		if err != nil {
			return "patch", err
		}
		_, err = c.ri.Patch(ctx, c.mem.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: StoreManager, DryRun: dry})
		return "patch", err
	}
	opts := deleteOptions(c.live)
	opts.DryRun = dry
	return "delete", c.ri.Delete(ctx, c.mem.Name, opts)
}

// forbiddenMessage is the reason of an object the app's identity may not
// remove with verb.
func (r *Run) forbiddenMessage(verb string) string {
	if !r.checksAuthority() {
		return fmt.Sprintf("not pruned: syncd may not %s it (Forbidden): grant syncd's own role %s on it, or remove it by hand", verb, verb)
	}
	return fmt.Sprintf("not pruned: %s may not %s it (Forbidden); syncd prunes app %s as its serviceAccountName, never as itself: grant the account %s on it, or remove it by hand",
		identity.Name(r.app.Tenant), verb, r.app.Name, verb)
}
