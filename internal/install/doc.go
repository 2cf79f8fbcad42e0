// Package install renders syncd's own Helm chart (charts/syncd, embedded
// in the binary), applies it with Server-Side Apply, waits for its
// rollout, and checks an install (`syncd install`, `syncd check`).
//
// Render is Helm's engine over the embedded chart with values layered the
// way helm does (-f files, then --set), over the defaults `syncd install`
// adds (the Namespace object, the image tag of the binary's version).
// Apply sends each object as field manager syncd-install, in an order that
// puts CRDs and the Namespace first; an object the server leaves as it was
// is reported unchanged, so a second install writes nothing.
//
// Check runs read-only checks, each a Result with a PASS, FAIL or SKIP
// state: the API server's version against the chart's kubeVersion, the
// CRDs against the embedded ones, the identity's rights (one
// SelfSubjectAccessReview per rule), the Deployments' rollout (kstatus),
// and whether each source's host answers. It never reads a Secret: a
// source's reachability is tested without its credentials, and a URL is
// shown without its user information.
//
// It does not guarantee an install that works: a Deployment rolls out
// only once its image can be pulled, and a source reachable from where
// check runs may not be from syncd's pods (their NetworkPolicy).
package install
