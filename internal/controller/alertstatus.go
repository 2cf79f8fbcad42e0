package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/egress"
)

// reconcileProvider writes an AlertProvider's Ready condition: its
// Secret holds what its type needs, and its address is one syncd may
// reach.
func (c *Controller) reconcileProvider(ctx context.Context, key string) error {
	p, err := getAlertObject[v1alpha1.AlertProvider](c.alertRouter.providers, key)
	if err != nil || p == nil {
		return err
	}
	c.watchSecrets(p.Namespace)
	reason, err := c.checkProvider(ctx, p, key)
	st := alertStatusOf(p.Status, p.Generation, reason, err, "its Secret holds a reachable address")
	return c.writeAlertStatus(ctx, v1alpha1.AlertProviderResource, p.Namespace, p.Name, st)
}

// reconcileAlert builds (or keeps) the notifier of a Ready Alert and
// writes its Ready condition; an Alert that is gone, suspended or not
// Ready has no notifier.
func (c *Controller) reconcileAlert(ctx context.Context, key string) error {
	r := c.alertRouter
	a, err := getAlertObject[v1alpha1.Alert](r.alerts, key)
	if err != nil {
		return err
	}
	if a == nil {
		r.setSink(key, nil)
		return nil
	}
	reason, err := c.buildAlertSink(ctx, key, a)
	if err != nil {
		r.setSink(key, nil)
	}
	ready := fmt.Sprintf("sending the events of the selected Apps to AlertProvider %s", a.Spec.ProviderRef.Name)
	if a.Spec.Suspend {
		reason, err = v1alpha1.ReasonSuspended, errors.New("suspended: the events of the selected Apps are dropped until spec.suspend is false")
	}
	st := alertStatusOf(a.Status, a.Generation, reason, err, ready)
	return c.writeAlertStatus(ctx, v1alpha1.AlertResource, a.Namespace, a.Name, st)
}

// buildAlertSink checks the Alert's provider and installs a notifier on
// it, unless the one installed was built from the same specs.
func (c *Controller) buildAlertSink(ctx context.Context, key string, a *v1alpha1.Alert) (v1alpha1.Reason, error) {
	r := c.alertRouter
	p, err := getAlertObject[v1alpha1.AlertProvider](r.providers, a.Namespace+"/"+a.Spec.ProviderRef.Name)
	if err != nil {
		return v1alpha1.ReasonProviderNotFound, err
	}
	if p == nil {
		return v1alpha1.ReasonProviderNotFound, fmt.Errorf("spec.providerRef: AlertProvider %s/%s not found; create it in the Alert's namespace", a.Namespace, a.Spec.ProviderRef.Name)
	}
	c.watchSecrets(p.Namespace)
	if reason, err := c.checkProvider(ctx, p, key); err != nil {
		return reason, fmt.Errorf("AlertProvider %s: %w", p.Name, err)
	}
	v := sinkVersion{alertGen: a.Generation, providerGen: p.Generation, providerUID: string(p.UID)}
	if old := r.sink(key); old != nil && old.built == v {
		return v1alpha1.ReasonValid, nil
	}
	n, err := alert.New([]alert.Sink{c.sinkOf(key, a, p)}, c.notifierOptions(a))
	if err != nil {
		return v1alpha1.ReasonProviderInvalid, fmt.Errorf("AlertProvider %s: %w", p.Name, err)
	}
	inheritOpen(n, r.sink(key))
	r.setSink(key, &alertSink{notifier: n, spec: *a.Spec.DeepCopy(), built: v})
	return v1alpha1.ReasonValid, nil
}

// inheritOpen makes n, the notifier of an edited Alert or provider,
// resolve what old (the one it replaces; nil: none) alerted and did not
// resolve: without it a finding alerted before the edit would stay open
// at the receiver forever.
func inheritOpen(n *alert.Notifier, old *alertSink) {
	if old != nil {
		n.Inherit(old.notifier)
	}
}

// checkProvider checks what the provider's messages need, as the
// notifier checks it before every message (alert.Check): a Secret with
// an http(s) address that passes egress.CheckTenantURL, and for a
// webhook an HMAC key.
func (c *Controller) checkProvider(ctx context.Context, p *v1alpha1.AlertProvider, sinkName string) (v1alpha1.Reason, error) {
	err := alert.Check(ctx, c.sinkOf(sinkName, nil, p), c.notifierOptions(nil))
	var missing *missingProviderSecret
	switch {
	case errors.As(err, &missing):
		return v1alpha1.ReasonSecretNotFound, err
	case err != nil:
		return v1alpha1.ReasonProviderInvalid, err
	}
	return v1alpha1.ReasonValid, nil
}

