package reconcile

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// errKubeconfigDestination is wrapped by the refusal of a kubeconfig
// from a Secret that would send syncd's requests somewhere other than
// an API server's root over verified TLS.
var errKubeconfigDestination = errors.New("a kubeconfig from a Secret may only name an https API server, reached directly over verified TLS")

// destinationRules refuses, in the cluster of the context a kubeconfig
// from a Secret uses, what would turn syncd into a client of any
// address for whoever writes the Secret: a server that is not https, or
// that has a path (syncd would send GET <server>/version and its other
// requests below any path of any host: a service proxy, a metadata
// endpoint), user info, a query or a fragment; a proxy-url (a CONNECT to
// any address), unless the operator allows it; and
// insecure-skip-tls-verify (no policy allows it: give the CA). Nothing
// is sent before these are checked.
func destinationRules(raw *clientcmdapi.Config, context, where string, allowProxy bool) error {
	c := raw.Clusters[raw.Contexts[context].Cluster]
	if c == nil {
		return nil // clientcmd names the missing cluster
	}
	bad := serverProblems(c.Server)
	if c.ProxyURL != "" && !allowProxy {
		bad = append(bad, "proxy-url (an operator may allow it: syncd --allow-kubeconfig-proxy)")
	}
	if c.InsecureSkipTLSVerify {
		bad = append(bad, "insecure-skip-tls-verify (give the API server's CA in certificate-authority-data)")
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s, context %s: %w: %s", where, context, errKubeconfigDestination, strings.Join(bad, "; "))
	}
	return nil
}

// serverProblems says what is wrong with a server address from a
// Secret's kubeconfig: it must be https://HOST[:PORT], with no path but
// "/". The address is quoted without user info.
func serverProblems(server string) []string {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return []string{"server is not an address https://HOST[:PORT]"}
	}
	var bad []string
	if u.Scheme != "https" {
		bad = append(bad, fmt.Sprintf("server %s is not https (write https://HOST[:PORT])", u.Redacted()))
	}
	if u.Path != "" && u.Path != "/" || u.RawPath != "" {
		bad = append(bad, fmt.Sprintf("server %s has a path: name the API server's root, https://%s", u.Redacted(), u.Host))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		bad = append(bad, "server has user info, a query or a fragment: name the API server's root, https://HOST[:PORT]")
	}
	return bad
}
