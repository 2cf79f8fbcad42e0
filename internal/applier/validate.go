package applier

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

// StageRefusedError is the error of an object that kept its stage from
// being written: the API server refused the dry run of what Git wants of
// it (or the object could not be mapped or read), so nothing of the stage,
// and nothing of the stages after it, was applied. Err is the object's
// own error, naming it and the server's reason.
type StageRefusedError struct {
	Stage planner.Stage
	Err   error
}

// Error names the object and the server's reason (scrubbed of the values
// API errors echo), says what was not applied and what to do: fix the
// object in Git, unless an admission webhook could not be called, which
// no change in Git mends.
func (e *StageRefusedError) Error() string {
	todo := "fix the object in Git"
	if hook, ok := webhookUnreachable(e.Err); ok {
		todo = fmt.Sprintf("the admission webhook %s could not be called, which is not the object's fault: check that its Service has ready endpoints (the webhook's pods run); the next sync tries again", hook)
	}
	return fmt.Sprintf("%s; nothing of stage %s or of later stages was applied: %s", redact.Error(e.Err), e.Stage, todo)
}

// webhookUnreachable reports whether err is the API server's failure to
// call an admission webhook (an internal error whose message is `failed
// calling webhook "NAME": ...`, as for a webhook whose Service has no
// endpoints yet), and the webhook's quoted name.
func webhookUnreachable(err error) (string, bool) {
	if !apierrors.IsInternalError(err) {
		return "", false
	}
	const prefix = "failed calling webhook "
	msg := err.Error()
	i := strings.Index(msg, prefix)
	if i < 0 {
		return "", false
	}
	name, _, ok := strings.Cut(msg[i+len(prefix):], ":")
	return name, ok
}

// Unwrap returns the object's error.
func (e *StageRefusedError) Unwrap() error { return e.Err }

// validates reports whether stages are dry-run before they are written.
// A dry-run Applier already sends nothing but dry runs, each object's
// failure is its own answer.
func (r *objectRun) validates() bool {
	return !r.ao.SkipValidation && !r.a.opts.DryRun
}

// refuseStage judges a stage by its objects' validation dry runs
// (refusals, one per target: nil when accepted or not needed) and reports
// whether the stage may be written: every dry run was accepted and every
// object was read. When it returns false, each refused object's change is
// Failed with a StageRefusedError and the others are left as read said
// (Skipped, or Unchanged for objects with nothing to write).
func refuseStage(stage planner.Stage, targets []*target, refusals []error) bool {
	ok := true
	for i, t := range targets {
		err := refusals[i]
		if err == nil && len(t.changes) > 0 && t.changes[0].Action == Failed {
			err = t.changes[0].Err
		}
		if err == nil {
			continue
		}
		ok = false
		t.changes[0].Action, t.changes[0].Err = Failed, &StageRefusedError{Stage: stage, Err: err}
	}
	return ok
}

// validate dry-runs everything Git wants of one object, as the app's
// default manager and with force (field conflicts with other managers are
// the policy's to decide when the object is written, not a refusal), and
// returns the API server's refusal. An object with nothing to write needs
// no dry run, and neither does one whose outcome the app's Accepted
// record knows or the local judgement vouches for (judge.go; the record
// then keeps it as accepted, so that a retry of a refused stage does not
// dry-run it). A change to an immutable field is no refusal when the app
// allows recreating the object.
func (r *objectRun) validate(ctx context.Context, t *target) error {
	if t.done {
		return nil
	}
	s, err := r.whole(t.obj, t.live != nil)
	if err != nil {
		return err
	}
	key, body, known := r.knownOutcome(t, s)
	if known {
		r.validation.known.Add(1)
		return nil
	}
	if r.judgedLocally(ctx, t, s) {
		r.validation.judged.Add(1)
		r.remember(key)
		return nil
	}
	r.validation.dryRuns.Add(1)
	err = r.dryRun(ctx, t, s, body)
	switch {
	case err == nil:
		r.remember(key)
		return nil
	case isImmutable(err) && r.ao.Recreate:
		return nil
	case isImmutable(err):
		return immutableChanged(t.obj.Ref, err)
	}
	return err
}

