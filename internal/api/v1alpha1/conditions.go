package v1alpha1

// ConditionType is the type of a status condition of a GitSource or an
// App. The three types have kstatus meaning (sigs.k8s.io/cli-utils
// pkg/kstatus): Reconciling=True is InProgress, Stalled=True is Failed,
// and neither with observedGeneration equal to metadata.generation is
// Current.
type ConditionType string

// Condition types.
const (
	// ConditionReady is True when the last reconcile of the current
	// generation applied everything; `kubectl wait --for=condition=Ready`
	// waits for it.
	ConditionReady ConditionType = "Ready"
	// ConditionReconciling is True while the controller works on a
	// generation it has not finished once.
	ConditionReconciling ConditionType = "Reconciling"
	// ConditionStalled is True when the last attempt failed; the
	// controller retries with backoff, and the reason says why. A failed
	// poll of the source is not Stalled: it heals by itself, and the last
	// revision applied stays in force meanwhile (Ready=False, reason
	// SourceFailed).
	ConditionStalled ConditionType = "Stalled"
)

// Reason is the machine-readable reason of a condition.
type Reason string

// Reasons of the conditions.
const (
	ReasonSucceeded      Reason = "ReconciliationSucceeded"
	ReasonProgressing    Reason = "Progressing"
	ReasonInvalidSpec    Reason = "InvalidSpec"
	ReasonSourceNotFound Reason = "SourceNotFound"
	ReasonSecretNotFound Reason = "SecretNotFound"
	// ReasonSourceFailed: the source could not be polled. The App is
	// Ready=False but not Stalled: the poll is retried with backoff and
	// the last revision applied stays in force.
	ReasonSourceFailed Reason = "SourceFailed"
	ReasonRenderFailed Reason = "RenderFailed"
	ReasonApplyFailed  Reason = "ApplyFailed"
	ReasonConflicts    Reason = "FieldConflicts"
	ReasonUnhealthy    Reason = "HealthCheckFailed"
	// ReasonPruneFailed: everything was applied, but the prune of what
	// left Git, or the record of it, did not complete.
	ReasonPruneFailed Reason = "PruneFailed"
	// ReasonClusterUnreachable: the App's remote cluster (spec.cluster)
	// did not answer; nothing was sent or pruned there.
	ReasonClusterUnreachable Reason = "ClusterUnreachable"
	ReasonNameCollision      Reason = "NameCollision"
	ReasonSuspended          Reason = "Suspended"
	ReasonDeleting           Reason = "Pruning"
	ReasonValid              Reason = "Valid"
	// ReasonDependencyNotReady: an App of spec.dependsOn is not Ready
	// yet; the App waits (Reconciling=True, not Stalled).
	ReasonDependencyNotReady Reason = "DependencyNotReady"
	// ReasonDependencyCycle: spec.dependsOn leads back to the App
	// through other Apps; none of them can be applied (Stalled).
	ReasonDependencyCycle Reason = "DependencyCycle"
	// ReasonCrossNamespaceRef: spec.sourceRef names a GitSource of
	// another namespace, and the operator does not allow it.
	ReasonCrossNamespaceRef Reason = "CrossNamespaceRefRefused"
)
