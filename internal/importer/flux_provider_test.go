package importer

import "testing"

// provider: generic (Flux's default) is what syncd does and is not
// warned about; a cloud's workload identity is.
func TestProviderWarnedOnlyForCloudIdentity(t *testing.T) {
	for name, tc := range map[string]struct {
		kind, provider string
		want           bool
	}{
		"GitRepository without provider":  {kind: "GitRepository"},
		"GitRepository generic":           {kind: "GitRepository", provider: "generic"},
		"GitRepository github":            {kind: "GitRepository", provider: "github", want: true},
		"GitRepository azure":             {kind: "GitRepository", provider: "azure", want: true},
		"OCIRepository generic":           {kind: "OCIRepository", provider: "generic"},
		"OCIRepository aws":               {kind: "OCIRepository", provider: "aws", want: true},
		"HelmRepository generic":          {kind: "HelmRepository", provider: "generic"},
		"HelmRepository gcp":              {kind: "HelmRepository", provider: "gcp", want: true},
		"HelmRepository without provider": {kind: "HelmRepository"},
		"OCIRepository without provider":  {kind: "OCIRepository"},
	} {
		t.Run(name, func(t *testing.T) {
			url := map[string]string{"GitRepository": "https://git.example.com/r.git", "OCIRepository": "oci://ghcr.io/org/m", "HelmRepository": "https://charts.example.com"}[tc.kind]
			y := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: " + tc.kind + "\nmetadata: {name: s, namespace: flux-system}\nspec:\n  interval: 1m\n  url: " + url + "\n"
			if tc.provider != "" {
				y += "  provider: " + tc.provider + "\n"
			}
			res := importYAML(t, Flux, Options{}, y)
			got := warningsAbout(res.Warnings, tc.kind+" flux-system/s", "spec.provider")
			if (len(got) > 0) != tc.want {
				t.Errorf("provider %q: warnings %q, want a warning: %v", tc.provider, got, tc.want)
			}
			if tc.want && !hasWarning(res.Warnings, tc.kind+" flux-system/s", "spec.provider", "cloud workload identity is not supported", `"`+tc.provider+`"`) {
				t.Errorf("provider %q: warning %q does not say it is unsupported", tc.provider, got)
			}
		})
	}
}

// verify.provider: openpgp (the only one Flux has for a GitRepository)
// is what syncd verifies; another is warned about.
func TestVerifyProviderOpenPGPIsNotWarned(t *testing.T) {
	for provider, want := range map[string]bool{"": false, "openpgp": false, "cosign": true} {
		t.Run(provider, func(t *testing.T) {
			y := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: s, namespace: flux-system}\nspec:\n  interval: 1m\n  url: https://git.example.com/r.git\n  ref: {branch: main}\n  verify: {mode: HEAD, secretRef: {name: keys}"
			if provider != "" {
				y += ", provider: " + provider
			}
			res := importYAML(t, Flux, Options{}, y+"}\n")
			if got := warningsAbout(res.Warnings, "GitRepository flux-system/s", "spec.verify.provider"); (len(got) > 0) != want {
				t.Errorf("verify.provider %q: warnings %q, want a warning: %v", provider, got, want)
			}
		})
	}
}
