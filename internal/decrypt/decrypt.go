package decrypt

import (
	"bytes"
	"errors"
	"io"
	"path"
	"strings"
	"sync/atomic"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
)

// Format is a SOPS file format.
type Format string

// The formats Decrypt reads.
const (
	FormatYAML   Format = "yaml"
	FormatJSON   Format = "json"
	FormatDotenv Format = "dotenv"
)

// FormatOf returns the format of a file by its name's ending, as sops
// chooses it: .yaml and .yml, .json, .env; false for any other.
func FormatOf(name string) (Format, bool) {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		return FormatYAML, true
	case ".json":
		return FormatJSON, true
	case ".env":
		return FormatDotenv, true
	}
	return "", false
}

// markers are what a file SOPS encrypted holds in each format: its
// metadata's MAC, itself encrypted (the same test Flux applies).
var markers = map[Format][]byte{
	FormatYAML:   []byte("mac: ENC["),
	FormatJSON:   []byte(`"mac": "ENC[`),
	FormatDotenv: []byte("sops_mac=ENC["),
}

// IsEncrypted reports whether data, a file of format f, was encrypted by
// SOPS.
func IsEncrypted(data []byte, f Format) bool {
	m, ok := markers[f]
	return ok && bytes.Contains(data, m)
}

// Result is a decrypted file.
type Result struct {
	// Plain is the file in the same format with every value decrypted
	// and SOPS's metadata removed.
	Plain []byte
	// Values are the values that were encrypted, as text (numbers and
	// booleans formatted as in YAML), in file order, without duplicates
	// or empty strings, and without apiVersion, kind, metadata.name and
	// metadata.namespace (an object's name is printed wherever it is
	// named).
	Values []string
}

// FileDecrypter decrypts a SOPS file of format f with an app's keys.
type FileDecrypter func(k *Keys, data []byte, f Format) (Result, error)

// fileDecrypter is the FileDecrypter Register set (nil: none).
var fileDecrypter atomic.Pointer[FileDecrypter]

// errNotLinked is Decrypt in a binary that did not link package sopsfile.
var errNotLinked = errors.New("this binary cannot read SOPS files (package sopsfile is not linked in): renders, which decrypt, run in syncd-render")

// Register makes Decrypt use d. Package sopsfile registers itself when
// it is imported: the binaries that render (syncd-render, and test
// binaries that render in process) import it; syncd itself does not, so
// it does not link the SOPS library and its key services.
func Register(d FileDecrypter) { fileDecrypter.Store(&d) }

// Decrypt decrypts data, a SOPS file of format f, with k (see package
// sopsfile). Errors never quote a value.
func (k *Keys) Decrypt(data []byte, f Format) (Result, error) {
	d := fileDecrypter.Load()
	if d == nil {
		return Result{}, errNotLinked
	}
	return (*d)(k, data, f)
}

// AgeDataKey decrypts enc, a data key (or a Shamir part of one) a SOPS
// file holds encrypted for an age recipient, with the keys' age
// identities.
func (k *Keys) AgeDataKey(enc string) ([]byte, error) {
	if len(k.age) == 0 {
		return nil, errors.New("no age identity")
	}
	r, err := age.Decrypt(armor.NewReader(strings.NewReader(enc)), k.age...)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// PGPDataKey decrypts enc, a data key (or a Shamir part of one) a SOPS
// file holds encrypted for an OpenPGP key, with the keys' OpenPGP private
// keys.
func (k *Keys) PGPDataKey(enc string) ([]byte, error) {
	if len(k.pgp) == 0 {
		return nil, errors.New("no OpenPGP key")
	}
	block, err := pgparmor.Decode(strings.NewReader(enc))
	if err != nil {
		return nil, err
	}
	md, err := openpgp.ReadMessage(block.Body, k.pgp, nil, nil)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(md.UnverifiedBody)
}
