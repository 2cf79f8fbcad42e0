package decrypt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
)

// MaxKeysFileSize is the largest keys file LoadKeys reads, 1 MiB.
const MaxKeysFileSize = 1 << 20

// pgpBegin opens an armored OpenPGP private key block.
const pgpBegin = "-----BEGIN PGP PRIVATE KEY BLOCK-----"

// pgpEnd closes one.
const pgpEnd = "-----END PGP PRIVATE KEY BLOCK-----"

// Keys are the private keys of one app: age identities and OpenPGP
// private keys. A Keys is read-only once parsed and safe for concurrent
// use.
type Keys struct {
	age []age.Identity
	pgp openpgp.EntityList
	// raw is the keys file the keys were parsed from, for Bytes.
	raw []byte
}

// Bytes returns the keys file content the keys were parsed from:
// ParseKeys of it gives the same keys. It is how a render child process
// receives an app's keys (over a pipe, never in a file or the
// environment). The caller must not modify it.
func (k *Keys) Bytes() []byte { return k.raw }

// LoadKeys reads a keys file: age identities, one a line
// (AGE-SECRET-KEY-1…, as age-keygen writes them; lines starting with #
// are comments), and armored OpenPGP private key blocks (gpg
// --export-secret-keys --armor), in any mix. Errors name the file and
// never quote its content.
func LoadKeys(path string) (*Keys, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	if info.Size() > MaxKeysFileSize {
		return nil, fmt.Errorf("keys file %s: larger than %d KiB: it should hold only age identities and OpenPGP private keys", path, MaxKeysFileSize>>10)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	k, err := ParseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	return k, nil
}

// ParseKeys parses the content of a keys file (see LoadKeys). A file
// without any key is an error.
func ParseKeys(data []byte) (*Keys, error) {
	rest, blocks := splitPGP(string(data))
	k := &Keys{raw: data}
	for i, b := range blocks {
		ents, err := openpgp.ReadArmoredKeyRing(strings.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("OpenPGP key block %d: cannot be read (%s): export it with gpg --export-secret-keys --armor", i+1, errorKind(err))
		}
		for _, e := range ents {
			if e.PrivateKey == nil {
				return nil, fmt.Errorf("OpenPGP key block %d: holds a public key only: export the private key with gpg --export-secret-keys --armor", i+1)
			}
			if e.PrivateKey.Encrypted {
				return nil, fmt.Errorf("OpenPGP key block %d: the private key is protected by a passphrase, which syncd cannot type: export a key without one", i+1)
			}
		}
		k.pgp = append(k.pgp, ents...)
	}
	ids, err := parseAge(rest)
	if err != nil {
		return nil, err
	}
	k.age = ids
	if len(k.age) == 0 && len(k.pgp) == 0 {
		return nil, errors.New("holds no key: put age identities (AGE-SECRET-KEY-1…, from age-keygen) or armored OpenPGP private keys in it")
	}
	return k, nil
}

// splitPGP cuts the armored OpenPGP private key blocks out of s and
// returns what is left and the blocks.
func splitPGP(s string) (string, []string) {
	var rest strings.Builder
	var blocks []string
	for {
		i := strings.Index(s, pgpBegin)
		if i < 0 {
			rest.WriteString(s)
			return rest.String(), blocks
		}
		rest.WriteString(s[:i])
		j := strings.Index(s[i:], pgpEnd)
		if j < 0 {
			blocks = append(blocks, s[i:])
			return rest.String(), blocks
		}
		blocks = append(blocks, s[i:i+j+len(pgpEnd)])
		s = s[i+j+len(pgpEnd):]
	}
}

// parseAge reads age identities, one a line, skipping blank lines and #
// comments. A bad line is named by number, never quoted.
func parseAge(s string) ([]age.Identity, error) {
	var out []age.Identity
	for n, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "AGE-SECRET-KEY-1") {
			return nil, fmt.Errorf("line %d: not an age identity (AGE-SECRET-KEY-1…) nor part of an armored OpenPGP private key block: SSH keys and age plugin identities are not supported", n+1)
		}
		id, err := age.ParseX25519Identity(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: malformed age identity: copy it again from age-keygen's output", n+1)
		}
		out = append(out, id)
	}
	return out, nil
}

// errorKind is err's text when it is short and cannot hold key material
// (OpenPGP parse errors name the structure, not the bytes).
func errorKind(err error) string {
	msg := err.Error()
	if len(msg) > 120 || bytes.ContainsAny([]byte(msg), "\n") {
		return "malformed"
	}
	return msg
}
