package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/appedit"
)

// The App edits of `syncd reconcile|suspend|resume app` are package
// appedit's, which the buttons of `syncd ui` make too.

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
			return runAppEdit(cmd, f, args[0], appedit.Reconcile)
		},
	}
	f.register(app.Flags())
	f.registerWait(app)
	f.completions(app, v1alpha1.AppResource)
	cmd.AddCommand(app)
	return cmd
}

func newSuspendCommand() *cobra.Command {
	return newSuspensionCommand("suspend", "Stop reconciling an App (spec.suspend: true)", appedit.Suspend)
}

func newResumeCommand() *cobra.Command {
	return newSuspensionCommand("resume", "Reconcile a suspended App again, now (spec.suspend: false and a reconcile request)", appedit.Resume)
}

func newSuspensionCommand(verb, short string, edit appedit.Edit) *cobra.Command {
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
	if edit.Requests {
		f.registerWait(app)
		cmd.Use += " [--wait [--timeout D]]"
		app.Use += " [--wait [--timeout D]]"
	}
	cmd.AddCommand(app)
	return cmd
}

func runAppEdit(cmd *cobra.Command, f *appEditFlags, name string, edit appedit.Edit) error {
	ctx := cmd.Context()
	ac, err := f.connectApps()
	if err != nil {
		return withCode(exitError, err)
	}
	ns := ac.namespace
	requestedAt, err := appedit.Apply(ctx, ac.resource(v1alpha1.AppResource, ns), appedit.Request{Namespace: ns, Name: name, Now: time.Now()}, edit)
	if err != nil {
		return withCode(exitError, err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "App %s/%s %s\n", ns, name, edit.Verb)
	if !f.wait || !edit.Requests {
		return nil
	}
	return waitHandled(ctx, out, ac, handledWait{Namespace: ns, Name: name, RequestedAt: requestedAt, Timeout: f.timeout})
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
