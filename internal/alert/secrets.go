package alert

import (
	"context"
	"errors"
	"fmt"
)

// SecretSource supplies a sink's URL and HMAC key from somewhere other
// than files: the App controller reads an AlertProvider's Secret. The
// sink reads it again for every attempt, so a rotated value applies at
// once.
type SecretSource interface {
	// SinkSecrets returns the sink's values. Its errors name where
	// they are read (a Secret and key), never a value.
	SinkSecrets(ctx context.Context) (SinkSecrets, error)
}

// SinkSecrets are a sink's secret values and where each was read.
type SinkSecrets struct {
	// URL is the provider's webhook URL.
	URL []byte
	// URLFrom names where URL was read, in errors: "urlFile
	// /etc/syncd/slack-url", "Secret team-a/chat key address".
	URLFrom string
	// HMACKey signs the payloads of a webhook sink; nil for the others.
	HMACKey []byte
	// HMACKeyFrom names where HMACKey was read, in errors.
	HMACKeyFrom string
}

// fileSecrets reads a sink's values from the files of syncd.yaml's
// alerts[] (urlFile, hmacKeyFile).
type fileSecrets struct {
	urlFile, keyFile string
	readFile         func(name string) ([]byte, error)
}

var _ SecretSource = fileSecrets{}

// SinkSecrets reads the URL file and, when there is one, the key file.
func (f fileSecrets) SinkSecrets(context.Context) (SinkSecrets, error) {
	u, err := f.readFile(f.urlFile)
	if err != nil {
		return SinkSecrets{}, fmt.Errorf("read urlFile: %w", err)
	}
	sec := SinkSecrets{URL: u, URLFrom: "urlFile " + f.urlFile}
	if f.keyFile == "" {
		return sec, nil
	}
	if sec.HMACKey, err = f.readFile(f.keyFile); err != nil {
		return SinkSecrets{}, fmt.Errorf("read hmacKeyFile: %w", err)
	}
	sec.HMACKeyFrom = "hmacKeyFile " + f.keyFile
	return sec, nil
}

// sourceOf checks where a sink's values come from (files, or a
// SecretSource) and returns the source.
func sourceOf(a Sink, readFile func(string) ([]byte, error)) (SecretSource, error) {
	if a.Secrets != nil {
		if a.URLFile != "" || a.HMACKeyFile != "" {
			return nil, errors.New("urlFile and hmacKeyFile are set beside Secrets; a sink reads its values from one place")
		}
		return a.Secrets, nil
	}
	switch {
	case a.URLFile == "":
		return nil, errors.New("urlFile is empty; name a file holding the webhook URL")
	case a.Type == SinkWebhook && a.HMACKeyFile == "":
		return nil, errors.New("hmacKeyFile is empty; a webhook alert is signed, name a file holding the HMAC key")
	case a.Type != SinkWebhook && a.HMACKeyFile != "":
		return nil, fmt.Errorf("hmacKeyFile is only used by type webhook, not %s; remove it", a.Type)
	}
	return fileSecrets{urlFile: a.URLFile, keyFile: a.HMACKeyFile, readFile: readFile}, nil
}
