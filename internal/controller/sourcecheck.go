package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/identity"
)

// nextSource checks one queued source; false once the queue shut down.
func (c *Controller) nextSource(ctx context.Context) bool {
	key, quit := c.sourceQueue.Get()
	if quit {
		return false
	}
	defer c.sourceQueue.Done(key)
	if err := c.reconcileSource(ctx, key); err != nil && ctx.Err() == nil {
		c.sourceQueue.AddRateLimited(key)
		return true
	}
	c.sourceQueue.Forget(key)
	return true
}

// reconcileSource writes a source's conditions: Ready when its spec
// passes the file validation and the Secrets it names have the keys it
// needs, as the Apps using it read them (sourceReaders). It does not
// poll the repository, chart repository or registry; the Apps using it
// do, their status says whether it answers, and a HelmSource's or an
// OCISource's status.revision is what they fetched (recordFetch).
func (c *Controller) reconcileSource(ctx context.Context, key sourceKey) error {
	lister := c.sourceListers[key.Kind]
	if lister == nil {
		return nil
	}
	obj, err := lister.ByNamespace(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	src, err := decodeSource(key.Kind, obj)
	if err != nil {
		return fmt.Errorf("%s: decode: %w", key, err)
	}
	if len(sourceSecrets(src)) > 0 {
		c.watchSecrets(src.Meta().Namespace)
	}
	check := c.checkSource(ctx, src)
	conds := sourceConditions(src.conditions(), src.Meta().Generation, check)
	c.events.sourceChecked(src, conds)
	if err := c.writeSourceStatus(ctx, src, map[string]any{"observedGeneration": src.Meta().Generation, "conditions": conds}); err != nil {
		return err
	}
	return retryUntilGranted(check.Err)
}

// errAwaitingGrant: a source's check was refused reading a Secret as a
// service account.
var errAwaitingGrant = errors.New("a Secret of the source cannot be read as a service account yet")

// retryUntilGranted returns errAwaitingGrant, which retries the check
// with backoff (as a refused App's reconcile is retried), when err is a
// Secret a service account was refused: RBAC grants are not watched, so
// without a retry the source would stay refused after the grant until
// an App, a Secret or its spec changed.
func retryUntilGranted(err error) error {
	var missing *MissingSecretError
	if errors.As(err, &missing) && missing.Reader != "" && apierrors.IsForbidden(missing.Err) {
		return errAwaitingGrant
	}
	return nil
}

// sourceCheck is how a source's check ended.
type sourceCheck struct {
	// Reason is ReasonValid, or why the source cannot be used (Err).
	Reason v1alpha1.Reason
	Err    error
	// Message is the Ready message of a valid source: what was checked,
	// and as whom.
	Message string
}

// checkSource checks a source's spec and, as each identity the Apps
// using it read them as, its Secrets.
func (c *Controller) checkSource(ctx context.Context, src Source) sourceCheck {
	if err := checkNetworkSource(src); err != nil {
		return sourceCheck{Reason: v1alpha1.ReasonInvalidSpec, Err: err}
	}
	if len(sourceSecrets(src)) == 0 {
		return checkSpec(src, Credentials{}, "the spec is valid and its Secrets have the keys it needs")
	}
	readers, err := c.sourceReaders(src)
	if err != nil {
		return sourceCheck{Reason: v1alpha1.ReasonInvalidSpec, Err: err}
	}
	if len(readers) == 0 {
		return checkSpec(src, assumedCredentials(src), "the spec is valid; its Secrets are not read until an App uses the source, and then as that App reads them (as its service account, when it has one): docs/security.md")
	}
	var as []string
	for _, w := range readers {
		creds, err := w.write(ctx, src)
		if err != nil {
			return sourceCheck{Reason: v1alpha1.ReasonSecretNotFound, Err: err}
		}
		if check := checkSpec(src, creds, ""); check.Err != nil {
			return check
		}
		if w.reader != "" {
			as = append(as, w.reader)
		}
	}
	msg := "the spec is valid and its Secrets have the keys it needs"
	if len(as) > 0 {
		msg += ", read as " + strings.Join(as, " and ")
	}
	return sourceCheck{Reason: v1alpha1.ReasonValid, Message: msg}
}

// checkSpec checks the source's spec with the credentials' files as the
// file config would; msg is the Ready message when it passes.
func checkSpec(src Source, creds Credentials, msg string) sourceCheck {
	if err := checkSourceObject(src, creds); err != nil {
		return sourceCheck{Reason: v1alpha1.ReasonInvalidSpec, Err: err}
	}
	return sourceCheck{Reason: v1alpha1.ReasonValid, Message: msg}
}

// sourceReaders are the credentialWriters a source's check reads its
// Secrets with, so that its status tells whoever may read it no more
// than the reads of the Apps using it already tell them: one per
// identity those Apps read it as (credentialsFor: an App of the
// source's namespace with a service account, its own or the default
// one, reads as that account; one without, or of another namespace, as
// syncd), service accounts in name order, then syncd. A source no App uses is
// read as the default service account of its namespace when the
// operator set one (--default-service-account: the account its Apps
// run as), else by nobody: read as syncd, its status would tell
// whoever may create sources there whether any Secret of the namespace
// exists and which keys it holds, though the account their Apps run as
// may not read it.
func (c *Controller) sourceReaders(src Source) ([]credentialWriter, error) {
	key := keyOf(src)
	users, err := c.usersOf(key)
	if err != nil {
		return nil, err
	}
	byReader := map[string]credentialWriter{}
	for _, app := range users {
		w, err := c.credentialsFor(app, key.Namespace)
		if err != nil {
			return nil, err
		}
		if _, seen := byReader[w.reader]; !seen {
			w.whose = fmt.Sprintf("the service account App %s/%s runs as (a source's Secrets are checked as the Apps using it read them)", app.Namespace, app.Name)
			byReader[w.reader] = w
		}
	}
	if sa := c.opts.Tenancy.DefaultServiceAccount; len(byReader) == 0 && sa != "" {
		w, err := c.credentialsAs(identity.Tenant{App: "the Apps of namespace " + key.Namespace, Namespace: key.Namespace, ServiceAccount: sa})
		if err != nil {
			return nil, err
		}
		w.whose = fmt.Sprintf("the default service account the Apps of namespace %s run as (%s; no App uses the source yet)", key.Namespace, FlagDefaultServiceAccount)
		byReader[w.reader] = w
	}
	readers := make([]credentialWriter, 0, len(byReader))
	for _, user := range slices.Sorted(maps.Keys(byReader)) {
		if user != "" {
			readers = append(readers, byReader[user])
		}
	}
	if w, ok := byReader[""]; ok {
		readers = append(readers, w) // syncd last: an account's refusal is the one to show
	}
	return readers, nil
}

// usersOf are the Apps that read the source key's Secrets, in name
// order, as they run (Tenancy.withDefaults): an App being deleted, one
// whose reference is refused (another namespace's source, not allowed)
// and one whose spec the tenancy refuses read nothing.
func (c *Controller) usersOf(key sourceKey) ([]*v1alpha1.App, error) {
	objs, err := c.apps.List(everything)
	if err != nil {
		return nil, err
	}
	var users []*v1alpha1.App
	for _, o := range objs {
		app, err := appFrom(o)
		if err != nil || !references(app, key) || app.DeletionTimestamp != nil || c.opts.Tenancy.checkSourceRef(app) != nil {
			continue
		}
		if app, err = c.opts.Tenancy.withDefaults(app); err == nil {
			users = append(users, app)
		}
	}
	slices.SortFunc(users, func(a, b *v1alpha1.App) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return users, nil
}

// assumedCredentials are the credentials a source's unread Secrets are
// taken to give when its spec is checked without reading them: what its
// URL needs (a GitSource's token for https, identity and known_hosts
// for ssh, keys for verify), so that only what no Secret could fix is
// refused. The files named do not exist and are never read.
func assumedCredentials(src Source) Credentials {
	if src.Git == nil {
		return Credentials{}
	}
	const unread = "/nonexistent/unread"
	var creds Credentials
	spec := src.Git.Spec
	if spec.SecretRef != nil {
		if sshURL(spec.URL) {
			creds.SSHKeyFile, creds.KnownHosts = unread, unread
		} else {
			creds.TokenFile = unread
		}
	}
	if spec.Verify != nil {
		creds.KeysFile = unread
	}
	return creds
}

// sshURL reports whether a Git URL fetches over ssh: ssh:// or the
// scp-like host:path (admission refuses any other form without a
// scheme).
func sshURL(url string) bool {
	return strings.HasPrefix(strings.ToLower(url), "ssh://") || !strings.Contains(url, "://")
}

// sourceConditions are a source's conditions after a check, with kstatus
// meaning as an App's: Stalled=True when it cannot be used.
func sourceConditions(old []metav1.Condition, generation int64, check sourceCheck) []metav1.Condition {
	conds := append([]metav1.Condition(nil), old...)
	reason := check.Reason
	setCondition(&conds, v1alpha1.ConditionReconciling, metav1.ConditionFalse, reason, "", generation)
	if check.Err != nil {
		setCondition(&conds, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, message(check.Err), generation)
		setCondition(&conds, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, message(check.Err), generation)
		return conds
	}
	setCondition(&conds, v1alpha1.ConditionReady, metav1.ConditionTrue, reason, check.Message, generation)
	setCondition(&conds, v1alpha1.ConditionStalled, metav1.ConditionFalse, reason, "", generation)
	return conds
}

// writeSourceStatus merges fields into the source's status: the check
// writes the conditions, recordFetch the revision, neither the other's.
func (c *Controller) writeSourceStatus(ctx context.Context, src Source, fields map[string]any) error {
	data, err := json.Marshal(map[string]any{"status": fields})
	if err != nil {
		return err
	}
	m := src.Meta()
	_, err = c.opts.Cluster.Dynamic.Resource(sourceResource(src.Kind())).Namespace(m.Namespace).Patch(ctx, m.Name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if err != nil {
		return fmt.Errorf("%s: write status: %w", src, err)
	}
	return nil
}

// sourceResource is the resource of a source kind.
func sourceResource(kind string) schema.GroupVersionResource {
	for _, k := range sourceKinds {
		if k.kind == kind {
			return k.resource
		}
	}
	return v1alpha1.GitSourceResource
}
