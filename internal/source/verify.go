package source

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"syncd.dev/syncd/internal/config"
)

// verify checks the OpenPGP signature required by git.verify and returns
// the signer's identity; it returns "" when verification is off.
func (s *Source) verify(repo *git.Repository, tgt target, commit *object.Commit) (string, error) {
	v := s.cfg.Git.Verify
	if v == nil {
		return "", nil
	}
	fail := func(err error) (string, error) {
		return "", s.newError(KindVerification, "verify", err,
			"the previous revision stays in force; sign the revision with a key listed in git.verify.keysFile")
	}
	keys, err := os.ReadFile(v.KeysFile)
	if err != nil {
		return "", s.newError(KindVerification, "verify", fmt.Errorf("read git.verify.keysFile %s: %w", v.KeysFile, err), "make the file readable by syncd")
	}
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(keys))
	if err == nil && len(ring) == 0 {
		err = errors.New("the armored block is empty")
	}
	if err != nil {
		return "", s.newError(KindVerification, "verify", fmt.Errorf("git.verify.keysFile %s holds no armored OpenPGP public keys: %w", v.KeysFile, err), "export the keys with gpg --armor --export")
	}
	var (
		entity *openpgp.Entity
		what   string
	)
	switch v.Mode {
	case config.VerifyTag:
		ref, err := repo.Reference(localRef(tgt.ref), true)
		if err != nil {
			return fail(fmt.Errorf("read tag %s: %w", tgt.tag, err))
		}
		tag, err := repo.TagObject(ref.Hash())
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return fail(fmt.Errorf("tag %s is a lightweight tag and cannot carry a signature", tgt.tag))
		}
		if err != nil {
			return fail(fmt.Errorf("read tag %s: %w", tgt.tag, err))
		}
		what = "tag " + tgt.tag
		if tag.PGPSignature == "" {
			return fail(fmt.Errorf("%s is not signed", what))
		}
		entity, err = tag.Verify(string(keys))
		if err != nil {
			return fail(fmt.Errorf("%s: bad signature or unknown key: %w", what, err))
		}
	default:
		what = "commit " + commit.Hash.String()
		if commit.PGPSignature == "" {
			return fail(fmt.Errorf("%s is not signed", what))
		}
		entity, err = commit.Verify(string(keys))
		if err != nil {
			return fail(fmt.Errorf("%s: bad signature or unknown key: %w", what, err))
		}
	}
	return signerName(entity), nil
}

func signerName(e *openpgp.Entity) string {
	if e == nil || e.PrimaryKey == nil {
		return ""
	}
	id := e.PrimaryKey.KeyIdString()
	if pi := e.PrimaryIdentity(); pi != nil {
		return fmt.Sprintf("%s (key %s)", pi.Name, id)
	}
	return "key " + id
}