// dryRun sends the validation dry run of s for t: a create when
// dryRunsAsCreate says so, else, or when the object turns out to exist by
// then, an apply with force. Only the verdict is read: a create's answer
// is not read at all, an apply's comes back as metadata when the Applier
// has a metadata client.
func (r *objectRun) dryRun(ctx context.Context, t *target, s planner.Slice, body []byte) error {
	if r.dryRunsAsCreate(t, s) {
		data, err := encoded(request{Object: s.Object, Body: body})
		if err != nil {
			return fmt.Errorf("%s: encode: %w", t.obj.Ref, err)
		}
		err = t.creates.dryRunCreate(ctx, data, string(s.Manager))
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return describeError(t.obj.Ref, "dry-run create as "+string(s.Manager), err)
		}
		// Created by someone else since it was read: the apply is judged
		// against the object there now.
	}
	_, err := r.a.sendForMetadata(ctx, t.ri, t.mri, t.obj.Ref, request{Manager: s.Manager, Object: s.Object, Body: body, Force: true, DryRun: true})
	return err
}

// dryRunsAsCreate reports whether the validation dry run of s, the whole
// of what Git wants of t, is sent as a create rather than an apply: when
// the object was read as absent, the planner checked it against a schema
// and the Applier can send creates (MetadataClient). A dry-run create
// costs the API server about an eighth less than a dry-run apply (no
// apply merge, no YAML decode; docs/performance.md), and on such an object
// it refuses what the apply would: the server runs the same defaulting,
// validation and admission (both are a CREATE), and refuses a field the
// schema does not declare (fieldValidation=Strict); what only an apply
// refuses, a list entry given twice, the planner refused already
// (TestBadInputs). The deduced schema checks neither, so an object typed
// with it, or not typed, is dry-run as an apply. The create is authorized
// as create only, where the apply that writes it needs patch too: an
// identity allowed the one and not the other is refused at its first
// write, not by the dry run.
func (r *objectRun) dryRunsAsCreate(t *target, s planner.Slice) bool {
	return t.live == nil && t.creates != nil && t.obj.SchemaChecked() && s.Object.GetResourceVersion() == ""
}

// knownOutcome returns the key of t's dry run of s, the body it
// encoded for the key (for the dry run to send), and whether the app's
// Accepted record holds the key as accepted. Without a record (or when
// the body cannot be encoded, which the dry run then reports) nothing is
// known.
func (r *objectRun) knownOutcome(t *target, s planner.Slice) (*acceptedKey, []byte, bool) {
	if r.ao.Accepted == nil {
		return nil, nil, false
	}
	key, body, err := dryRunKey(t, s)
	if err != nil {
		return nil, nil, false
	}
	return &key, body, r.ao.Accepted.known(key)
}

// remember records an accepted dry run in the app's Accepted record (key
// is nil without one).
func (r *objectRun) remember(key *acceptedKey) {
	if key != nil {
		r.ao.Accepted.accept(*key)
	}
}

// whole returns the object's slices (as prepare sends them) joined into
// one under the default manager: every field Git wants, with the managers
// annotation and the inventory's labels.
func (r *objectRun) whole(obj *planner.Object, exists bool) (planner.Slice, error) {
	sl, err := r.prepare(obj, exists)
	if err != nil {
		return planner.Slice{}, err
	}
	if len(sl) == 1 {
		return sl[0], nil
	}
	fields := fieldpath.NewSet()
	for _, s := range sl {
		fields = fields.Union(s.Fields)
	}
	next, err := obj.Reslice(sl[0].Manager, fields)
	if err != nil {
		return planner.Slice{}, err
	}
	return withExtras(obj, next, sl[0]), nil
}
