package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// The App edits of `syncd reconcile|suspend|resume app` are JSON merge
// patches (like kubectl annotate and flux suspend), not server-side
// applies, under cliManager:
//   - each is a one-shot imperative edit of one field, not a declaration
//     syncd-cli keeps holding: an apply would make syncd-cli an owner of
//     spec.suspend that a later apply of the App from Git conflicts with,
//     and the annotation's value changes on every reconcile (an apply
//     would need force each time another tool, say kubectl annotate,
//     last set it);
//   - a patch of a missing App is a 404, where an apply would try to
//     create a half App.

// appEditFlags are the flags of the App edit commands.
type appEditFlags struct {
	objectFlags
	wait    bool
	timeout time.Duration
}

func (f *appEditFlags) registerWait(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.wait, "wait", false, "wait until the controller has handled the request (status.lastHandledReconcileAt) and report the App's Ready condition; exit 1 when it is not Ready")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long --wait waits")
}

func newReconcileCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reconcile app NAME [-n NS] [--wait [--timeout D]]",
		Short: "Ask the controller to reconcile an App now",
		Args:  cobra.NoArgs,
	}
	f := &appEditFlags{}
	app := &cobra.Command{
		Use:   "app NAME [-n NS] [--wait [--timeout D]]",
		Short: "Set the App's " + v1alpha1.RequestedAtAnnotation + " annotation to now, so that the controller reconciles it now",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAppEdit(cmd, f, args[0], reconcileEdit)
		},
	}
	f.register(app.Flags())
	f.registerWait(app)
	f.completions(app, v1alpha1.AppResource)
	cmd.AddCommand(app)
	return cmd
}

func newSuspendCommand() *cobra.Command {
	return newSuspensionCommand("suspend", "Stop reconciling an App (spec.suspend: true)", suspendEdit)
}

func newResumeCommand() *cobra.Command {
	return newSuspensionCommand("resume", "Reconcile a suspended App again, now (spec.suspend: false and a reconcile request)", resumeEdit)
}

func newSuspensionCommand(verb, short string, edit appEdit) *cobra.Command {
	cmd := &cobra.Command{
		Use:   verb + " app NAME [-n NS]",
		Short: short,
		Args:  cobra.NoArgs,
	}
	f := &appEditFlags{}
	app := &cobra.Command{
		Use:   "app NAME [-n NS]",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return runAppEdit(cmd, f, args[0], edit) },
	}
	f.register(app.Flags())
	f.completions(app, v1alpha1.AppResource)
	if edit.requests {
		f.registerWait(app)
	}
	cmd.AddCommand(app)
	return cmd
}

// appEdit is one of the App edit commands: what it sets, and whether it
// asks for a reconcile (and so can wait for one).
type appEdit struct {
	// verb names the edit in messages ("suspended").
	verb string
	// suspend is the spec.suspend to set; nil leaves it.
	suspend *bool
	// requests sets the requestedAt annotation.
	requests bool
	// refuseSuspended refuses a suspended App: the controller does not
	// reconcile it, so the request would never be handled.
	refuseSuspended bool
}

var (
	yes, no       = true, false
	reconcileEdit = appEdit{verb: "reconcile requested", requests: true, refuseSuspended: true}
	suspendEdit   = appEdit{verb: "suspended", suspend: &yes}
	resumeEdit    = appEdit{verb: "resumed", suspend: &no, requests: true}
)

func runAppEdit(cmd *cobra.Command, f *appEditFlags, name string, edit appEdit) error {
	ctx := cmd.Context()
	ac, err := f.connectApps()
	if err != nil {
		return withCode(exitError, err)
	}
	ns := ac.namespace
	app, err := ac.getApp(ctx, ns, name)
	if err != nil {
		return withCode(exitError, err)
	}
	if edit.refuseSuspended && app.Spec.Suspend {
		return withCode(exitError, fmt.Errorf("App %s/%s is suspended (spec.suspend: true): the controller does not reconcile it; resume it with syncd resume app %s -n %s", ns, name, name, ns))
	}
	requestedAt := ""
	if edit.requests {
		requestedAt = time.Now().UTC().Format(time.RFC3339Nano)
	}
	patch, err := editPatch(edit, requestedAt)
	if err != nil {
		return withCode(exitError, err)
	}
	_, err = ac.resource(v1alpha1.AppResource, ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: cliManager.String()})
	if err != nil {
		return withCode(exitError, fmt.Errorf("App %s/%s: patch: %w", ns, name, err))
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "App %s/%s %s\n", ns, name, edit.verb)
	if !f.wait || !edit.requests {
		return nil
	}
	return waitHandled(ctx, out, ac, handledWait{Namespace: ns, Name: name, RequestedAt: requestedAt, Timeout: f.timeout})
}

// editPatch is the merge patch of an edit.
func editPatch(edit appEdit, requestedAt string) ([]byte, error) {
	patch := map[string]any{}
	if requestedAt != "" {
		patch["metadata"] = map[string]any{"annotations": map[string]string{v1alpha1.RequestedAtAnnotation: requestedAt}}
	}
	if edit.suspend != nil {
		patch["spec"] = map[string]any{"suspend": *edit.suspend}
	}
	return json.Marshal(patch)
}

// handledWait is what waitHandled waits for: the App's status saying
// the controller handled the request value.
type handledWait struct {
	Namespace, Name string
	RequestedAt     string
	Timeout         time.Duration
}

// errTimedOut marks a wait that ended before the controller answered.
var errTimedOut = errors.New("timed out")

// waitHandled polls the App until status.lastHandledReconcileAt is the
// request's value, then reports the Ready condition the same reconcile
// wrote: an error when it is not True.
func waitHandled(ctx context.Context, out io.Writer, ac *appCluster, w handledWait) error {
	var app *v1alpha1.App
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, w.Timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		app, err = ac.getApp(ctx, w.Namespace, w.Name)
		if err != nil {
			return false, err
		}
		return app.Status.LastHandledReconcileAt == w.RequestedAt, nil
	})
	if wait.Interrupted(err) {
		return withCode(exitError, fmt.Errorf("App %s/%s: %w after %s: the controller has not handled the request %s=%s; check that syncd runs with the CRDs installed and the App in its shard (its log says so), or wait longer with --timeout", w.Namespace, w.Name, errTimedOut, w.Timeout, v1alpha1.RequestedAtAnnotation, w.RequestedAt))
	}
	if err != nil {
		return withCode(exitError, err)
	}
	return reportReady(out, app)
}

// reportReady prints a handled App's outcome; not Ready is an error with
// the condition's reason and message.
func reportReady(out io.Writer, app *v1alpha1.App) error {
	c := readyCondition(app.Status.Conditions)
	if c == nil || c.Status != metav1.ConditionTrue {
		reason, msg := "no Ready condition", ""
		if c != nil {
			reason, msg = c.Reason, c.Message
		}
		return withCode(exitError, fmt.Errorf("App %s/%s reconciled but not Ready (%s): %s", app.Namespace, app.Name, reason, msg))
	}
	fmt.Fprintf(out, "App %s/%s is Ready: %s\n", app.Namespace, app.Name, c.Message)
	return nil
}
