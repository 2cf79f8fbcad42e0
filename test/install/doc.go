// Package install holds the tests of syncd's in-cluster install
// (manifests/, manifests/ci/) and of the sample app repository
// (examples/), run against a real kube-apiserver and
// kube-controller-manager from internal/testenv.
//
// What the tests establish: the kustomize base renders and every object is
// accepted by the API server (server-side dry-run apply, and a real
// install); the Deployment's pod passes the restricted Pod Security
// profile its namespace enforces; the ServiceAccount gets exactly the
// rights docs/install.md describes (leader election, inventory Secrets,
// managed kinds) and is refused outside them, and the real syncd binary
// (`syncd run --once`) reconciles the example app from a local Git
// repository as that ServiceAccount; the App-only overlay (the Component
// manifests/components/app-only) renders without the config file and is
// accepted, and the real binary run with its arguments as that
// ServiceAccount is ready and applies an App; the CI identity can dry-run
// the example app and, because RBAC cannot tell a dry-run from a write,
// can also write (the test pins that limit so the docs stay honest);
// examples/syncd.yaml loads and the example app renders into the documented
// objects and per-manager slices; and the GitHub workflow's scripts keep
// a single comment and do not fail on "changes found".
//
// What they do NOT establish: that pods start (the test control plane has
// no scheduler or kubelet), that the image runs, or that the workflow runs
// on GitHub (its shell steps run here with stand-ins for syncd and gh).
package install
