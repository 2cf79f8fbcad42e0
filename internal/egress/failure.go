package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Kinds of failure Failure names. Each is a fixed text: none holds
// anything the server sent.
const (
	FailureDNS           = "DNS lookup failed"
	FailureRefused       = "connection refused"
	FailureUnroutable    = "no route to the host"
	FailureTimeout       = "timed out"
	FailureClosed        = "connection closed by the server"
	FailureUnauthorized  = "unauthorized (HTTP 401): the credentials were refused"
	FailureForbidden     = "forbidden (HTTP 403)"
	FailureTLSAuthority  = "TLS: certificate signed by an unknown authority (check certificate-authority-data)"
	FailureTLSHostname   = "TLS: certificate not valid for the server's name"
	FailureTLSInvalid    = "TLS: certificate invalid or expired"
	FailureTLSPlainHTTP  = "TLS: the server answered in plain HTTP"
	FailureTLSNotTLS     = "TLS: the server does not speak TLS"
	FailureTLSHandshake  = "TLS handshake failed"
	FailureNotAPIAnswer  = "request failed (the server's answer is not shown)"
	failureHTTPStatusFmt = "HTTP %d"
)

// Failure names the kind of failure a request to a server met (DNS,
// refused, TLS, timeout, HTTP status N, unauthorized), in words that
// hold nothing the server sent: no body, no certificate names, no
// address beyond what the caller already shows. It is for messages
// about a server whose address someone other than the operator may
// choose, where the error itself could carry another server's answer
// back to them. nil is "".
func Failure(err error) string {
	if err == nil {
		return ""
	}
	for _, kind := range []func(error) string{httpFailure, dialFailure, tlsFailure, timeoutFailure} {
		if s := kind(err); s != "" {
			return s
		}
	}
	return FailureNotAPIAnswer
}

// httpFailure names an answer with an error status.
func httpFailure(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return ""
	}
	switch code := int(st.Status().Code); code {
	case 0:
		return ""
	case http.StatusUnauthorized:
		return FailureUnauthorized
	case http.StatusForbidden:
		return FailureForbidden
	default:
		return fmt.Sprintf(failureHTTPStatusFmt, code)
	}
}

// dialFailure names a connection that was never made or was cut.
func dialFailure(err error) string {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return FailureDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return FailureRefused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return FailureUnroutable
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return FailureClosed
	}
	return ""
}

// tlsFailure names a TLS handshake that failed.
func tlsFailure(err error) string {
	var (
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		header    tls.RecordHeaderError
		verify    *tls.CertificateVerificationError
		alert     tls.AlertError
	)
	switch {
	case errors.As(err, &authority):
		return FailureTLSAuthority
	case errors.As(err, &hostname):
		return FailureTLSHostname
	case errors.As(err, &invalid):
		return FailureTLSInvalid
	case errors.As(err, &header):
		return FailureTLSNotTLS
	case errors.As(err, &verify), errors.As(err, &alert):
		return FailureTLSHandshake
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// net/http's own words, an untyped error.
		return FailureTLSPlainHTTP
	}
	return ""
}

// timeoutFailure names a request that ran out of time.
func timeoutFailure(err error) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return FailureTimeout
	}
	return ""
}
