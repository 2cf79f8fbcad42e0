package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/util/cert"
)

// statusTLS returns the TLS configuration of --listen, or nil for plain
// HTTP. --secure-status serves HTTPS, so that the bearer tokens it asks
// for never cross the network in clear (controller-runtime's secure
// metrics serving does the same): with --tls-cert-file and
// --tls-private-key-file (re-read when they change, for cert-manager's
// rotations), else with a self-signed certificate made at start. The
// kubelet's HTTPS probes and a Prometheus with insecure_skip_verify accept
// that one; give a certificate to let clients verify syncd. checkHTTPFlags
// has checked that the two files come together.
func statusTLS(f *runFlags) (*tls.Config, error) {
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	switch {
	case f.tlsCertFile != "":
		kp := &keyPairFiles{certFile: f.tlsCertFile, keyFile: f.tlsKeyFile}
		if _, err := kp.certificate(nil); err != nil {
			return nil, err
		}
		base.GetCertificate = kp.certificate
		return base, nil
	case f.secureStatus:
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("syncd", nil, []string{"localhost"})
		if err != nil {
			return nil, fmt.Errorf("--secure-status: self-signed certificate: %w", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("--secure-status: self-signed certificate: %w", err)
		}
		base.Certificates = []tls.Certificate{pair}
		return base, nil
	}
	return nil, nil
}

// keyPairFiles serves the key pair in two files, loaded again when either
// file's modification time changes.
type keyPairFiles struct {
	certFile, keyFile string

	mu              sync.Mutex
	pair            *tls.Certificate
	certMod, keyMod time.Time
}

func (k *keyPairFiles) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certMod, err := modTime(k.certFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file: %w", err)
	}
	keyMod, err := modTime(k.keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-private-key-file: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pair != nil && certMod.Equal(k.certMod) && keyMod.Equal(k.keyMod) {
		return k.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		if k.pair != nil {
			// Half-written rotation: keep serving the previous pair.
			return k.pair, nil
		}
		return nil, fmt.Errorf("--tls-cert-file %s, --tls-private-key-file %s: %w", k.certFile, k.keyFile, err)
	}
	k.pair, k.certMod, k.keyMod = &pair, certMod, keyMod
	return k.pair, nil
}

func modTime(path string) (time.Time, error) {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}
