package identity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/config"
)

func TestConfig(t *testing.T) {
	base := &rest.Config{Host: "https://api"}
	tests := map[string]struct {
		app      config.App
		base     *rest.Config
		wantUser string
		wantName string
		wantErr  bool
	}{
		"syncd's own":      {app: config.App{Name: "a", Namespace: "ns"}, base: base, wantName: Syncd},
		"service account":  {app: config.App{Name: "a", Namespace: "ns", ServiceAccountName: "deployer"}, base: base, wantUser: "system:serviceaccount:ns:deployer", wantName: "system:serviceaccount:ns:deployer"},
		"no config to use": {app: config.App{Name: "a", Namespace: "ns", ServiceAccountName: "deployer"}, wantUser: "system:serviceaccount:ns:deployer", wantName: "system:serviceaccount:ns:deployer", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantUser, User(tc.app)); diff != "" {
				t.Errorf("User (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantName, Name(tc.app)); diff != "" {
				t.Errorf("Name (-want +got):\n%s", diff)
			}
			cfg, err := Config(tc.base, tc.app)
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
