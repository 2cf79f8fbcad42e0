package source

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

func TestTransportErrorScrubsCredentials(t *testing.T) {
	const token = "ghp_s3cr3tT0ken"
	basic := base64.StdEncoding.EncodeToString([]byte("git:" + token))
	creds := credentials{secrets: []string{token, basic}}
	urlErr := &url.Error{Op: "Get", URL: "https://bob:" + token + "@git.example.com/org/repo.git/info/refs", Err: io.ErrUnexpectedEOF}

	tests := map[string]struct {
		err      error
		wantKind Kind
		// wantIs must still be reachable with errors.Is.
		wantIs error
		// wantURLErr: errors.As must still find the original *url.Error.
		wantURLErr bool
		// gone must not appear in the message.
		gone []string
		// want must appear in the message.
		want []string
	}{
		"server reason echoing the token over several lines": {
			err:      fmt.Errorf("%w: remote: token %s\nremote: has no access\n", transport.ErrAuthenticationRequired, token),
			wantKind: KindAuth, wantIs: transport.ErrAuthenticationRequired,
			gone: []string{token}, want: []string{"remote: token <redacted> remote: has no access"},
		},
		"URL with the token as password": {
			err:      fmt.Errorf("list refs: %w", urlErr),
			wantKind: KindUnreachable, wantIs: io.ErrUnexpectedEOF, wantURLErr: true,
			gone: []string{token}, want: []string{"https://bob:<redacted>@git.example.com/org/repo.git"},
		},
		"URL with a password syncd never had": {
			err:      fmt.Errorf("redirected to %q: %w", "https://eve:hunter22@mirror.example.com/repo.git", io.ErrUnexpectedEOF),
			wantKind: KindUnreachable, wantIs: io.ErrUnexpectedEOF,
			gone: []string{"hunter22"}, want: []string{"https://eve:<redacted>@mirror.example.com/repo.git"},
		},
		"a host's HTML 404 page as the reason": {
			err:      fmt.Errorf("%w: <!DOCTYPE HTML>\n<html lang=\"en\"><head><title>Page not found</title></head>\n<body><p>The page you requested does not exist.</p></body></html>\n", transport.ErrRepositoryNotFound),
			wantKind: KindRepositoryNotFound, wantIs: transport.ErrRepositoryNotFound,
			gone: []string{"<html", "DOCTYPE", "Page not found", "</body>"}, want: []string{"repository not found: (the server answered with an HTML page)", "check git.url"},
		},
		"echoed basic-auth header": {
			err:      fmt.Errorf("%w: got Authorization: Basic %s\n", transport.ErrAuthorizationFailed, basic),
			wantKind: KindAuth, wantIs: transport.ErrAuthorizationFailed,
			gone: []string{basic}, want: []string{"Basic <redacted>"},
		},
	}
	s := newSource(t, Spec{URL: "https://git.example.com/org/repo.git", Branch: "main"})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := s.transportError("fetch", tc.err, creds)
			msg := e.Error()
			if e.Kind != tc.wantKind {
				t.Errorf("kind = %s, want %s (%s)", e.Kind, tc.wantKind, msg)
			}
			for _, g := range tc.gone {
				if strings.Contains(msg, g) {
					t.Errorf("message %q contains %q", msg, g)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not contain %q", msg, w)
				}
			}
			if strings.ContainsAny(msg, "\r\n") {
				t.Errorf("message %q spans several lines", msg)
			}
			if !errors.Is(e, tc.wantIs) {
				t.Errorf("errors.Is(err, %v) = false: the scrubbed error no longer reaches the original", tc.wantIs)
			}
			if tc.wantURLErr {
				var got *url.Error
				if !errors.As(e, &got) || got != urlErr {
					t.Errorf("errors.As(*url.Error) = %v, want the original error", got)
				}
			}
		})
	}
}

func TestScrubLeavesCleanErrorsAlone(t *testing.T) {
	orig := errors.New("fetch: object not found")
	if got := scrub(orig, "s3cr3t"); got != orig {
		t.Errorf("scrub of a clean one-line error = %#v, want the error itself", got)
	}
	if got := scrub(errors.New("short abc"), "abc"); got.Error() != "short abc" {
		t.Errorf("a secret under 4 bytes was scrubbed: %q", got)
	}
	if scrub(nil, "s3cr3t") != nil {
		t.Error("scrub(nil) is not nil")
	}
}
