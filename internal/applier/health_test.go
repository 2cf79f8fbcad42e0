package applier

import (
	"strings"
	"testing"
	"time"
)

// TestWaitDeployment: the test control plane runs kube-controller-manager
// but no scheduler or kubelet. A Deployment with replicas 0 is rolled out
// by the Deployment controller alone and becomes Current; one with a
// replica never gets a running pod, so it stays InProgress and the wait
// ends at its timeout with a message saying so. Neither outcome depends on
// how fast the machine is: the first has a generous deadline, the second
// can never become Current.
func TestWaitDeployment(t *testing.T) {
	tests := map[string]struct {
		replicas    int
		timeout     time.Duration
		wantHealth  string
		wantMessage []string
	}{
		"no replicas: Current": {replicas: 0, timeout: 2 * time.Minute, wantHealth: "Current"},
		"a replica that never runs: InProgress at the timeout": {
			replicas: 1, timeout: 3 * time.Second, wantHealth: "InProgress",
			wantMessage: []string{"Deployment ", "/web: not Current after waiting 3s (status InProgress: "},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			cs := c.apply(t, c.plan(t, webApp(ns, "syncd-web"), deployment("web", tc.replicas, "nginx:1.27")), ApplyOptions{Wait: true, Timeout: tc.timeout})
			wantChanges(t, cs, "Deployment web syncd-web created")
			got := cs.Changes[0]
			t.Logf("health %s, message %q", got.Health, got.HealthMessage)
			if got.Health != tc.wantHealth {
				t.Errorf("Health = %q, want %q (message %q)", got.Health, tc.wantHealth, got.HealthMessage)
			}
			if len(tc.wantMessage) == 0 && got.HealthMessage != "" {
				t.Errorf("HealthMessage = %q for a Current object, want none", got.HealthMessage)
			}
			for _, w := range tc.wantMessage {
				if !strings.Contains(got.HealthMessage, w) {
					t.Errorf("HealthMessage %q lacks %q", got.HealthMessage, w)
				}
			}
		})
	}
}
