package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/crypto/ssh/knownhosts"
	"syncd.dev/syncd/internal/redact"
)

// Kind classifies why a poll failed, so the daemon can report it without
// parsing messages.
type Kind string

// Failure kinds. In every case the last good Revision stays in force and its
// tree directory is kept.
const (
	// KindUnreachable: the server could not be reached or hung up (DNS,
	// refused connection, timeout, reset, HTTP 5xx, truncated transfer).
	KindUnreachable Kind = "Unreachable"
	// KindAuth: the server rejected the credentials, or the credential
	// files named in git.auth could not be read.
	KindAuth Kind = "AuthFailed"
	// KindHostKey: the SSH server's host key is not in knownHostsFile or
	// does not match it.
	KindHostKey Kind = "HostKeyRejected"
	// KindRepositoryNotFound: the server says the repository does not exist
	// (or hides it from these credentials).
	KindRepositoryNotFound Kind = "RepositoryNotFound"
	// KindRefNotFound: the branch or tag does not exist (any more), no tag
	// matches the semver range, or the pinned commit is not in the
	// repository.
	KindRefNotFound Kind = "RefNotFound"
	// KindVerification: verify is on and the revision is unsigned, signed
	// by a key not in keysFile, or badly signed; a signed tag is served
	// under another name than it was signed for; a branch head does not
	// descend from the last verified head; or keysFile is unreadable.
	KindVerification Kind = "VerificationFailed"
	// KindCorruptCache: the cached repository could not be read. The poll
	// deletes it and clones again; this kind is reported in
	// Result.CacheRecovered when that worked.
	KindCorruptCache Kind = "CorruptCache"
	// KindCache: the cache directory could not be written (disk full,
	// permissions).
	KindCache Kind = "CacheWriteFailed"
	// KindFetch: a fetch failed for a reason that is neither a transport
	// failure nor a corrupt cache (for example a pack go-git cannot read).
	KindFetch Kind = "FetchFailed"
	// KindArtifactRefused: an OCI artifact is not one syncd extracts: not
	// an image manifest, not exactly one tar+gzip content layer, an entry
	// that would leave the directory (a ".." or absolute path, a symlink
	// out), a device or other special file, or a size or count limit
	// crossed. Nothing of it is written.
	KindArtifactRefused Kind = "ArtifactRefused"
	// KindCanceled: the context was canceled during the poll.
	KindCanceled Kind = "Canceled"
)

// Error is the error every failed Poll returns. Use errors.As to get it and
// read Kind. Its message never contains credentials.
type Error struct {
	// Source is the config name of the source.
	Source string
	// Kind says what went wrong.
	Kind Kind
	// URL is the repository URL without credentials.
	URL string
	// Ref is the configured ref, e.g. "branch main" or "semver >=1.2.0".
	Ref string
	// Op is the step that failed: "list refs", "fetch", "verify", ...
	Op string
	// Hint says what to do about it; may be empty.
	Hint string
	// Err is the underlying error (its message already scrubbed of
	// secrets).
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "source %q: %s %s (%s): %s", e.Source, e.Op, e.URL, e.Ref, e.Kind)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// PathError is returned by Revision.AppDir when an app's path does not
// exist at the revision or leaves the repository tree.
type PathError struct {
	// App is the app whose path was checked.
	App string
	// Path is the app's path as configured.
	Path string
	// Source and SHA name the revision it was checked against.
	Source string
	SHA    string
	// Reason says what is wrong and what to do.
	Reason string
	// Err is the underlying filesystem error, if any.
	Err error
}

// Error implements error.
func (e *PathError) Error() string {
	msg := fmt.Sprintf("app %q: path %q in source %q at %s: %s", e.App, e.Path, e.Source, shortSHA(e.SHA), e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error, if any.
func (e *PathError) Unwrap() error { return e.Err }

// scrubbed is an error whose message has had secrets removed; Unwrap still
// reaches the original error for errors.Is/As.
type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.err }

// urlPasswordRE matches the "scheme://user:password@" start of a URL.
var urlPasswordRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):[^/\s@]*@`)

// scrub returns err with every secret replaced by redact.Marker in its
// message, which is also folded onto one line. The password of any URL in
// the message is redacted too, whether or not it is one of secrets.
// Secrets shorter than 4 bytes are not scrubbed (they would mangle
// ordinary words) and are rejected when read.
func scrub(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	orig := err.Error()
	// Server-sent reasons end in newlines; keep messages on one line.
	msg := strings.TrimRight(strings.Join(strings.Fields(withoutHTMLPage(orig)), " "), ":")
	for _, s := range secrets {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, redact.Marker)
		}
	}
	msg = urlPasswordRE.ReplaceAllString(msg, "${1}:"+redact.Marker+"@")
	if msg == orig {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

// htmlPage matches the start of an HTML page a Git host answered with (a
// 404 or a login page), which go-git appends to its error as the reason.
var htmlPage = regexp.MustCompile(`(?is)<!doctype html|<html[\s>]`)

// htmlPageSaid stands for the page withoutHTMLPage cuts.
const htmlPageSaid = "(the server answered with an HTML page)"

// withoutHTMLPage cuts an HTML page out of msg: a host's whole 404 page
// would fill the App's status, its Events and every alert.
func withoutHTMLPage(msg string) string {
	loc := htmlPage.FindStringIndex(msg)
	if loc == nil {
		return msg
	}
	return strings.TrimRight(msg[:loc[0]], " \n:") + ": " + htmlPageSaid
}

// classify maps a transport error to a Kind; ok is false when the error
// does not look like a transport failure.
func classify(err error) (kind Kind, hint string, ok bool) {
	// go-git wraps transport failures in types without Unwrap.
	var unexpected *plumbing.UnexpectedError
	if errors.As(err, &unexpected) && unexpected.Err != nil {
		if k, h, ok := classify(unexpected.Err); ok {
			return k, h, ok
		}
	}
	var permanent *plumbing.PermanentError
	if errors.As(err, &permanent) && permanent.Err != nil {
		if k, h, ok := classify(permanent.Err); ok {
			return k, h, ok
		}
	}
	var keyErr *knownhosts.KeyError
	var revoked *knownhosts.RevokedError
	var httpErr *githttp.Err
	var netErr net.Error
	var urlErr *url.Error
	msg := err.Error()
	switch {
	case errors.Is(err, context.Canceled):
		return KindCanceled, "", true
	case errors.As(err, &keyErr), errors.As(err, &revoked),
		strings.Contains(msg, "knownhosts:"):
		return KindHostKey, "add the server's host key to git.auth.knownHostsFile (ssh-keyscan) after checking its fingerprint", true
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		strings.Contains(msg, "unable to authenticate"):
		return KindAuth, "check the credentials (git.auth's tokenFile / sshKeyFile in the syncd config, or the GitSource's secretRef) and their access to the repository", true
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return KindRepositoryNotFound, "check git.url and that the credentials can see the repository", true
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr), errors.As(err, &urlErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE), errors.As(err, &httpErr),
		strings.Contains(msg, "connection reset"), strings.Contains(msg, "broken pipe"),
		strings.Contains(msg, "unexpected EOF"):
		return KindUnreachable, previousInForce + "; the next poll retries", true
	}
	return "", "", false
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