// sinkOf is the notifier sink of an Alert (nil: only the provider is
// checked) on provider p, named name.
func (c *Controller) sinkOf(name string, a *v1alpha1.Alert, p *v1alpha1.AlertProvider) alert.Sink {
	s := alert.Sink{
		Name:    name,
		Type:    alert.SinkType(p.Spec.Type),
		Secrets: providerSecret{secrets: c.opts.Secrets, namespace: p.Namespace, name: p.Spec.SecretRef.Name, webhook: p.Spec.Type == string(alert.SinkWebhook)},
	}
	if a != nil {
		s.Events = a.Spec.Events
	}
	return s
}

// notifierOptions are the options of an Alert's notifier (a, nil when
// only a provider is checked): Options.Alerts, with the client and URL
// check of addresses a tenant chose, and failures logged and recorded as
// Events on the Alert without the provider's answer.
func (c *Controller) notifierOptions(a *v1alpha1.Alert) alert.Options {
	o := c.opts.Alerts
	if o.Client == nil {
		o.Client = egress.TenantClient()
	}
	o.CheckURL = egress.CheckTenantURL
	o.ReadFile = nil
	if a != nil {
		ref := &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindAlert, Namespace: a.Namespace, Name: a.Name, UID: a.UID}
		o.ErrorHandler = func(err error) { c.alertNotDelivered(ref, err) }
	}
	return o
}

// alertNotDelivered logs a message an Alert's provider did not take and
// records a Warning Event on the Alert. Neither carries the provider's
// answer: its address is a tenant's choice, and its answer is not to be
// read back through syncd.
func (c *Controller) alertNotDelivered(ref *corev1.ObjectReference, err error) {
	msg := deliveryFailure(err)
	c.log.Warn("alert not delivered", "alert", ref.Namespace+"/"+ref.Name, "error", msg)
	if c.opts.Events != nil {
		c.opts.Events.Eventf(ref, corev1.EventTypeWarning, "AlertNotDelivered", "%s", msg)
	}
}

// deliveryFailure says why a message was given up on, by the kind of
// failure: the HTTP status, or egress.Failure's words for a network
// error; a configuration error (a Secret, an address refused) is
// syncd's own sentence.
func deliveryFailure(err error) string {
	var se *alert.SendError
	if !errors.As(err, &se) {
		return message(err)
	}
	why := egress.Failure(se.Err)
	var st *alert.StatusError
	switch {
	case se.Reason == alert.ReasonConfig:
		why = message(se.Err)
	case errors.As(se.Err, &st):
		why = fmt.Sprintf("the provider answered HTTP %d", st.Code)
	}
	return fmt.Sprintf("%s message %s not delivered after %d attempt(s) (%s): %s", se.Type, se.Fingerprint, se.Attempts, se.Reason, why)
}

// providerSecret reads an AlertProvider's Secret, in the provider's own
// namespace, for every message.
type providerSecret struct {
	secrets         SecretReader
	namespace, name string
	webhook         bool
}

var _ alert.SecretSource = providerSecret{}

// missingProviderSecret is a provider's Secret that does not exist.
type missingProviderSecret struct{ namespace, name string }

func (e *missingProviderSecret) Error() string {
	return fmt.Sprintf("Secret %s/%s not found; create it with key %s holding the provider's webhook URL", e.namespace, e.name, v1alpha1.SecretKeyAddress)
}

// SinkSecrets reads the address and, for a webhook, the HMAC key.
func (s providerSecret) SinkSecrets(ctx context.Context) (alert.SinkSecrets, error) {
	data, err := s.secrets.SecretData(ctx, s.namespace, s.name)
	if apierrors.IsNotFound(err) {
		return alert.SinkSecrets{}, &missingProviderSecret{namespace: s.namespace, name: s.name}
	}
	if err != nil {
		return alert.SinkSecrets{}, fmt.Errorf("read Secret %s/%s: %w", s.namespace, s.name, err)
	}
	where := fmt.Sprintf("Secret %s/%s key ", s.namespace, s.name)
	out := alert.SinkSecrets{URL: data[v1alpha1.SecretKeyAddress], URLFrom: where + v1alpha1.SecretKeyAddress}
	if s.webhook {
		out.HMACKey, out.HMACKeyFrom = data[v1alpha1.SecretKeyHMACKey], where+v1alpha1.SecretKeyHMACKey
	}
	return out, nil
}

// alertStatusOf is an Alert's or AlertProvider's status after a check:
// Ready with ready as message, or not Ready with the reason and error.
func alertStatusOf(old v1alpha1.AlertStatus, generation int64, reason v1alpha1.Reason, err error, ready string) v1alpha1.AlertStatus {
	st := *old.DeepCopy()
	st.ObservedGeneration = generation
	if err != nil {
		setCondition(&st.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, message(err), generation)
		return st
	}
	setCondition(&st.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, reason, ready, generation)
	return st
}

// writeAlertStatus merges st into the status of an Alert or
// AlertProvider.
func (c *Controller) writeAlertStatus(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, st v1alpha1.AlertStatus) error {
	data, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	_, err = c.opts.Cluster.Dynamic.Resource(gvr).Namespace(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s/%s: write status: %w", gvr.Resource, namespace, name, err)
	}
	return nil
}
