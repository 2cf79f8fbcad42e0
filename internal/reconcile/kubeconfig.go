package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfig is a remote cluster's kubeconfig as read, before clientcmd
// loads it.
type kubeconfig struct {
	data []byte
	// path is the file it was read from (empty for a Secret): relative
	// file names in it are taken from its directory, as kubectl does.
	path string
	// where names it in errors ("kubeconfigFile /x", "Secret ns/n key k").
	where string
	// fromSecret: whoever may write the Secret wrote it, so it may not
	// make syncd run programs or read syncd's files (secretRules), nor
	// send requests anywhere but an API server (destinationRules).
	fromSecret bool
	// allowProxy lets a kubeconfig from a Secret name a proxy-url
	// (TargetsOptions.AllowKubeconfigProxy).
	allowProxy bool
}

// restConfig loads the kubeconfig with clientcmd and returns the client
// config of the context (its current-context when empty). Unlike
// client-go's default loading it never falls back to the in-cluster
// config or $KUBECONFIG: an empty or wrong kubeconfig is an error, not
// syncd's own cluster. Errors never quote the kubeconfig's content.
func (kc kubeconfig) restConfig(context string) (*rest.Config, error) {
	raw, err := clientcmd.Load(kc.data)
	if err != nil {
		return nil, fmt.Errorf("%s is not a kubeconfig clientcmd can load: write the cluster's kubeconfig (kubectl config view --minify --flatten) there", kc.where)
	}
	if kc.path != "" {
		originFrom(raw, kc.path)
		if err := clientcmd.ResolveLocalPaths(raw); err != nil {
			return nil, fmt.Errorf("%s: %w", kc.where, err)
		}
	}
	name, err := contextOf(raw, context, kc.where)
	if err != nil {
		return nil, err
	}
	if kc.fromSecret {
		if err := secretRules(raw, name, kc.where); err != nil {
			return nil, err
		}
		if err := destinationRules(raw, name, kc.where, kc.allowProxy); err != nil {
			return nil, err
		}
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%s, context %s: %w", kc.where, name, err)
	}
	return cfg, nil
}

// originFrom records path as where each part of raw came from, as
// clientcmd.LoadFromFile does, so ResolveLocalPaths resolves against it.
func originFrom(raw *clientcmdapi.Config, path string) {
	for _, c := range raw.Clusters {
		c.LocationOfOrigin = path
	}
	for _, a := range raw.AuthInfos {
		a.LocationOfOrigin = path
	}
	for _, c := range raw.Contexts {
		c.LocationOfOrigin = path
	}
}

// contextOf returns the context to use: context, else current-context;
// it must exist.
func contextOf(raw *clientcmdapi.Config, context, where string) (string, error) {
	name := context
	if name == "" {
		name = raw.CurrentContext
	}
	if name == "" {
		return "", fmt.Errorf("%s has no current-context: set cluster.context to one of its contexts (%s)", where, contextNames(raw))
	}
	if _, ok := raw.Contexts[name]; !ok {
		return "", fmt.Errorf("%s has no context %q: set cluster.context to one of its contexts (%s)", where, name, contextNames(raw))
	}
	return name, nil
}

func contextNames(raw *clientcmdapi.Config) string {
	names := make([]string, 0, len(raw.Contexts))
	for n := range raw.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "it has none"
	}
	return strings.Join(names, ", ")
}

// errSecretKubeconfig is wrapped by the refusal of a kubeconfig from a
// Secret that would run a program or read a file on syncd's side.
var errSecretKubeconfig = errors.New("a kubeconfig from a Secret may not run programs or read syncd's files")

// secretRules refuses, in the context a kubeconfig from a Secret uses,
// what would let whoever writes the Secret act as syncd's pod: exec
// credential plugins and auth providers (programs run by syncd) and file
// names (certificate-authority, client-certificate, client-key,
// tokenFile: syncd's own files, its service account token among them).
// The data fields (certificate-authority-data, token, ...) hold the same.
func secretRules(raw *clientcmdapi.Config, context, where string) error {
	ctx := raw.Contexts[context]
	var bad []string
	if c := raw.Clusters[ctx.Cluster]; c != nil && c.CertificateAuthority != "" {
		bad = append(bad, "certificate-authority (use certificate-authority-data)")
	}
	if a := raw.AuthInfos[ctx.AuthInfo]; a != nil {
		if a.Exec != nil {
			bad = append(bad, "exec (put a token or a client certificate in the kubeconfig)")
		}
		if a.AuthProvider != nil {
			bad = append(bad, "auth-provider")
		}
		if a.ClientCertificate != "" || a.ClientKey != "" {
			bad = append(bad, "client-certificate/client-key (use client-certificate-data and client-key-data)")
		}
		if a.TokenFile != "" {
			bad = append(bad, "tokenFile (use token)")
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s, context %s: %w: remove %s, or use cluster.kubeconfigFile", where, context, errSecretKubeconfig, strings.Join(bad, ", "))
	}
	return nil
}
