package install

import (
	"strings"
	"testing"
	"time"
)

// TestShutdownGraceFitsTermination: the Deployment's
// --shutdown-grace-period (how long the leader lets its objects in
// flight finish before it releases the Lease) leaves the kubelet's
// terminationGracePeriodSeconds room for the HTTP servers' shutdown and
// the Event flush, so the kubelet's SIGKILL never cuts the handoff.
func TestShutdownGraceFitsTermination(t *testing.T) {
	d := syncdDeployment(t, kustomizeBuild(t, "manifests"))
	pod := d.Spec.Template.Spec
	var grace time.Duration
	found := false
	for _, a := range pod.Containers[0].Args {
		v, ok := strings.CutPrefix(a, "--shutdown-grace-period=")
		if !ok {
			continue
		}
		g, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("--shutdown-grace-period=%s: %v", v, err)
		}
		grace, found = g, true
	}
	if !found {
		t.Fatal("the Deployment does not set --shutdown-grace-period; set it next to terminationGracePeriodSeconds so that the two are changed together")
	}
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("the Deployment does not set terminationGracePeriodSeconds")
	}
	term := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	const room = 10 * time.Second // HTTP shutdown (5 s) and the Event flush
	if grace <= 0 || grace+room > term {
		t.Errorf("--shutdown-grace-period %s with terminationGracePeriodSeconds %s: want 0 < grace period <= %s (terminationGracePeriodSeconds minus %s)", grace, term, term-room, room)
	}
}
