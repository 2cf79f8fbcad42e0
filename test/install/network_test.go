package install

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// restrictedEgressOverlay is the overlay docs/install.md tells an install
// with restricted egress to write: manifests/ with the Component
// manifests/components/restricted-egress, its addresses set.
const restrictedEgressOverlay = "test/install/testdata/restricted-egress"

// private and public are the peers of the base's API server rule and of
// its public-address rule.
const (
	private = "ipBlock 10.0.0.0/8, ipBlock 172.16.0.0/12, ipBlock 192.168.0.0/16, ipBlock fc00::/7"
	public  = "ipBlock 0.0.0.0/0 except 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 100.64.0.0/10 169.254.0.0/16 127.0.0.0/8, ipBlock ::/0 except fc00::/7 fe80::/10 ::1/128"
)

// TestNetworkPolicyShape checks what manifests/networkpolicy.yaml lets in
// and out of syncd's pods, alone and with the restricted-egress
// Component: the API server accepts it (TestBaseDryRun, and the dry run
// here), but only its content says whether /status is reachable from the
// internet, or where a tenant's kubeconfig may make syncd connect. (The
// test control plane has no network plugin, so enforcement itself is not
// tested here.)
func TestNetworkPolicyShape(t *testing.T) {
	ingress := []string{
		"ingress http/TCP from namespace monitoring",
		"ingress webhook/TCP from anywhere (the Git host)",
	}
	tests := map[string]struct {
		dir    string
		egress []string
	}{
		"base": {dir: "manifests", egress: []string{
			"egress 22/TCP to anywhere (Git over SSH)",
			"egress 443/TCP to " + private,
			"egress 443/TCP to " + public,
			"egress 53/TCP to namespace kube-system",
			"egress 53/UDP to namespace kube-system",
			"egress 6443/TCP to " + private,
		}},
		"restricted egress": {dir: restrictedEgressOverlay, egress: []string{
			"egress 22/TCP to " + public,
			"egress 443/TCP to " + public,
			"egress 443/TCP to ipBlock 10.0.0.1/32",
			"egress 443/TCP to ipBlock 10.20.0.0/24, ipBlock 203.0.113.7/32",
			"egress 53/TCP to namespace kube-system",
			"egress 53/UDP to namespace kube-system",
			"egress 6443/TCP to ipBlock 10.0.0.1/32",
			"egress 6443/TCP to ipBlock 10.20.0.0/24, ipBlock 203.0.113.7/32",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := kustomizeBuild(t, tc.dir)
			np := networkPolicy(t, objs)
			got := policyRules(np)
			want := append(slices.Clone(ingress), tc.egress...)
			sort.Strings(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("NetworkPolicy syncd (-want +got):\n%s", diff)
			}
			checkSelectsSyncd(t, np, syncdDeployment(t, objs))
			dryRunAll(t, []*unstructured.Unstructured{findObject(t, objs, "Namespace", "syncd-system"), findObject(t, objs, "NetworkPolicy", "syncd")})
		})
	}
}

// networkPolicy is the NetworkPolicy syncd of a build.
func networkPolicy(t *testing.T, objs []*unstructured.Unstructured) networkingv1.NetworkPolicy {
	t.Helper()
	var np networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(findObject(t, objs, "NetworkPolicy", "syncd").Object, &np); err != nil {
		t.Fatal(err)
	}
	return np
}

// policyRules describes every port of every rule, sorted.
func policyRules(np networkingv1.NetworkPolicy) []string {
	var got []string
	for _, r := range np.Spec.Ingress {
		got = append(got, rules("ingress", r.Ports, "from "+peers(r.From))...)
	}
	for _, r := range np.Spec.Egress {
		got = append(got, rules("egress", r.Ports, "to "+peers(r.To))...)
	}
	sort.Strings(got)
	return got
}

// checkSelectsSyncd fails unless the policy selects the Deployment's pods
// for both directions and its ingress ports are the container's named
// ports.
func checkSelectsSyncd(t *testing.T, np networkingv1.NetworkPolicy, d *appsv1.Deployment) {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("podSelector %v does not select the Deployment's pods %v", np.Spec.PodSelector, d.Spec.Template.Labels)
	}
	if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes); diff != "" {
		t.Errorf("policyTypes (-want +got):\n%s", diff)
	}
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
	"egress 22/TCP to anywhere":         "Git over SSH",
}

// peers describes a rule's peers: "anywhere", "namespace N" (selected by
// kubernetes.io/metadata.name alone), "ipBlock CIDR [except ...]" or the
// raw peers.
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
		if b := p.IPBlock; b != nil && p.NamespaceSelector == nil && p.PodSelector == nil {
			out = append(out, strings.TrimSpace("ipBlock "+b.CIDR+" "+exceptions(b.Except)))
			continue
		}
		if ns == "" || p.PodSelector != nil || p.IPBlock != nil {
			out = append(out, fmt.Sprintf("%+v", p))
			continue
		}
		out = append(out, "namespace "+ns)
	}
	return strings.Join(out, ", ")
}

// exceptions describes an ipBlock's except list.
func exceptions(cidrs []string) string {
	if len(cidrs) == 0 {
		return ""
	}
	return "except " + strings.Join(cidrs, " ")
}
