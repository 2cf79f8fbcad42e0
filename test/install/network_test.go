package install

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestNetworkPolicyShape checks what manifests/networkpolicy.yaml lets in
// and out of syncd's pods: the API server accepts it (TestBaseDryRun), but
// only its content says whether /status is reachable from the internet.
// (The test control plane has no network plugin, so enforcement itself is
// not tested here.)
func TestNetworkPolicyShape(t *testing.T) {
	objs := kustomizeBuild(t, "manifests")
	var np networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(findObject(t, objs, "NetworkPolicy", "syncd").Object, &np); err != nil {
		t.Fatal(err)
	}
	d := syncdDeployment(t, objs)
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("podSelector %v does not select the Deployment's pods %v", np.Spec.PodSelector, d.Spec.Template.Labels)
	}
	if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes); diff != "" {
		t.Errorf("policyTypes (-want +got):\n%s", diff)
	}
	var got []string
	for _, r := range np.Spec.Ingress {
		got = append(got, rules("ingress", r.Ports, "from "+peers(r.From))...)
	}
	for _, r := range np.Spec.Egress {
		got = append(got, rules("egress", r.Ports, "to "+peers(r.To))...)
	}
	sort.Strings(got)
	want := []string{
		"egress 22/TCP to anywhere (Git over SSH)",
		"egress 443/TCP to anywhere (API server, Git over HTTPS, alerts)",
		"egress 53/TCP to namespace kube-system",
		"egress 53/UDP to namespace kube-system",
		"egress 6443/TCP to anywhere (API server endpoints)",
		"ingress http/TCP from namespace monitoring",
		"ingress webhook/TCP from anywhere (the Git host)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NetworkPolicy syncd (-want +got):\n%s", diff)
	}
	// The named ports are the container's.
	ports := map[string]bool{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = true
	}
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			if p.Port == nil || !ports[p.Port.String()] {
				t.Errorf("ingress port %v is not a named port of the syncd container", p.Port)
			}
		}
	}
}

// rules describes each port of a rule as "dir port/proto peers (why)".
func rules(dir string, ports []networkingv1.NetworkPolicyPort, peers string) []string {
	var out []string
	if len(ports) == 0 {
		return []string{dir + " every port " + peers}
	}
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		s := fmt.Sprintf("%s %s/%s %s", dir, p.Port, proto, peers)
		if why := portPurpose[s]; why != "" {
			s += " (" + why + ")"
		}
		out = append(out, s)
	}
	return out
}

// portPurpose names why a port is open to anywhere, so the expected list
// reads as the policy's reasons.
var portPurpose = map[string]string{
	"ingress webhook/TCP from anywhere": "the Git host",
	"egress 443/TCP to anywhere":        "API server, Git over HTTPS, alerts",
	"egress 6443/TCP to anywhere":       "API server endpoints",
	"egress 22/TCP to anywhere":         "Git over SSH",
}

// peers describes a rule's peers: "anywhere", "namespace N" (selected by
// kubernetes.io/metadata.name alone) or the raw peers.
func peers(ps []networkingv1.NetworkPolicyPeer) string {
	if len(ps) == 0 {
		return "anywhere"
	}
	var out []string
	for _, p := range ps {
		ns := ""
		if p.NamespaceSelector != nil && len(p.NamespaceSelector.MatchExpressions) == 0 && len(p.NamespaceSelector.MatchLabels) == 1 {
			ns = p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
		}
		if ns == "" || p.PodSelector != nil || p.IPBlock != nil {
			out = append(out, fmt.Sprintf("%+v", p))
			continue
		}
		out = append(out, "namespace "+ns)
	}
	return strings.Join(out, ", ")
}
