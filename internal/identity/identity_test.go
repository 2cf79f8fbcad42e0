package identity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

func TestConfig(t *testing.T) {
	base := &rest.Config{Host: "https://api"}
	tests := map[string]struct {
		tenant   Tenant
		base     *rest.Config
		wantUser string
		wantName string
		wantErr  bool
	}{
		"syncd's own":      {tenant: Tenant{App: "a", Namespace: "ns"}, base: base, wantName: Syncd},
		"service account":  {tenant: Tenant{App: "a", Namespace: "ns", ServiceAccount: "deployer"}, base: base, wantUser: "system:serviceaccount:ns:deployer", wantName: "system:serviceaccount:ns:deployer"},
		"no config to use": {tenant: Tenant{App: "a", Namespace: "ns", ServiceAccount: "deployer"}, wantUser: "system:serviceaccount:ns:deployer", wantName: "system:serviceaccount:ns:deployer", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantUser, User(tc.tenant)); diff != "" {
				t.Errorf("User (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantName, Name(tc.tenant)); diff != "" {
				t.Errorf("Name (-want +got):\n%s", diff)
			}
			cfg, err := Config(tc.base, tc.tenant)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Config error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.wantUser, cfg.Impersonate.UserName); diff != "" {
				t.Errorf("impersonated user (-want +got):\n%s", diff)
			}
			if tc.wantUser != "" && base.Impersonate.UserName != "" {
				t.Errorf("Config changed the base config: %+v", base.Impersonate)
			}
		})
	}
}
