// Package sopstest encrypts test fixtures the way `sops --encrypt` does,
// with the SOPS library's own encrypt path, for keys a test generates: no
// test commits ciphertext or keys. Only tests import it.
package sopstest

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/pgp"
	"github.com/getsops/sops/v3/stores/dotenv"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

// Identity is a fresh age identity: Recipient encrypts for it, KeysFile is
// what syncd's decryption.keysFile holds for it.
type Identity struct {
	Recipient string
	KeysFile  []byte
}

// NewIdentity generates an age identity.
func NewIdentity(t testing.TB) Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return Identity{
		Recipient: id.Recipient().String(),
		KeysFile:  []byte("# created: by the test\n# public key: " + id.Recipient().String() + "\n" + id.String() + "\n"),
	}
}

// PGPIdentity is a fresh OpenPGP key: Entity encrypts for it, KeysFile is
// its armored private key.
type PGPIdentity struct {
	Entity   *PGPEntity
	KeysFile []byte
}

// NewPGPIdentity generates an OpenPGP key without a passphrase.
func NewPGPIdentity(t testing.TB) PGPIdentity {
	t.Helper()
	e, err := openpgp.NewEntity("syncd test", "", "test@syncd.dev", nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := pgparmor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return PGPIdentity{Entity: e, KeysFile: b.Bytes()}
}

// Options say how to encrypt.
type Options struct {
	// Format is "yaml" (default), "json" or "dotenv".
	Format string
	// EncryptedRegex, when set, encrypts only the values of keys it
	// matches, like a .sops.yaml's encrypted_regex (Flux's docs use
	// ^(data|stringData)$).
	EncryptedRegex string
	// Age are the age recipients; PGP the OpenPGP keys.
	Age []string
	PGP []*PGPEntity
}

// Encrypt encrypts plain as `sops --encrypt` would for opts' recipients.
func Encrypt(t testing.TB, plain []byte, opts Options) []byte {
	t.Helper()
	out, err := encrypt(plain, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type store interface {
	LoadPlainFile(in []byte) (sops.TreeBranches, error)
	EmitEncryptedFile(in sops.Tree) ([]byte, error)
}

func storeFor(format string) store {
	switch format {
	case "json":
		return sopsjson.NewStore(&config.JSONStoreConfig{})
	case "dotenv":
		return dotenv.NewStore(&config.DotenvStoreConfig{})
	}
	return sopsyaml.NewStore(&config.YAMLStoreConfig{})
}

func encrypt(plain []byte, opts Options) ([]byte, error) {
	st := storeFor(opts.Format)
	branches, err := st.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	group, err := masterKeys(dataKey, opts)
	if err != nil {
		return nil, err
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:      []sops.KeyGroup{group},
		EncryptedRegex: opts.EncryptedRegex,
		Version:        "3.13.3",
		LastModified:   time.Now().UTC(),
	}}
	// What sops's cmd/sops/common.EncryptTree does.
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	return st.EmitEncryptedFile(tree)
}

// masterKeys wraps dataKey for every recipient: age keys with the SOPS
// library, OpenPGP keys with go-crypto (sops would ask gpg's keyring).
func masterKeys(dataKey []byte, opts Options) (sops.KeyGroup, error) {
	var group sops.KeyGroup
	for _, r := range opts.Age {
		mk, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, err
		}
		if err := mk.Encrypt(dataKey); err != nil {
			return nil, err
		}
		group = append(group, keys.MasterKey(mk))
	}
	for _, e := range opts.PGP {
		var b bytes.Buffer
		aw, err := pgparmor.Encode(&b, "PGP MESSAGE", nil)
		if err != nil {
			return nil, err
		}
		w, err := openpgp.Encrypt(aw, []*openpgp.Entity{e}, nil, nil, nil)
		if err != nil {
			return nil, err
		}
		w.Write(dataKey)
		w.Close()
		aw.Close()
		mk := pgp.NewMasterKeyFromFingerprint(fmt.Sprintf("%X", e.PrimaryKey.Fingerprint))
		mk.EncryptedKey = b.String()
		mk.CreationDate = time.Now().UTC()
		group = append(group, mk)
	}
	return group, nil
}

// PGPEntity is an OpenPGP key pair.
type PGPEntity = openpgp.Entity
