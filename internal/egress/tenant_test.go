package egress

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestCheckTenantURL: an address a tenant chose is https, or http on
// loopback; never with user info, never a link-local, metadata,
// multicast or unspecified address; the refusal never quotes the path.
func TestCheckTenantURL(t *testing.T) {
	tests := map[string]struct {
		url  string
		want string // "" = allowed; else a part of the error
	}{
		"https name":          {url: "https://hooks.slack.com/services/T/B/secret"},
		"http loopback":       {url: "http://127.0.0.1:8080/hook/secret"},
		"http localhost":      {url: "http://localhost/hook"},
		"http ipv6 loopback":  {url: "http://[::1]:9/hook"},
		"http off loopback":   {url: "http://hooks.example.com/hook/secret", want: "plain http off loopback"},
		"metadata v4":         {url: "https://169.254.169.254/latest/secret", want: "link-local"},
		"metadata v6":         {url: "https://[fd00:ec2::254]/latest/secret", want: "cloud metadata"},
		"link-local v6":       {url: "https://[fe80::1]/secret", want: "link-local"},
		"unspecified":         {url: "https://0.0.0.0/secret", want: "unspecified"},
		"mapped metadata":     {url: "https://[::ffff:169.254.169.254]/secret", want: "link-local"},
		"user info":           {url: "https://u:p@hooks.example.com/secret", want: "user info"},
		"other scheme":        {url: "ftp://hooks.example.com/secret", want: "not https"},
		"private https is ok": {url: "https://10.0.0.7/secret"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckTenantURL(u)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckTenantURL(%s) = %v, want nil", tc.url, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrTenantDestination)):
				t.Fatalf("CheckTenantURL(%s) = %v, want an ErrTenantDestination with %q", tc.url, err, tc.want)
			case err != nil && strings.Contains(err.Error(), "secret"):
				t.Fatalf("the refusal quotes the URL's path: %v", err)
			}
		})
	}
}

// TestTenantClientRefusesMetadataByName: a name that resolves to a
// link-local address is refused when dialled, and a redirect is not
// followed.
func TestTenantClientRefusesMetadataByName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := TenantClient()
	// The dial check runs on the resolved address: 169.254.169.254 as
	// a literal stands for any name resolving to it.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://169.254.169.254:80/x", nil)
	if _, err := c.Do(req); err == nil || !errors.Is(err, ErrTenantDestination) {
		t.Fatalf("request to a link-local address: err = %v, want ErrTenantDestination", err)
	}

	var followed bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed = true }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, redirect.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if followed || resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("redirect followed=%v, status %d; want the 307 returned unfollowed", followed, resp.StatusCode)
	}
}
